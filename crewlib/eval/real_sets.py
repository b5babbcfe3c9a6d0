"""Three public sets of human-written related-work sections, read as evaluation examples from files the user names.

The project ships none of them; each reader takes the set's JSON-lines file (one paper a line):

- **Hoang & Kan** (RWSData, :func:`read_hoang_kan`): ``id, related_work`` (lowercased, citations such as
  "(barzilay and mckeown 2001)", "(callison burch et al. 2006b);(papineni et al., 2002)"), ``cited[{idx, title,
  abstract, text}]``. No target title or abstract; the cited works carry no authors or years, so the gold's citation
  names are aligned to the works (:func:`align_citation_names`) and the example's ``citation_names`` say which is which;
- **RWSG-PRV** (:func:`read_rwsgprv`): ``id, title, abstract, introduction, related_work`` (author–year citations as
  the authors wrote them), ``cited[{title, authors[], year, abstract}]`` (an abstract may be empty);
- **STRoGeNS** (:func:`read_strogens`): ``id, gold_related_work`` (numbered citations "[3]"), ``ref_numbers`` (a list,
  or a JSON string of one), ``system_outputs{name: text}``: no text of the works or the paper.

Each reference gets an id (``"<paper id>:<idx>"`` for Hoang & Kan, ``"<paper id>:<n>"`` with n its 1-based place in
``cited`` for RWSG-PRV, the number for STRoGeNS), its title and abstract, and its first author's surname and year
where the set gives them; the default keys are R1..Rn in the set's reference order (numbers for STRoGeNS); the gold
cited ids are the references the gold cites that resolve (:func:`crewlib.eval.gold_keys.gold_cited_ids`). A record
that is not what its set holds (a field missing or of the wrong type, a line that is not JSON, an id repeated) is a
ValueError naming the file, the line and the field.
"""

from __future__ import annotations

import json
import logging
import re
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path

from crewlib.citations import reference_keys
from crewlib.eval.examples import EvalExample, EvalReference
from crewlib.eval.gold_keys import (
    MAX_TIE,
    UNREADABLE,
    assign,
    author_surname,
    citation_contexts,
    citation_pieces,
    comparable_texts,
    gold_cited_ids,
    name_contexts,
    split_name,
)

log = logging.getLogger(__name__)


# ------------------------------------------------------------------------------------------------- reading records
def _records(path: str | Path) -> Iterator[tuple[str, dict]]:
    """(where, record) per non-blank line: ``where`` names the file and line for errors."""
    seen: dict[str, int] = {}
    with open(path, encoding="utf-8") as handle:
        for number, line in enumerate(handle, 1):
            if not line.strip():
                continue
            where = f"{path}, line {number}"
            try:
                record = json.loads(line)
            except json.JSONDecodeError as exc:
                raise ValueError(f"{where}: not a JSON record ({exc.msg})") from None
            if not isinstance(record, dict):
                raise ValueError(f"{where}: a record must be a JSON object, not {type(record).__name__}")
            paper = _paper_id(record, where)
            if paper in seen:
                raise ValueError(f"{where}: field 'id' repeats {paper!r}, the id of line {seen[paper]}")
            seen[paper] = number
            yield where, record


def _field(record: Mapping, name: str, kinds: type | tuple[type, ...], where: str, label: str | None = None):
    """``record[name]``, which must be of ``kinds`` (a bool is no number); ``label``: the field's name in errors."""
    label = label or name
    if name not in record:
        raise ValueError(f"{where}: field {label!r} is missing")
    value = record[name]
    if not isinstance(value, kinds) or (isinstance(value, bool) and bool not in _tuple(kinds)):
        wanted = " or ".join(_kind(k) for k in _tuple(kinds))
        raise ValueError(f"{where}: field {label!r} must be {wanted}, not {_kind(type(value))}")
    return value


_KIND_NAMES = {str: "text", int: "a whole number", list: "a list", dict: "an object", type(None): "null",
               float: "a number", bool: "true or false"}


def _kind(kind: type) -> str:
    return _KIND_NAMES.get(kind, kind.__name__)


def _tuple(kinds: type | tuple[type, ...]) -> tuple[type, ...]:
    return kinds if isinstance(kinds, tuple) else (kinds,)


def _text(record: Mapping, name: str, where: str, label: str | None = None, *, required: bool = True) -> str:
    """A text field; one that may be missing or null (``required=False``) reads as ""."""
    if not required and record.get(name) is None:
        return ""
    return _field(record, name, str, where, label)


