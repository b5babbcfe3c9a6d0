"""The one interface every system implements: ``generate(example) -> Generation``.

A system is built from params and an :class:`~crewlib.llm.LLMClient` (so tokens, cache and
faults count the same for all); it sees the target's title and abstract and its reference pool
— never the gold section. References are keyed ``R1..Rn`` in the pool's relevance order
(:class:`~crewlib.env.task.Task`), the same keys for every system, so their citations compare.
"""

from __future__ import annotations

import dataclasses
import math
import time
from collections import Counter
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import ClassVar

from crewlib.citations import CitationCheck, check_citations
from crewlib.data.records import RWGExample
from crewlib.env.task import Task
from crewlib.llm import Caller, CallRecord, Ledger, LLMClient


class SystemUnavailableError(RuntimeError):
    """The system cannot run here (e.g. PRIMERA's weights are not available offline)."""


@dataclass
class Generation:
    system: str
    example_id: str
    text: str  # Markdown, citations as [R3] keys
    key_to_id: dict[str, str]
    records: list[CallRecord] = field(default_factory=list)  # the ledger slice of this generation
    wall_s: float = 0.0
    fallbacks: Counter = field(default_factory=Counter)  # counted fallbacks, by reason
    notes: dict = field(default_factory=dict)  # system-specific facts (truncation, rounds, ...)

    @property
    def citation_check(self) -> CitationCheck:
        return check_citations(self.text, self.key_to_id)

    @property
    def cited_ids(self) -> tuple[str, ...]:
        return self.citation_check.cited_ids

    @property
    def cost(self) -> dict[str, float]:
        totals = Ledger().totals(self.records)
        return {"prompt_tokens": totals["prompt_tokens"], "completion_tokens": totals["completion_tokens"],
                "calls": totals["calls"], "wall_s": self.wall_s}

    def to_row(self) -> dict:
        """One row of the evaluation suite's output table (``crewlib.eval``)."""
        return {"system": self.system, "example": self.example_id, "text": self.text,
                "key_to_id": dict(self.key_to_id), **self.cost, "fallbacks": sum(self.fallbacks.values())}

    def to_dict(self) -> dict:
        out = {k: v for k, v in dataclasses.asdict(self).items() if k != "records"}
        out["records"] = [dataclasses.asdict(r) for r in self.records]
        out["fallbacks"] = dict(self.fallbacks)
        return out


def approx_tokens(text: str) -> int:
    """A tokenizer-free estimate (≈ 4 characters per token for English), used for context budgets."""
    return math.ceil(len(text) / 4)


class System:
    """Base class: subclasses set ``name`` and implement :meth:`_generate`."""

    name: ClassVar[str] = "system"
    uses_llm: ClassVar[bool] = True

    def __init__(self, params: Mapping, client: LLMClient | None = None) -> None:
        self.params = dict(params)
        if self.uses_llm and client is None:
            raise ValueError(f"{self.name} needs an LLM client (crewlib.llm.connect(params))")
        self.client = client
        self.settings = dict((self.params.get("baselines") or {}).get(self.name) or {})
        self.env_params = self.params.get("env") or {}

    def caller(self, role: str, agent: int | None = None) -> Caller:
        return Caller(self.name, role, agent)

    def task(self, example: RWGExample) -> Task:
        """The target and its pool in relevance order: the keys every system cites by."""
        return Task.from_example(example, relevance=self.env_params.get("relevance", "tfidf"),
                                 target_words=self.env_params.get("target_words", 250))

    def generate(self, example: RWGExample) -> Generation:
        """Write the related-work section of ``example``; the LLM calls made are on the result."""
        mark = self.client.ledger.mark() if self.client else 0
        t0 = time.perf_counter()
        generation = self._generate(example)
        generation.wall_s = time.perf_counter() - t0
        if self.client:
            generation.records = self.client.ledger.since(mark)
        return generation

    def _generate(self, example: RWGExample) -> Generation:
        raise NotImplementedError


def reference_block(task: Task, *, abstract_chars: int = 600, keys: list[str] | None = None) -> str:
    """``[R1] Title: abstract`` lines for the references (all, or the ``keys`` given, in that order)."""
    lines = []
    for key in keys or task.keys:
        ref = task.reference_by_key[key]
        abstract = ref.abstract if len(ref.abstract) <= abstract_chars else ref.abstract[:abstract_chars] + " ..."
        lines.append(f"[{key}] {ref.title}: {abstract}")
    return "\n".join(lines)
