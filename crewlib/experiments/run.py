"""Run several systems on several examples: typed results, one output folder, resumable, local or on Ray.

Each finished generation is appended to ``out_dir/generations.jsonl`` as soon as it exists, so a
rerun skips finished (system, example) pairs; LLM answers are cached by the client as well, so
nothing is paid twice. A system that cannot run (PRIMERA offline) or fails on an example gets a
result with ``text = None`` and its ``error``: tables show it as unavailable; so does an empty
section. Failures are never saved, so a rerun retries them.

One process at a time writes to an output folder (:func:`crewlib.lock.output_lock`); a line of
``generations.jsonl`` that cannot be read (a run killed mid-write) is skipped with a warning
naming the file and line, and its pair runs again.

Backends (``experiments.backend`` in the params): ``local`` runs the pairs one after another in
this process with the client given; ``ray`` sends one task per pending (system, example) pair to
a Ray cluster (``experiments.ray_address``; none: a local Ray instance), each worker with its own
client to the configured endpoint and the configured cache folder. Only this process writes the
generations file, so the folder, the rows and their order are the same with either backend.
"""

from __future__ import annotations

import contextlib
import dataclasses
import json
import re
import warnings
from collections import Counter
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import pandas as pd
from tqdm import tqdm  # plain text bars: no widget (and no IProgress warning) in notebooks

from crewlib.baselines import SYSTEMS, SystemUnavailableError, make_system, system_class
from crewlib.baselines.base import Generation
from crewlib.config import params_fingerprint
from crewlib.data.records import RWGExample
from crewlib.llm import LLMClient, LLMError
from crewlib.lock import output_lock
from crewlib.schema import ACTION_NAMES
from crewlib.tasks import Task

BACKENDS = ("local", "ray")
GENERATIONS_FILE = "generations.jsonl"


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


class Generations(list):
    """The results of a run, in (system, example) order; ``frame()`` is the evaluation suite's table."""

    def frame(self) -> pd.DataFrame:
        columns = [f.name for f in dataclasses.fields(GenerationResult)]
        return pd.DataFrame([g.to_row() for g in self], columns=columns)


def read_generations(path: str | Path) -> dict[tuple[str, str], GenerationResult]:
    """Finished (system, example) pairs of a generations file; unreadable lines warned about and skipped."""
    path = Path(path)
    done: dict[tuple[str, str], GenerationResult] = {}
    if not path.exists():
        return done
    for line_no, raw in enumerate(path.read_bytes().splitlines(), start=1):
        if not raw.strip():
            continue
        try:
            result = GenerationResult.from_row(json.loads(raw.decode("utf-8")))
            if not result.ok:
                raise ValueError("no section text")
        except (ValueError, KeyError, TypeError) as exc:
            warnings.warn(f"{path} line {line_no} is not a finished generation ({type(exc).__name__}: {exc}); "
                          "skipped, its pair runs again", stacklevel=3)
            continue
        done[(result.system, result.example)] = result
    return done