def _paper_id(record: Mapping, where: str) -> str:
    return str(_field(record, "id", (str, int), where))


def _items(record: Mapping, name: str, where: str) -> list[tuple[str, dict]]:
    """A list field of objects, as (label, object) with labels such as ``cited[2]``."""
    items = _field(record, name, list, where)
    for i, item in enumerate(items):
        if not isinstance(item, dict):
            raise ValueError(f"{where}: field '{name}[{i}]' must be an object, not {type(item).__name__}")
    return [(f"{name}[{i}]", item) for i, item in enumerate(items)]


def _example(paper: str, gold: str, refs: Sequence[EvalReference], **extra) -> EvalExample:
    """An example with default keys R1..Rn in the references' order and the gold cited ids that resolve."""
    keys = dict(zip(reference_keys(len(refs)), (r.ref_id for r in refs), strict=True))
    example = EvalExample(paper, extra.pop("title", ""), extra.pop("abstract", ""), gold, tuple(refs), (), "R", keys,
                          **extra)
    return replace(example, gold_cited_ids=gold_cited_ids(example))


# ------------------------------------------------------------------------------------------------------ Hoang & Kan
@dataclass(frozen=True)
class Alignment:
    """How a gold's citation names were aligned to the cited works (:func:`align_citation_names`)."""

    names: dict[str, str] = field(default_factory=dict)  # citation name → ref id; empty when not aligned
    distinct: int = 0  # distinct citation names in the gold
    works: int = 0  # cited works
    tie_groups: int = 0  # groups of names sharing their first author's first word (two names or more)
    tie_names: int = 0  # names in those groups
    reordered: int = 0  # groups where the text around the citations put the names out of year order
    undecided: int = 0  # groups where it could not tell (equally good orders): year order kept
    reason: str = ""  # why nothing was aligned

    @property
    def aligned(self) -> bool:
        return bool(self.names)


def align_citation_names(gold: str, references: Sequence[EvalReference]) -> Alignment:
    """Which cited work each citation name of ``gold`` is, for works that carry no author or year (RWSData).

    RWSData lists a paper's cited works in its reference-list order — alphabetical by the first author's name as
    written ("callison burch" under c) — and the gold names exactly those works. So when the gold's distinct names are
    as many as the works, they are sorted by the first word of the first author's name as written in the citation,
    then year (and its letter), and matched to the works in order. Within one first word the reference list does not
    follow the years (Barzilay 2003 may precede Barzilay 2001), so names sharing it take their run of places by what
    the text says where it cites each (:func:`crewlib.eval.gold_keys.assign`); when that cannot tell, year order.
    When the counts differ nothing is aligned (the names stay unresolved) and ``reason`` says so."""
    pieces = [p for p in citation_pieces(gold) if p.kind != "key"]
    first_word: dict[str, str] = {}
    where: dict[str, list[int]] = {}
    for i, piece in enumerate(pieces):
        for work, first in zip(piece.works, piece.first_words, strict=True):
            if work != UNREADABLE and split_name(work):
                first_word.setdefault(work, (first or work.rpartition(" ")[0]).lower())
                where.setdefault(work, []).append(i)
    distinct, works = len(first_word), len(references)
    if distinct != works:
        return Alignment(distinct=distinct, works=works,
                         reason=f"the gold names {distinct} works and {works} are cited")
    order = sorted(first_word, key=lambda n: (first_word[n], *split_name(n)[1:]))
    contexts = citation_contexts(gold, pieces)
    names: dict[str, str] = {}
    groups = reordered = undecided = in_ties = 0
    start = 0
    while start < len(order):
        end = start
        while end < len(order) and first_word[order[end]] == first_word[order[start]]:
            end += 1
        run, slots = order[start:end], references[start:end]
        choice: tuple[int, ...] = tuple(range(len(run)))
        if 1 < len(run) <= MAX_TIE:
            groups, in_ties = groups + 1, in_ties + len(run)
            choice, only = assign(run, name_contexts(run, where, contexts), comparable_texts(slots))
            reordered += choice != tuple(range(len(run)))
            undecided += not only
        names.update((n, slots[j].ref_id) for n, j in zip(run, choice, strict=True))
        start = end
    return Alignment(names, distinct, works, groups, in_ties, reordered, undecided)


