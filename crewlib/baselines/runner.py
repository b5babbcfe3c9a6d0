"""Run several systems on several examples, recording failures instead of losing the run.

Each generation is appended to ``out_dir/generations.jsonl`` as soon as it exists, so a
rerun skips finished (system, example) pairs; LLM answers are cached by the client as well,
so nothing is paid twice. A system that cannot run (PRIMERA offline) or fails on an example
gets a row with ``text = None`` and the ``error``: result tables show it as unavailable.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from pathlib import Path

import pandas as pd
from tqdm.auto import tqdm

from crewlib.baselines import SystemUnavailableError, make_system
from crewlib.data.records import RWGExample
from crewlib.llm import LLMClient, LLMError
from crewlib.tasks import Task


def run_systems(names: Sequence[str], examples: Sequence[RWGExample], params: Mapping, client: LLMClient | None,
                *, tasks: Mapping[str, Task] | None = None, out_dir: str | Path | None = None,
                progress: bool = True) -> pd.DataFrame:
    """One row per system × example: the evaluation suite's ``system, example, text, key_to_id`` + cost + error.

    ``tasks``: target id → task, from the run's :func:`~crewlib.tasks.build_tasks`; an example
    without one gets its task from :func:`~crewlib.tasks.task_for`.
    """
    tasks = tasks or {}
    path = Path(out_dir) / "generations.jsonl" if out_dir else None
    done: dict[tuple[str, str], dict] = {}
    if path and path.exists():
        for line in path.read_text(encoding="utf-8").splitlines():
            if line.strip():
                row = json.loads(line)
                done[(row["system"], row["example"])] = row
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
