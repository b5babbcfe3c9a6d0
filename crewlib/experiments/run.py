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
from pathlib import Path

import pandas as pd
from tqdm import tqdm  # plain text bars: no widget (and no IProgress warning) in notebooks

from crewlib.baselines import SYSTEMS, system_class
from crewlib.config import as_dict, params_fingerprint
from crewlib.data.records import RWGExample
from crewlib.experiments.generation import GenerationResult, generate_pair, result_of
from crewlib.experiments.ray_backend import ray_results
from crewlib.llm import LLMClient
from crewlib.lock import output_lock
from crewlib.schema import Params
from crewlib.tasks import Task

__all__ = ["BACKENDS", "GENERATIONS_FILE", "GenerationResult", "Generations", "folder_name",
           "generate_pair", "read_generations", "result_of", "resumable", "run_generations", "settings_folder"]

BACKENDS = ("local", "ray")
GENERATIONS_FILE = "generations.jsonl"


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


def folder_name(label: str) -> str:
    """A label (a system, a variant, a backbone) as a folder name: lower case, runs of other characters as _."""
    return re.sub(r"[^a-z0-9.-]+", "_", label.lower()).strip("_")


def run_generations(names: Sequence[str], examples: Sequence[RWGExample], params: Params,
                    client: LLMClient | None = None, *, tasks: Mapping[str, Task] | None = None,
                    out_dir: str | Path | None = None, backend: str | None = None,
                    progress: bool = True) -> Generations:
    """Every system of ``names`` on every example, resumed from ``out_dir`` when given.

    ``client``: the local backend's client (None only when every system is LLM-free); Ray
    workers connect to the params' endpoint themselves. ``tasks``: target id → task, from the run's
    :func:`~crewlib.tasks.build_tasks`; an example without one gets its task from
    :func:`~crewlib.tasks.task_for`. ``backend``: ``local`` or ``ray``; default
    ``params.experiments.backend``.
    """
    unknown = [n for n in names if n not in SYSTEMS]
    if unknown:
        raise ValueError(f"unknown system(s) {unknown}; known: {sorted(SYSTEMS)}")
    repeated = [i for i, n in Counter(e.target_id for e in examples).items() if n > 1]
    if repeated:
        raise ValueError(f"{len(repeated)} target id(s) occur more than once among the examples: "
                         f"{', '.join(repeated[:5])}; a resumed run could not tell their generations apart")
    settings = params.experiments
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
            return ray_results(pairs, tasks, params, settings)
        return (generate_pair(n, e, tasks.get(e.target_id), params, client) for n, e in pairs)

    return resumable([(name, e.target_id) for name in names for e in examples], produce, out_dir=out_dir,
                     params=params, progress=progress)


# Blocks of the params no generation reads: a change in them resumes the same generations.
NOT_GENERATION = ("eval", "instrument", "experiments")


def settings_folder(out_dir: str | Path, params: Params) -> Path:
    """Where the generations of ``params`` resume: a folder of ``out_dir`` named by the fingerprint of every setting
    a generation can depend on (not the LLM cache's place), so a run with other settings — full instead of quick
    mode, another model — never resumes the first one's sections."""
    relevant = {k: v for k, v in as_dict(params).items() if k not in NOT_GENERATION}
    relevant["llm"] = {k: v for k, v in relevant["llm"].items() if k != "cache_dir"}
    relevant["_source"] = params.source  # the params file: runs of two files never share a folder
    return Path(out_dir) / f"settings-{params_fingerprint(relevant, tuple(relevant))[:12]}"


def resumable(order: Sequence[tuple[str, str]], produce: Callable[[list[tuple[str, str]]], Iterable[GenerationResult]],
              *, out_dir: str | Path | None, params: Params | None = None, progress: bool = True) -> Generations:
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

