"""CREW against the Orchestrator under injected API failures, every call live (issue 47: the paper's 5% run).

Usage: python benchmarks/failure_live.py [--params quick] [--targets 3] [--skip 0] [--rate 0.05]
       [--systems crew,orchestrator] [--rounds N] [--seed 0]

Unlike ``benchmarks/reliability.py`` and notebook 08, which replay recorded answers instantly and sum the model's
recorded seconds, here the model answers: each system writes ``--targets`` evaluation papers (after ``--skip``)
through the run's own LLM (the embedded model unless an endpoint is configured) with an empty answer cache, so every
call is made, and the client's seeded fault injector fails ``--rate`` of them (timeouts, dropped connections, 429, 503)
before they reach the server; the client's real retries and backoff (slept) handle them. The systems run one after
another, paper by paper in turn (CREW on paper 1, the Orchestrator on paper 1, CREW on paper 2, …), so a slow
spell of the machine falls on both. Printed per system: wall seconds (what a user waits), completed sections,
calls, retries, calls failed after every retry, injected faults, seconds slept between retries, and the ratio of
the two systems' wall times. ``--rounds N`` plays N rounds with every system (the paper compares both at its
horizon, 15); without it each plays its params' rounds (quick: CREW 8, the Orchestrator 6). The paper reports 812 s
for CREW and 1012 s for the Orchestrator at 5% (Qwen 2.5 72B); ours is the small local model.
"""

from __future__ import annotations

import argparse
import os
import tempfile
import time
from collections import defaultdict
from pathlib import Path

os.environ.setdefault("HF_HUB_OFFLINE", "1")

from crewlib.config import load_params  # noqa: E402
from crewlib.experiments import run_generations  # noqa: E402
from crewlib.llm import FaultInjector, connect  # noqa: E402
from crewlib.llm.cache import ResponseCache  # noqa: E402
from crewlib.llm.settings import llm_settings  # noqa: E402
from crewlib.tasks import evaluation_pairs  # noqa: E402

PAPER_WALL_S = {"crew": 812, "orchestrator": 1012}  # DESIGN §7: wall time at 5% API failures


def run_one(system: str, pair, params, cache_dir: Path, rate: float, seed: int, out_dir: Path) -> dict:
    """One system on one paper, live, with ``rate`` of its calls failing; its figures."""
    waits: list[float] = []
    faults = FaultInjector(rate, seed) if rate else None
    config = llm_settings(params).model_copy(update={"cache_mode": "read_write", "cache_dir": str(cache_dir)})

    def counted_sleep(seconds: float) -> None:
        waits.append(seconds)
        time.sleep(seconds)

    client = connect(config=config, cache=ResponseCache(cache_dir, mode="read_write"), faults=faults,
                     sleep=counted_sleep)
    example, task = pair
    started = time.perf_counter()
    frame = run_generations([system], [example], params, client, tasks={task.target_id: task}, out_dir=out_dir,
                            progress=False).frame()
    wall = time.perf_counter() - started
    records = client.ledger.records
    return {"wall_s": wall, "completed": int(frame.text.notna().sum()), "calls": sum(r.error is None for r in records),
            "retries": sum(r.retries for r in records), "failed_calls": sum(r.error is not None for r in records),
            "injected": sum(faults.injected.values()) if faults else 0, "waits_s": sum(waits),
            "cache_hits": sum(bool(r.cache_hit) for r in records)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--params", default="quick")
    parser.add_argument("--targets", type=int, default=3)
    parser.add_argument("--skip", type=int, default=0, help="evaluation papers passed over first (a rerun of one)")
    parser.add_argument("--rate", type=float, default=0.05)
    parser.add_argument("--systems", default="crew,orchestrator")
    parser.add_argument("--rounds", type=int, default=None, help="rounds for every system (default: the params')")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    names = args.systems.split(",")
    params = load_params(args.params, {"baselines": {n: {"rounds": args.rounds} for n in names}} if args.rounds
                         else None)
    pairs = evaluation_pairs(params, args.skip + args.targets)[args.skip:]
    totals: dict[str, dict] = defaultdict(lambda: defaultdict(float))
    with tempfile.TemporaryDirectory() as tmp:
        for i, pair in enumerate(pairs):
            for system in names:
                cache = Path(tmp) / f"cache-{system}-{i}"  # empty: every call live
                seed = args.seed + args.skip + i  # a paper's faults are the same whether run alone or with the rest
                row = run_one(system, pair, params, cache, args.rate, seed, Path(tmp) / f"{system}-{i}")
                print(f"{pair[0].target_id} {system}: " + ", ".join(f"{k} {v:.1f}" if isinstance(v, float)
                                                                    else f"{k} {v}" for k, v in row.items()),
                      flush=True)
                for key, value in row.items():
                    totals[system][key] += value
    model = connect(params).model
    print(f"\n{len(pairs)} papers · {model} live, empty cache · {args.rate:.0%} of calls failed by the client's "
          f"fault injector (seeded) · rounds: CREW {params.baselines.crew.rounds}, the Orchestrator "
          f"{params.baselines.orchestrator.rounds} · retries: llm.max_retries = {llm_settings(params).max_retries}")
    print(f"{'system':14}{'wall s':>9}{'completed':>10}{'calls':>7}{'retries':>8}{'failed':>7}{'injected':>9}"
          f"{'slept s':>9}{'cache hits':>11}   the paper (wall s at 5%)")
    for system in names:
        t = totals[system]
        print(f"{system:14}{t['wall_s']:9.1f}{int(t['completed']):>7}/{len(pairs)}{int(t['calls']):7d}"
              f"{int(t['retries']):8d}{int(t['failed_calls']):7d}{int(t['injected']):9d}{t['waits_s']:9.1f}"
              f"{int(t['cache_hits']):11d}   {PAPER_WALL_S.get(system, '—')}")
    if {"crew", "orchestrator"} <= set(names):
        ratio = totals["crew"]["wall_s"] / max(totals["orchestrator"]["wall_s"], 1e-9)
        print(f"CREW / Orchestrator wall time: {ratio:.2f} (the paper: {812 / 1012:.2f})")


if __name__ == "__main__":
    main()
