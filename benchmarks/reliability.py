"""Reliability: CREW and two single-call baselines under injected API failures (0, 5, 20, 50%).

Usage: python benchmarks/reliability.py [--params quick] [--targets 5] [--rates 0,0.05,0.2,0.5]
       [--systems crew,long_context,rag] [--seed 0]

First the systems run once through the run's own LLM (the embedded model unless an endpoint is
configured; answers come from the cache when recorded, e.g. by ``benchmarks/quality.py``). Then,
at each rate, the same runs go against an OpenAI-compatible endpoint on 127.0.0.1 that replays
those answers instantly (:mod:`crewlib.llm.http_endpoint`), with the client's seeded fault
injector (timeouts, dropped connections, 429, 503) in front of it and the client's real retry and
backoff settings. So the figures measure the reliability layer, not the model: per rate, the
completed generations, retries billed, calls that failed after every retry, CREW's counted
fallbacks, the time spent waiting between retries and the wall time relative to 0%.

Then the promises (docs/reliability.md) are checked: a rerun of the 20% run on its output folder
pays for no call (every pair resumed), and no file written holds the API key the client used.
"""

from __future__ import annotations

import argparse
import dataclasses
import os
import tempfile
from pathlib import Path

import pandas as pd

os.environ.setdefault("HF_HUB_OFFLINE", "1")

from crewlib.config import load_params  # noqa: E402
from crewlib.experiments import run_generations  # noqa: E402
from crewlib.experiments.fault_runs import Replay, answers_from_files, run_with_faults  # noqa: E402
from crewlib.llm import LLMClient, connect  # noqa: E402
from crewlib.llm.http_endpoint import ChatEndpoint  # noqa: E402
from crewlib.tasks import build_tasks  # noqa: E402

SENTINEL_KEY = "fake-benchmark-credential-0000"  # not a key: a value to look for in written files


def recorded_answers(client: LLMClient) -> dict[str, dict]:
    """Visible request → recorded answer, for every call in the client's ledger."""
    return answers_from_files(p for p in (client.cache.path(r.request_key) for r in client.ledger.records)
                              if p.exists())


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--params", default="quick")
    parser.add_argument("--targets", type=int, default=5)
    parser.add_argument("--rates", default="0,0.05,0.2,0.5")
    parser.add_argument("--systems", default="crew,long_context,rag")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    params = load_params(args.params)
    names = args.systems.split(",")
    pairs = build_tasks(params).evaluation[: args.targets]
    tasks = {task.target_id: task for _, task in pairs}
    examples = [example for example, _ in pairs]

    live = connect(params)
    recording = run_generations(names, examples, params, live, tasks=tasks, progress=True).frame()
    if recording.text.isna().any():
        print("not every generation could be recorded:\n", recording[recording.text.isna()][["system", "example",
                                                                                             "error"]])
    answers = recorded_answers(live)
    config = dataclasses.replace(live.config, model=live.model)
    rows = []
    replayer = Replay(answers)

    def run_at(rate: float, folder: Path) -> dict:
        return run_with_faults(rate, args.seed, endpoint, replayer, config, names, examples, params, tasks, folder,
                               api_key=SENTINEL_KEY)[0]

    with ChatEndpoint(replayer) as endpoint, tempfile.TemporaryDirectory() as tmp:
        for rate in (float(r) for r in args.rates.split(",")):
            rows.append(run_at(rate, Path(tmp) / f"rate-{rate}"))
            print(f"rate {rate:.0%}: {rows[-1]}", flush=True)
        resumed = run_at(0.2, Path(tmp) / "rate-0.2")
        leaked = [str(p) for p in Path(tmp).rglob("*") if p.is_file() and SENTINEL_KEY in p.read_text(errors="replace")]
    table = pd.DataFrame(rows).set_index("rate")
    table["completed"] = table.completed.astype(str) + "/" + table.generations.astype(str)
    base = table.wall_s.iloc[0] or 1e-9
    table["wall_vs_0"] = (table.wall_s / base).round(2)
    pd.set_option("display.width", 200)
    print(f"\nmodel: {live.model} answers replayed over HTTP · {len(examples)} evaluation targets · systems: "
          f"{', '.join(names)} · retries: llm.max_retries = {config.max_retries}, backoff {config.backoff_base_s:g}"
          f"–{config.backoff_max_s:g} s")
    print(table.drop(columns="generations").to_string())
    print(f"rerun of the 20% run on its output folder: {resumed['calls'] + resumed['failed_calls']} calls made "
          f"({resumed['completed']}/{resumed['generations']} pairs resumed)")
    print(f"files holding the API key: {len(leaked)}" + (f" {leaked}" if leaked else ""))


if __name__ == "__main__":
    main()
