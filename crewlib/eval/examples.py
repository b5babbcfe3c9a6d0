"""What the evaluation suite scores: a system's text for an example, and the example's context.

An :class:`EvalExample` holds what the reference-based metrics need — the target, the gold
section, the references with the keys a text may cite, and the gold cited ids (and, for the real sets of
:mod:`crewlib.eval.real_sets`, the target's introduction and how the gold's citation names resolve). A system's
output is one row of a table ``system, example, text`` with optional ``key_to_id`` (the
keys *that system* showed its LLM; CREW orders references by relevance, so keys differ
between systems) and optional cost columns.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from crewlib.citations import find_citation_keys, reference_keys
from crewlib.data.records import RWGExample, surname


@dataclass(frozen=True)
class EvalReference:
    ref_id: str
    title: str = ""
    abstract: str = ""
    surname: str = ""  # first author's, to find author–year citations of it in a gold section
    year: int | None = None

    @property
    def text(self) -> str:
        return f"{self.title}. {self.abstract}".strip(" .")


@dataclass(frozen=True)
class EvalExample:
    example_id: str
    target_title: str
    target_abstract: str
    gold: str
    references: tuple[EvalReference, ...]
    gold_cited_ids: tuple[str, ...]
    citation_style: str = "R"  # "R" for [R3] keys, "numeric" for [3]
    default_keys: Mapping[str, str] = field(default_factory=dict)  # key → ref id when a row brings none
    target_introduction: str = ""  # the target paper's introduction, where a set gives it (RWSG-PRV)
    # A citation name as crewlib.citations.citation_spans normalises it ("barzilay 2001", "burch 2006b") → ref id:
    # how the gold's citations resolve where the references carry no author or year (Hoang & Kan, whose names are
    # aligned to the works by crewlib.eval.real_sets), or where author and year alone leave a tie.
    citation_names: Mapping[str, str] = field(default_factory=dict)

    @property
    def target(self) -> str:
        return f"{self.target_title}\n{self.target_abstract}".strip()

    @property
    def reference_by_id(self) -> dict[str, EvalReference]:
        return {r.ref_id: r for r in self.references}

    @property
    def author_year(self) -> dict[str, tuple[str, int]]:
        """``ref_id → (first-author surname, year)`` for the references that have both."""
        return {r.ref_id: (r.surname, r.year) for r in self.references if r.surname and r.year}

    @property
    def has_reference_texts(self) -> bool:
        return any(r.abstract or r.title for r in self.references)

    @classmethod
    def from_rwg(cls, example: RWGExample) -> EvalExample:
        """An OARelatedWork-style example; default keys R1..Rn in the example's reference order."""
        refs = tuple(EvalReference(r.id, r.title, r.abstract, surname(r.authors[0]) if r.authors else "", r.year)
                     for r in example.references)
        keys = dict(zip(reference_keys(len(refs)), (r.ref_id for r in refs), strict=True))
        return cls(example.target_id, example.title, example.abstract, example.gold_related_work, refs,
                   tuple(example.gold_cited_ids), "R", keys)

    @classmethod
    def from_numbered(cls, example_id: str, gold: str, ref_numbers: Sequence[int | str], *, title: str = "",
                      abstract: str = "") -> EvalExample:
        """A section whose citations are numbers ``[3]`` (e.g. STRoGeNS outputs); references have no texts."""
        if isinstance(ref_numbers, str):
            raise TypeError(f"{example_id}: ref_numbers must be a list of numbers, not the string {ref_numbers[:30]!r}")
        refs = tuple(EvalReference(str(n)) for n in ref_numbers)
        known = {r.ref_id for r in refs}
        gold_ids = tuple(dict.fromkeys(k for k in find_citation_keys(gold, "numeric") if k in known))
        keys = {r.ref_id: r.ref_id for r in refs}
        return cls(str(example_id), title, abstract, gold, refs, gold_ids, "numeric", keys)


