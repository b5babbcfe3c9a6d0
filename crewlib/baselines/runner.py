"""Run several systems on several examples, recording failures instead of losing the run.

Each generation is appended to ``out_dir/generations.jsonl`` as soon as it exists, so a
rerun skips finished (system, example) pairs; LLM answers are cached by the client as well,
so nothing is paid twice. A system that cannot run (PRIMERA offline) or fails on an example
gets a row with ``text = None`` and the ``error``: result tables show it as unavailable; so does
an empty section, which is never saved, so that a rerun retries it.

One process at a time writes to an output folder (:func:`crewlib.lock.output_lock`); a line of
``generations.jsonl`` that cannot be read (a run killed mid-write) is skipped with a warning
naming the file and line, and its pair runs again.
"""

from __future__ import annotations

import contextlib
import json
import warnings
from collections import Counter
from collections.abc import Mapping, Sequence
from pathlib import Path

import pandas as pd
from tqdm.auto import tqdm

from crewlib.baselines import SystemUnavailableError, make_system
from crewlib.data.records import RWGExample
from crewlib.llm import LLMClient, LLMError
from crewlib.lock import output_lock
from crewlib.tasks import Task


def read_generations(path: Path) -> dict[tuple[str, str], dict]:
    """Finished (system, example) pairs of a generations file; unreadable lines warned about and skipped."""
    done: dict[tuple[str, str], dict] = {}
    if not path.exists():
        return done
    for line_no, raw in enumerate(path.read_bytes().splitlines(), start=1):
        if not raw.strip():
            continue
        try:
            row = json.loads(raw.decode("utf-8"))
            key = (row["system"], row["example"])
            if not isinstance(row.get("text"), str) or not row["text"].strip():
                raise ValueError("no section text")
        except (ValueError, KeyError, TypeError) as exc:
            warnings.warn(f"{path} line {line_no} is not a finished generation ({type(exc).__name__}: {exc}); "
                          "skipped, its pair runs again", stacklevel=3)
            continue
        done[key] = row
    return done


def run_systems(names: Sequence[str], examples: Sequence[RWGExample], params: Mapping, client: LLMClient | None,
                *, tasks: Mapping[str, Task] | None = None, out_dir: str | Path | None = None,
                progress: bool = True) -> pd.DataFrame:
    """One row per system × example: the evaluation suite's ``system, example, text, key_to_id`` + cost + error.

    ``tasks``: target id → task, from the run's :func:`~crewlib.tasks.build_tasks`; an example
    without one gets its task from :func:`~crewlib.tasks.task_for`.
    """
    tasks = tasks or {}
    repeated = [i for i, n in Counter(e.target_id for e in examples).items() if n > 1]
    if repeated:
        raise ValueError(f"{len(repeated)} target id(s) occur more than once among the examples: "
                         f"{', '.join(repeated[:5])}; a resumed run could not tell their generations apart")
    path = Path(out_dir) / "generations.jsonl" if out_dir else None
    with output_lock(path.parent) if path else contextlib.nullcontext():
        return _run(names, examples, params, client, tasks, path, progress)


def _run(names, examples, params, client, tasks, path, progress) -> pd.DataFrame:
    done = read_generations(path) if path else {}
    if path and path.exists() and path.stat().st_size:
        with path.open("rb+") as fh:  # end a half-written last line, so the next row starts a line of its own
            fh.seek(-1, 2)
            if fh.read(1) != b"\n":
                fh.write(b"\n")
    rows = []
    bar = tqdm(total=len(names) * len(examples), desc="generating", disable=not progress)
    for name in names:
        try:
            system = make_system(name, params, client)
            unavailable = None
        except SystemUnavailableError as exc:  # an unknown name or a missing client raises: the caller's mistake
            system, unavailable = None, f"{type(exc).__name__}: {exc}"
        for example in examples:
            key = (name, example.target_id)
            if key in done:
                rows.append(done[key])
                bar.update(1)
                continue
            if system is None:
                row = {"system": name, "example": example.target_id, "text": None, "error": unavailable}
            else:
                try:
                    generation = system.generate(example, tasks.get(example.target_id))
                    row = {**generation.to_row(), "error": None, "notes": generation.notes,
                           "fallback_reasons": dict(generation.fallbacks)}
                    if not generation.text.strip():
                        row = {**row, "text": None, "error": "EmptySection: the system wrote no text"}
                except (SystemUnavailableError, LLMError, ValueError) as exc:
                    row = {"system": name, "example": example.target_id, "text": None,
                           "error": f"{type(exc).__name__}: {exc}"}
            rows.append(row)
            if path and row["text"] is not None:  # failures are retried on the next run
                path.parent.mkdir(parents=True, exist_ok=True)
                with path.open("a", encoding="utf-8") as fh:
                    fh.write(json.dumps(row, ensure_ascii=False, default=str) + "\n")
            bar.update(1)
    bar.close()
    return pd.DataFrame(rows)
