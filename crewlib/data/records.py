"""Typed records for the three tasks, and the validation every loader applies.

- :class:`RWGExample` — related-work generation: a target paper, its reference pool, and
  (for training and evaluation only) the gold related-work section and the ids it cites.
- :class:`MultiDocExample` — multi-document summarisation (Multi-News).
- :class:`LongDocument` — long-document summarisation (arXiv, PubMed).

Ids are strings everywhere (OARelatedWork's are integers; Multi-News has none), so that a
record from any source looks the same to the rest of the library.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field


class RecordError(ValueError):
    """A malformed record; the message names the record and the field."""

    def __init__(self, record_id: str, field_name: str, problem: str) -> None:
        super().__init__(f"record {record_id!r}: field {field_name!r} {problem}")
        self.record_id = record_id
        self.field = field_name
        self.problem = problem


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
        rid = self.target_id or "?"
        _require_text(rid, "target_id", self.target_id)
        _require_text(rid, "title", self.title)
        _require_text(rid, "abstract", self.abstract)
        if not self.references:
            raise RecordError(rid, "references", "is empty: the reference pool has no papers")
        seen: set[str] = set()
        for i, ref in enumerate(self.references):
            where = f"references[{i}]"
            _require_text(rid, f"{where}.id", ref.id)
            _require_text(rid, f"{where}.title", ref.title)
            _require_text(rid, f"{where}.abstract", ref.abstract)
            if ref.id in seen:
                raise RecordError(rid, f"{where}.id", f"repeats reference id {ref.id!r}")
            seen.add(ref.id)
        if require_gold:
            _require_text(rid, "gold_related_work", self.gold_related_work)
            if not self.gold_cited_ids:
                raise RecordError(rid, "gold_cited_ids", "is empty: the gold section cites nothing in the pool")
        unknown = [g for g in self.gold_cited_ids if g not in seen]
        if unknown:
            raise RecordError(rid, "gold_cited_ids", f"names ids not in the reference pool: {unknown[:5]}")
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


def _require_text(record_id: str, name: str, value: object) -> None:
    if not isinstance(value, str) or not value.strip():
        raise RecordError(record_id, name, "is missing or empty")


@dataclass
class LoadReport:
    """What a loader did: how many records it kept and, per reason, how many it skipped."""

    dataset: str
    loaded: int = 0
    skipped: Counter = field(default_factory=Counter)
    skipped_examples: list[str] = field(default_factory=list)  # the first few messages, verbatim
    notes: Counter = field(default_factory=Counter)  # non-fatal adjustments, counted (kept records)

    def skip(self, error: RecordError) -> None:
        self.skipped[f"{error.field}: {error.problem}"] += 1
        if len(self.skipped_examples) < 5:
            self.skipped_examples.append(str(error))

    @property
    def n_skipped(self) -> int:
        return sum(self.skipped.values())

    def __str__(self) -> str:
        text = f"{self.dataset}: loaded {self.loaded}, skipped {self.n_skipped}"
        if self.skipped:
            text += " (" + "; ".join(f"{n}x {why}" for why, n in self.skipped.most_common()) + ")"
        noted = [(why, n) for why, n in self.notes.most_common() if n]
        if noted:
            text += "; noted: " + "; ".join(f"{n}x {why}" for why, n in noted)
        return text
