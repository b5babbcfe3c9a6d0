"""The one interface every system implements: ``generate(example) -> Generation``.

A system is built from params and an :class:`~crewlib.llm.LLMClient` (so tokens, cache and
faults count the same for all); it sees the target's title and abstract and its reference pool
— never the gold section. References are keyed ``R1..Rn`` in the pool's relevance order
(:class:`~crewlib.tasks.Task`, built by :func:`~crewlib.tasks.build_tasks`: citation graph, pool
filter, centrality), the same keys for every system, so their citations compare.
"""

from __future__ import annotations

import dataclasses
import time
from collections import Counter
from dataclasses import dataclass, field
from typing import ClassVar

from crewlib import CrewError, prompts
from crewlib.citations import CitationCheck, check_citations
from crewlib.data.records import RWGExample
from crewlib.llm import Caller, CallRecord, Ledger, LLMClient, connect_override
from crewlib.prompts.parts import parts_text
from crewlib.schema import Params
from crewlib.sections import OutputChecks, finish_section
from crewlib.tasks import Task, task_for, title_only
from crewlib.text import approx_tokens  # noqa: F401 - part of this module's interface


class SystemUnavailableError(CrewError, RuntimeError):
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
                "calls": totals["calls"], "wall_s": self.wall_s, "llm_s": totals["recorded_latency_s"]}

    def to_row(self) -> dict:
        """One row of the evaluation suite's output table (``crewlib.eval``)."""
        return {"system": self.system, "example": self.example_id, "text": self.text,
                "key_to_id": dict(self.key_to_id), **self.cost, "fallbacks": sum(self.fallbacks.values())}

    def to_dict(self) -> dict:
        out = {k: v for k, v in dataclasses.asdict(self).items() if k != "records"}
        out["records"] = [dataclasses.asdict(r) for r in self.records]
        out["fallbacks"] = dict(self.fallbacks)
        return out


class System:
    """Base class: subclasses set ``name`` and implement :meth:`_generate`."""

    name: ClassVar[str] = "system"
    uses_llm: ClassVar[bool] = True

    def __init__(self, params: Params, client: LLMClient | None = None) -> None:
        self.params = params
        if self.uses_llm and client is None:
            raise ValueError(f"{self.name} needs an LLM client (crewlib.llm.connect(params))")
        self.settings = getattr(self.params.baselines, self.name)
        own = getattr(self.settings, "llm", None)  # a model of this system's own (full: long context on GPT-4o)
        if own and client is not None:
            client = connect_override(params, own, ledger=client.ledger)  # its calls in the run's ledger
        self.client = prompts.for_task(client, params.llm.task_wording)  # the prompts' task (Multi-News: reworded)

    @classmethod
    def min_rounds(cls, params: Params) -> int:
        """The fewest rounds in which this system can write anything (1: it writes in its first)."""
        return 1

    @classmethod
    def min_references(cls, params: Params) -> int:
        """The fewest references this system can write a section from (1)."""
        return 1

    def caller(self, role: str, agent: int | None = None, *, round: int | None = None,
               parts: tuple[tuple[str, int], ...] = ()) -> Caller:
        """Who makes a call, with the round and the prompt's parts (:mod:`crewlib.prompts.parts`) when known."""
        return Caller(self.name, role, agent, round, parts_text(parts))

    def task(self, example: RWGExample) -> Task:
        """The target and its pool in relevance order, as the run's :func:`~crewlib.tasks.build_tasks` made it."""
        return task_for(self.params, example)

    def generate(self, example: RWGExample, task: Task | None = None) -> Generation:
        """Write the related-work section of ``example``; the LLM calls made are on the result.

        ``task``: from the run's :class:`~crewlib.tasks.TaskSet`; by default :meth:`task` finds it.
        """
        task = task or self.task(example)
        if task.target_id != example.target_id:
            raise ValueError(f"task {task.target_id} given for example {example.target_id}")
        mark = self.client.ledger.mark() if self.client else 0
        t0 = time.perf_counter()
        generation = self._generate(example, task)
        if "output_checks" not in generation.notes:  # the environment's systems ran them on their final section
            generation.text, report = finish_section(generation.text, task, OutputChecks.from_params(self.params))
            generation.notes["output_checks"] = report.to_dict()
        generation.wall_s = time.perf_counter() - t0
        if self.client:
            generation.records = self.client.ledger.since(mark)
        return generation

    def _generate(self, example: RWGExample, task: Task) -> Generation:
        raise NotImplementedError


def reference_block(task: Task, *, abstract_chars: int = 600, keys: list[str] | None = None) -> str:
    """``[R1] Title: abstract`` lines for the references (all, or the ``keys`` given, in that order)."""
    lines = []
    for key in keys or task.keys:
        ref = task.reference_by_key[key]
        if title_only(ref):
            lines.append(f"[{key}] {ref.title} (title only: cite it only for what its title says)")
            continue
        abstract = ref.abstract if len(ref.abstract) <= abstract_chars else ref.abstract[:abstract_chars] + " ..."
        lines.append(f"[{key}] {ref.title}: {abstract}")
    return "\n".join(lines)
