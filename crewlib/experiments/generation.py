"""One system on one example, as a typed, saveable result: what every experiment backend produces.

:func:`generate_pair` runs a system and turns its :class:`~crewlib.baselines.base.Generation` into a
:class:`GenerationResult` (a failure or an empty section becomes a result with its error). The local
backend (:mod:`crewlib.experiments.run`) and the Ray workers (:mod:`crewlib.experiments.ray_backend`)
both call it.
"""

from __future__ import annotations

import dataclasses
import json
from collections import Counter
from collections.abc import Mapping
from dataclasses import dataclass, field

from crewlib.actions import ACTION_NAMES
from crewlib.baselines import SystemUnavailableError, make_system
from crewlib.baselines.base import Generation
from crewlib.data.records import RWGExample
from crewlib.llm import LLMClient, LLMError
from crewlib.schema import Params
from crewlib.tasks import Task


@dataclass
class GenerationResult:
    """One system's section for one example, or why there is none (``text`` None, ``error`` set)."""

    system: str
    example: str  # the target id
    text: str | None
    error: str | None = None
    key_to_id: dict[str, str] = field(default_factory=dict)  # the keys this system showed its LLM
    prompt_tokens: int = 0
    completion_tokens: int = 0
    calls: int = 0
    wall_s: float = 0.0  # this run's
    llm_s: float = 0.0  # the LLM calls' seconds when their answers were produced (summed; cache hits: as recorded)
    fallbacks: int = 0
    fallback_reasons: dict[str, int] = field(default_factory=dict)
    notes: dict = field(default_factory=dict)

    @property
    def ok(self) -> bool:
        return isinstance(self.text, str) and bool(self.text.strip())

    @property
    def tokens(self) -> int:
        return self.prompt_tokens + self.completion_tokens

    def to_row(self) -> dict:
        """The evaluation suite's row: ``system, example, text, key_to_id`` + cost columns + error."""
        return dataclasses.asdict(self)

    @classmethod
    def from_row(cls, row: Mapping) -> GenerationResult:
        """From a saved line; fields this version does not know are ignored, missing ones take defaults."""
        known = {f.name for f in dataclasses.fields(cls)}
        values = {k: v for k, v in row.items() if k in known}
        for key in ("system", "example"):
            if not isinstance(values.get(key), str):
                raise ValueError(f"no {key!r}")
        values.setdefault("text", None)
        return cls(**values)


def generate_pair(system_name: str, example: RWGExample, task: Task | None, params: Params,
                  client: LLMClient | None) -> GenerationResult:
    """One system on one example; a system that cannot run or fails gives a result with its error."""
    try:
        system = make_system(system_name, params, client)
        generation = system.generate(example, task)
    except (SystemUnavailableError, LLMError, ValueError) as exc:
        return GenerationResult(system_name, example.target_id, None, f"{type(exc).__name__}: {exc}")
    return result_of(generation)


def result_of(generation: Generation) -> GenerationResult:
    """A system's :class:`Generation` as the typed, saveable result (an empty text becomes an error).

    A generation that met a replay-only cache miss is an error, whatever the system made of the failed
    call (a counted fallback inside an episode would otherwise hide a stale recording).
    """
    missed = [r.error for r in generation.records if (r.error or "").startswith("CacheMissError")]
    if missed:
        return GenerationResult(generation.system, generation.example_id, None,
                                f"CacheMissError: {len(missed)} request(s) of this generation are not in the "
                                f"replay-only cache (a prompt changed, or the recording is stale; record again "
                                f"with cache_mode read_write); first: {missed[0][16:216]}")
    result = GenerationResult(
        generation.system, generation.example_id, generation.text, None, dict(generation.key_to_id),
        fallbacks=sum(generation.fallbacks.values()), fallback_reasons=dict(generation.fallbacks),
        notes=json.loads(json.dumps(generation.notes, default=str)),
        **{k: v for k, v in generation.cost.items()})
    if not result.ok:
        result.text, result.error = None, f"EmptySection: the system wrote no text{_what_it_did(result.notes)}"
    return result


def _what_it_did(notes: Mapping) -> str:
    """For an empty section of an environment system: how often its agents took each action (idle: None)."""
    taken = Counter(a for row in notes.get("actions") or [] for a in row)
    if not taken:
        return ""
    named = ", ".join(f"{'idle' if a is None else ACTION_NAMES[a]} {n}" for a, n in taken.most_common())
    return f" (actions taken over {len(notes['actions'])} rounds: {named})"
