"""Typed records for the three tasks, and the validation every loader applies.

- :class:`RWGExample` — related-work generation: a target paper, its reference pool, and
  (for training and evaluation only) the gold related-work section and the ids it cites.
- :class:`MultiDocExample` — multi-document summarisation (Multi-News).
- :class:`LongDocument` — long-document summarisation (arXiv, PubMed).

Ids are strings everywhere (OARelatedWork's are integers; Multi-News has none), so that a
record from any source looks the same to the rest of the library.
"""

from __future__ import annotations

import re
from collections import Counter
from dataclasses import dataclass, field

from crewlib import CrewError


class RecordError(CrewError, ValueError):
    """A malformed record; the message names the record and the field (and every other bad field:
    ``problems`` holds each (field, problem), so that a load report counts them all)."""

    def __init__(self, record_id: str, field_name: str, problem: str,
                 more: list[tuple[str, str]] | None = None) -> None:
        message = f"record {record_id!r}: field {field_name!r} {problem}"
        if more:
            message += "; also " + "; ".join(f"field {f!r} {p}" for f, p in more)
        super().__init__(message)
        self.record_id = record_id
        self.field = field_name
        self.problem = problem
        self.problems = [(field_name, problem), *(more or [])]

    @classmethod
    def collect(cls, record_id: str, problems: list[tuple[str, str]]) -> None:
        """Raise one error for every (field, problem) found, if any."""
        if problems:
            raise cls(record_id, *problems[0], more=problems[1:])


@dataclass(frozen=True)
class Reference:
    """A candidate reference: a paper of the pool."""

    id: str
    title: str
    abstract: str
    year: int | None = None
    authors: tuple[str, ...] = ()
    sections: tuple[tuple[str, str], ...] = ()  # optional full text: (heading, text)
    citations: tuple[str, ...] = ()  # ids this paper cites (its own outgoing edges)

    @property
    def text(self) -> str:
        return f"{self.title}. {self.abstract}"


MATH_SPAN = re.compile(r"(\$[^$]+\$)")  # inline LaTeX math, kept as written; a split keeps it as odd items


def clean_field(value: object) -> str:
    """A text field of a user's file: BibTeX braces removed outside LaTeX math (``$\\mathcal{O}(n)$`` is kept as
    written), whitespace collapsed ("" for None)."""
    if value is None:
        return ""
    parts = MATH_SPAN.split(str(value))  # odd items are math
    return " ".join("".join(p if i % 2 else p.replace("{", "").replace("}", "") for i, p in enumerate(parts)).split())


def surname(author: str) -> str:
    """The name a citation shows: "Smith, J." and "John Smith" → "Smith"; a corporate author, stored as "Last, First"
    with no first name ("World Health Organization,"), whole."""
    name = author.split(",")[0] if "," in author else (author.split() or [""])[-1]
    return name.strip()


def reference_from_fields(key: str, title: str, abstract: object = "", authors: object = None,
                          year: object = None) -> tuple[Reference, bool]:
    """A reference from the simple fields (``crew write``'s files, the simple local layout) and whether it
    has no abstract: then it is known by its title (:func:`crewlib.tasks.title_only`). ``authors``: a list,
    or a string joined by " and " or ";"; ``year``: the first four-digit year in it."""
    abstract = clean_field(abstract)
    parts = authors if isinstance(authors, list | tuple) else re.split(r"\s+and\s+|;", str(authors or ""))
    found = re.search(r"\b(1[89]\d{2}|20\d{2})\b", str(year or ""))
    reference = Reference(id=key, title=title, abstract=abstract or title, year=int(found.group(1)) if found else None,
                          authors=tuple(a for a in (clean_field(p) for p in parts) if a))
    return reference, not abstract


def with_introduction(abstract: str, introduction: str = "", words: int = 300) -> str:
    """A target's text as every system reads it: the abstract, then the introduction's first ``words`` words."""
    text = " ".join(abstract.split())
    if introduction.strip():
        intro = introduction.split()
        text += "\n\nFrom the introduction: " + " ".join(intro[:words]) + (" …" if len(intro) > words else "")
    return text