def generate_pair(system_name: str, example: RWGExample, task: Task | None, params: Mapping,
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


def folder_name(label: str) -> str:
    """A label (a system, a variant, a backbone) as a folder name: lower case, runs of other characters as _."""
    return re.sub(r"[^a-z0-9.-]+", "_", label.lower()).strip("_")


def _what_it_did(notes: Mapping) -> str:
    """For an empty section of an environment system: how often its agents took each action (idle: None)."""
    taken = Counter(a for row in notes.get("actions") or [] for a in row)
    if not taken:
        return ""
    named = ", ".join(f"{'idle' if a is None else ACTION_NAMES[a]} {n}" for a, n in taken.most_common())
    return f" (actions taken over {len(notes['actions'])} rounds: {named})"


def run_generations(names: Sequence[str], examples: Sequence[RWGExample], params: Mapping,
                    client: LLMClient | None = None, *, tasks: Mapping[str, Task] | None = None,
                    out_dir: str | Path | None = None, backend: str | None = None,
                    progress: bool = True) -> Generations:
    """Every system of ``names`` on every example, resumed from ``out_dir`` when given.

    ``client``: the local backend's client (None only when every system is LLM-free); Ray
    workers connect to the params' endpoint themselves. ``tasks``: target id → task, from the run's
    :func:`~crewlib.tasks.build_tasks`; an example without one gets its task from
    :func:`~crewlib.tasks.task_for`. ``backend``: ``local`` or ``ray``; default
    ``params['experiments']['backend']``.
    """
    unknown = [n for n in names if n not in SYSTEMS]
    if unknown:
        raise ValueError(f"unknown system(s) {unknown}; known: {sorted(SYSTEMS)}")
    repeated = [i for i, n in Counter(e.target_id for e in examples).items() if n > 1]
    if repeated:
        raise ValueError(f"{len(repeated)} target id(s) occur more than once among the examples: "
                         f"{', '.join(repeated[:5])}; a resumed run could not tell their generations apart")
    settings = ExperimentSettings.from_params(params)
    backend = backend or settings.backend
    if backend not in BACKENDS:
        raise ValueError(f"experiments.backend must be one of {BACKENDS}, not {backend!r}")
    needs_client = [n for n in names if system_class(n).uses_llm]
    if backend == "local" and client is None and needs_client:
        raise ValueError(f"{', '.join(needs_client)} need(s) an LLM client (crewlib.llm.connect(params))")
    by_id = {e.target_id: e for e in examples}
    tasks = tasks or {}

    def produce(pending: list[tuple[str, str]]) -> Iterable[GenerationResult]:
        pairs = [(n, by_id[i]) for n, i in pending]
        if backend == "ray":
            from crewlib.experiments.ray_backend import ray_results

            return ray_results(pairs, tasks, params, settings)
        return (generate_pair(n, e, tasks.get(e.target_id), params, client) for n, e in pairs)

    return resumable([(name, e.target_id) for name in names for e in examples], produce, out_dir=out_dir,
                     params=params, progress=progress)


# Blocks of the params no generation reads: a change in them resumes the same generations.
NOT_GENERATION = ("eval", "instrument", "experiments")


def settings_folder(out_dir: str | Path, params: Mapping) -> Path:
    """Where the generations of ``params`` resume: a folder of ``out_dir`` named by the fingerprint of every setting
    a generation can depend on (not the LLM cache's place), so a run with other settings — full instead of quick
    mode, another model — never resumes the first one's sections."""
    relevant = {k: v for k, v in params.items() if k not in NOT_GENERATION}
    relevant["llm"] = {k: v for k, v in (relevant.get("llm") or {}).items() if k != "cache_dir"}
    return Path(out_dir) / f"settings-{params_fingerprint(relevant, tuple(relevant))[:12]}"


def resumable(order: Sequence[tuple[str, str]], produce: Callable[[list[tuple[str, str]]], Iterable[GenerationResult]],
              *, out_dir: str | Path | None, params: Mapping | None = None, progress: bool = True) -> Generations:
    """The results of every (system, example id) of ``order``, those finished in ``out_dir`` read back.

    ``produce(pending)`` yields the results of the pending pairs (in any order); each finished one is
    appended to ``generations.jsonl`` at once, failures are not (a rerun retries them). With ``params``, the file
    lives in the :func:`settings_folder` of ``out_dir`` for those params, else in ``out_dir`` itself.
    """
    if out_dir and params is not None:
        out_dir = settings_folder(out_dir, params)
    path = Path(out_dir) / GENERATIONS_FILE if out_dir else None
    with output_lock(path.parent) if path else contextlib.nullcontext():
        done = read_generations(path) if path else {}
        if path:
            _end_last_line(path)
        pending = [pair for pair in order if pair not in done]
        bar = tqdm(total=len(order), initial=len(order) - len(pending), desc="generating", disable=not progress)
        for result in produce(pending):
            done[(result.system, result.example)] = result
            if path and result.ok:  # failures are retried on the next run
                with path.open("a", encoding="utf-8") as fh:
                    fh.write(json.dumps(result.to_row(), ensure_ascii=False, default=str) + "\n")
            bar.update(1)
        bar.close()
    return Generations(done[pair] for pair in order)


def _end_last_line(path: Path) -> None:
    """End a half-written last line, so the next row starts a line of its own."""
    path.parent.mkdir(parents=True, exist_ok=True)
    if path.exists() and path.stat().st_size:
        with path.open("rb+") as fh:
            fh.seek(-1, 2)
            if fh.read(1) != b"\n":
                fh.write(b"\n")


@dataclass(frozen=True)
class ExperimentSettings:
    """The ``experiments`` block of the params."""

    backend: str = "local"
    ray_address: str | None = None  # an existing cluster ("ray://host:10001" or "auto"); None: start a local one
    ray_num_cpus: int | None = None  # CPUs of a local Ray instance (None: all)
    ray_task_cpus: float = 1.0  # CPUs one (system, example) task reserves
    metrics: tuple[str, ...] = ("citation",)  # the metric groups of the main results

    def __post_init__(self) -> None:
        object.__setattr__(self, "metrics", tuple(self.metrics))

    @classmethod
    def from_params(cls, params: Mapping | None) -> ExperimentSettings:
        block = dict((params or {}).get("experiments") or {})
        known = {f.name for f in dataclasses.fields(cls)}
        unknown = set(block) - known
        if unknown:
            raise ValueError(f"unknown experiments settings: {sorted(unknown)}; known: {sorted(known)}")
        return cls(**block)