def read_hoang_kan(path: str | Path) -> list[EvalExample]:
    """The papers of a Hoang & Kan RWSData file (module docstring), their citation names aligned to their works."""
    examples = []
    for where, record in _records(path):
        paper = _paper_id(record, where)
        gold = _text(record, "related_work", where)
        refs = []
        for i, (label, cited) in enumerate(_items(record, "cited", where)):
            idx = _field(cited, "idx", int, where, f"{label}.idx") if "idx" in cited else i
            refs.append(EvalReference(f"{paper}:{idx}", _text(cited, "title", where, f"{label}.title"),
                                      _text(cited, "abstract", where, f"{label}.abstract", required=False)))
        if len({r.ref_id for r in refs}) < len(refs):
            raise ValueError(f"{where}: field 'cited' repeats an idx")
        alignment = align_citation_names(gold, refs)
        if not alignment.aligned and alignment.distinct:
            log.warning("%s (paper %s): citation names not aligned to the cited works: %s; they stay unresolved",
                        where, paper, alignment.reason)
        examples.append(_example(paper, gold, refs, citation_names=alignment.names))
    return examples


# -------------------------------------------------------------------------------------------------------- RWSG-PRV
def _year(cited: Mapping, where: str, label: str) -> int | None:
    """A cited work's year: a number, or text holding a four-digit year; null (unknown) → None."""
    value = _field(cited, "year", (int, str, type(None)), where, f"{label}.year")
    if value is None:
        return None
    found = re.search(r"\b(1[89]\d{2}|20\d{2})\b", str(value))
    return int(found.group(1)) if found else None


def read_rwsgprv(path: str | Path) -> list[EvalExample]:
    """The papers of an RWSG-PRV file (module docstring), with their title, abstract and introduction; a cited
    work's first author gives its surname (as written: "Müller"), so the gold's author–year citations resolve."""
    examples = []
    for where, record in _records(path):
        paper = _paper_id(record, where)
        texts = {name: _text(record, name, where) for name in ("title", "abstract", "introduction", "related_work")}
        refs = []
        for n, (label, cited) in enumerate(_items(record, "cited", where), 1):
            authors = _field(cited, "authors", list, where, f"{label}.authors")
            if not all(isinstance(a, str) for a in authors):
                raise ValueError(f"{where}: field '{label}.authors' must be a list of names (text)")
            refs.append(EvalReference(f"{paper}:{n}", _text(cited, "title", where, f"{label}.title"),
                                      _text(cited, "abstract", where, f"{label}.abstract", required=False),
                                      author_surname(authors[0]) if authors else "", _year(cited, where, label)))
        examples.append(_example(paper, texts["related_work"], refs, title=texts["title"], abstract=texts["abstract"],
                                 target_introduction=texts["introduction"]))
    return examples


# -------------------------------------------------------------------------------------------------------- STRoGeNS
def _ref_numbers(record: Mapping, where: str) -> list[int | str]:
    """``ref_numbers``: a list of numbers (or of digit strings), or a JSON string holding one."""
    numbers = _field(record, "ref_numbers", (list, str), where)
    if isinstance(numbers, str):
        try:
            numbers = json.loads(numbers)
        except json.JSONDecodeError:
            raise ValueError(f"{where}: field 'ref_numbers' holds text that is not a JSON list") from None
    if not isinstance(numbers, list) or not all(
            (isinstance(n, int) and not isinstance(n, bool)) or (isinstance(n, str) and n.strip().isdigit())
            for n in numbers):
        raise ValueError(f"{where}: field 'ref_numbers' must be a list of numbers")
    return [n.strip() if isinstance(n, str) else n for n in numbers]


def read_strogens(path: str | Path) -> tuple[list[EvalExample], dict[str, dict[str, str]]]:
    """The papers of a STRoGeNS outputs file (module docstring) and their systems' sections: system name → paper id
    → text, an empty (or null) output left out."""
    examples, outputs = [], {}
    for where, record in _records(path):
        paper = _paper_id(record, where)
        gold = _text(record, "gold_related_work", where)
        examples.append(EvalExample.from_numbered(paper, gold, _ref_numbers(record, where)))
        systems = _field(record, "system_outputs", dict, where)
        for system, text in systems.items():
            if text is not None and not isinstance(text, str):
                raise ValueError(f"{where}: field 'system_outputs.{system}' must be text, not {type(text).__name__}")
            outputs.setdefault(system, {})
            if text and text.strip():
                outputs[system][paper] = text
    return examples, {system: texts for system, texts in outputs.items() if texts}