@dataclass(frozen=True)
class RWGExample:
    """One related-work generation example. ``gold_*`` must never reach a generator."""

    target_id: str
    title: str
    abstract: str
    references: tuple[Reference, ...]
    gold_related_work: str = ""
    gold_cited_ids: tuple[str, ...] = ()
    year: int | None = None
    source: str = ""

    def validate(self, require_gold: bool = True) -> RWGExample:
        """This example, or a :class:`RecordError` naming every bad field (not only the first)."""
        rid = self.target_id or "?"
        problems = [p for name, value in (("target_id", self.target_id), ("title", self.title),
                                          ("abstract", self.abstract)) if (p := _text_problem(name, value))]
        if not self.references:
            problems.append(("references", "is empty: the reference pool has no papers"))
        seen: set[str] = set()
        for i, ref in enumerate(self.references):
            where = f"references[{i}]"
            problems += [p for name, value in ((f"{where}.id", ref.id), (f"{where}.title", ref.title),
                                               (f"{where}.abstract", ref.abstract))
                         if (p := _text_problem(name, value))]
            if ref.id in seen:
                problems.append((f"{where}.id", f"repeats reference id {ref.id!r}"))
            seen.add(ref.id)
        if require_gold:
            if problem := _text_problem("gold_related_work", self.gold_related_work):
                problems.append(problem)
            if not self.gold_cited_ids:
                problems.append(("gold_cited_ids", "is empty: the gold section cites nothing in the pool"))
        unknown = [g for g in self.gold_cited_ids if g not in seen]
        if unknown:
            problems.append(("gold_cited_ids", f"names ids not in the reference pool: {unknown[:5]}"))
        RecordError.collect(rid, problems)
        return self


@dataclass(frozen=True)
class MultiDocExample:
    id: str
    documents: tuple[str, ...]
    summary: str
    source: str = ""

    def validate(self) -> MultiDocExample:
        if len(self.documents) < 1 or not all(d.strip() for d in self.documents):
            raise RecordError(self.id, "documents", "must hold at least one non-empty document")
        _require_text(self.id, "summary", self.summary)
        return self

    def to_rwg_example(self, title_words: int = 25) -> RWGExample:
        """The cluster as the CREW environment's input (docs/method.md, "Multi-News").

        Each article is a reference (its opening sentence, cut to ``title_words`` words, as its
        title; its text as its abstract) citing every other article: a fully connected graph, so
        every article is equally central. The target is the event: titled by the first article's
        opening sentence, described by a fixed brief that holds no article's words (so that a
        summary sentence is never taken for a restatement of the target). The summary is the gold,
        citing every article.
        """
        from crewlib.text import sentences

        ids = tuple(f"{self.id}-a{i + 1}" for i in range(len(self.documents)))

        def lead(text: str) -> str:
            words = (sentences(text) or [text])[0].split()
            return " ".join(words[:title_words]) + (" …" if len(words) > title_words else "")

        references = tuple(Reference(ref_id, lead(doc), doc.strip(), citations=tuple(i for i in ids if i != ref_id))
                           for ref_id, doc in zip(ids, self.documents, strict=True))
        brief = (f"A news event reported by {len(ids)} articles. The summary tells a general reader what happened, "
                 "where and when, who was involved and what followed, and says where the articles disagree.")
        return RWGExample(self.id, lead(self.documents[0]), brief, references, gold_related_work=self.summary,
                          gold_cited_ids=ids, source=self.source or "multinews").validate()


@dataclass(frozen=True)
class Section:
    name: str
    text: str


@dataclass(frozen=True)
class LongDocument:
    id: str
    article: str
    abstract: str
    sections: tuple[Section, ...] = ()
    title: str = ""
    source: str = ""

    def validate(self) -> LongDocument:
        _require_text(self.id, "article", self.article)
        _require_text(self.id, "abstract", self.abstract)
        return self


def _text_problem(name: str, value: object) -> tuple[str, str] | None:
    return None if isinstance(value, str) and value.strip() else (name, "is missing or empty")


def _require_text(record_id: str, name: str, value: object) -> None:
    RecordError.collect(record_id, [p for p in [_text_problem(name, value)] if p])


@dataclass
class LoadReport:
    """What a loader did: how many records it kept and, per reason, how many it skipped."""

    dataset: str
    loaded: int = 0
    skipped: Counter = field(default_factory=Counter)  # bad fields of the skipped records, by reason: every one
    skipped_examples: list[str] = field(default_factory=list)  # the first few messages, verbatim
    notes: Counter = field(default_factory=Counter)  # non-fatal adjustments, counted (kept records)
    n_skipped: int = 0  # records skipped

    def skip(self, error: RecordError) -> None:
        self.n_skipped += 1
        for field_name, problem in error.problems:
            self.skipped[f"{_generic(field_name)}: {problem}"] += 1
        if len(self.skipped_examples) < 5:
            self.skipped_examples.append(str(error))

    def __str__(self) -> str:
        text = f"{self.dataset}: loaded {self.loaded}, skipped {self.n_skipped}"
        if self.skipped:
            text += " (bad fields: " + "; ".join(f"{n}x {why}" for why, n in self.skipped.most_common()) + ")"
        noted = [(why, n) for why, n in self.notes.most_common() if n]
        if noted:
            text += "; noted: " + "; ".join(f"{n}x {why}" for why, n in noted)
        return text


def _generic(field_name: str) -> str:
    """``references[7].title`` → ``references[].title``: one reason, counted over the references."""
    import re

    return re.sub(r"\[\d+\]", "[]", field_name)
