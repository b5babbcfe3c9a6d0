"""The evaluation suite end to end on the sample corpus with the embedded model as judge.

Usage: python benchmarks/eval_judged_sample.py [--params quick] [--limit 2]

Outputs: the gold section (the ceiling) and the LLM-free extractive draft (surrogate executor,
fixed schedule, 15 rounds) of the first ``limit`` evaluation targets. Every metric group is
scored; the judge is the params' LLM (the embedded 1.5B in quick mode). Prints mean scores per
system, missing judgements and seconds per group, and writes outputs/eval_sample/scores.csv.
"""

from __future__ import annotations

import argparse
import os

import pandas as pd

os.environ.setdefault("HF_HUB_OFFLINE", "1")

from crewlib.config import load_params, resolve_path  # noqa: E402
from crewlib.env import CrewEnv, EnvConfig  # noqa: E402
from crewlib.env.executors import SurrogateExecutor  # noqa: E402
from crewlib.env.policies import FIXED_SCHEDULE, FixedSchedule, run_episode  # noqa: E402
from crewlib.eval import LLM_METRICS, REFERENCE_METRICS, EvalExample, Evaluator, summarise  # noqa: E402
from crewlib.tasks import build_tasks  # noqa: E402


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--params", default="quick")
    parser.add_argument("--limit", type=int, default=2)
    args = parser.parse_args()
    params = load_params(args.params)
    pairs = build_tasks(params).evaluation[: args.limit]
    targets = [example for example, _ in pairs]
    env = CrewEnv(targets, SurrogateExecutor(), EnvConfig.from_params(params), tasks=[task for _, task in pairs])
    outputs = []
    for i, target in enumerate(targets):
        run_episode(env, FixedSchedule(FIXED_SCHEDULE), seed=0, example_index=i)
        outputs.append({"system": "extractive (surrogate)", "example": target.target_id,
                        "text": env.trace.final_draft, "key_to_id": env.current_task.key_to_id})
        outputs.append({"system": "gold", "example": target.target_id, "text": target.gold_related_work})
    evaluator = Evaluator(params)
    scores = evaluator.score(outputs, [EvalExample.from_rwg(t) for t in targets],
                             metrics=[*REFERENCE_METRICS, *LLM_METRICS])
    out = resolve_path("outputs/eval_sample")
    out.mkdir(parents=True, exist_ok=True)
    scores.to_csv(out / "scores.csv", index=False)
    pd.set_option("display.width", 200)
    print(f"judge: {[j.name for j in evaluator.judges]}")
    print(summarise(scores).pivot(index="metric", columns="system", values="mean").round(3).to_string())
    print("missing judgements:", len(scores.attrs["missing"]), [m["reason"][:80] for m in scores.attrs["missing"]][:5])
    print("unavailable:", [(u["system"], u["group"], u["reason"]) for u in scores.attrs["unavailable"]])
    print("seconds per group:", {k: round(v, 1) for k, v in scores.attrs["timing_s"].items()})
    print("judge calls:", evaluator.ledger.totals())


if __name__ == "__main__":
    main()
