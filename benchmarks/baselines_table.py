"""Run every registered system on the first N evaluation targets of the sample and tabulate cost and citations.

Usage: python benchmarks/baselines_table.py [--params quick] [--targets 3] [--set baselines.srw.rounds=4 ...]

One thread per target, each with its own client and ledger (the embedded server is shared, 4
slots), so the per-system wall times include that contention. Prints a table of mean wall time,
LLM calls, tokens, citation verification and fallbacks per system, and writes the generations to
outputs/baselines_table/ (a rerun reuses them and the LLM cache).
"""

from __future__ import annotations

import argparse
import os
from concurrent.futures import ThreadPoolExecutor

import pandas as pd
import yaml

os.environ.setdefault("HF_HUB_OFFLINE", "1")

from crewlib.baselines import SYSTEMS  # noqa: E402
from crewlib.baselines.runner import run_systems  # noqa: E402
from crewlib.config import load_params, resolve_path  # noqa: E402
from crewlib.eval import EvalExample, Evaluator  # noqa: E402
from crewlib.llm import connect  # noqa: E402
from crewlib.tasks import build_tasks  # noqa: E402


def overrides(pairs: list[str]) -> dict:
    out: dict = {}
    for pair in pairs:
        dotted, value = pair.split("=", 1)
        node = out
        *parents, leaf = dotted.split(".")
        for p in parents:
            node = node.setdefault(p, {})
        node[leaf] = yaml.safe_load(value)
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--params", default="quick")
    parser.add_argument("--targets", type=int, default=3)
    parser.add_argument("--systems", default=",".join(SYSTEMS))
    parser.add_argument("--set", nargs="*", default=[])
    args = parser.parse_args()
    params = load_params(args.params, overrides(args.set))
    pairs = build_tasks(params).evaluation[: args.targets]
    targets = [example for example, _ in pairs]
    names = args.systems.split(",")
    out = resolve_path("outputs/baselines_table")

    def one(i: int) -> pd.DataFrame:
        return run_systems(names, [targets[i]], params, connect(params), tasks={pairs[i][1].target_id: pairs[i][1]},
                           out_dir=out / f"target{i}", progress=False)

    with ThreadPoolExecutor(max_workers=len(targets)) as pool:
        frame = pd.concat(list(pool.map(one, range(len(targets)))), ignore_index=True)
    scores = Evaluator(params).score(frame, [EvalExample.from_rwg(t) for t in targets],
                                     metrics=["citation"], progress=False)
    verification = scores[scores.metric == "citation_verification"].groupby("system")["value"].mean()
    recall = scores[scores.metric == "citation_recall"].groupby("system")["value"].mean()
    frame["tokens"] = frame.get("prompt_tokens", 0) + frame.get("completion_tokens", 0)
    table = frame.groupby("system", sort=False).agg(
        drafts=("text", lambda t: int(t.fillna("").str.strip().astype(bool).sum())),  # non-empty texts
        wall_s=("wall_s", "mean"), calls=("calls", "mean"),
        prompt_tokens=("prompt_tokens", "mean"), completion_tokens=("completion_tokens", "mean"),
        fallbacks=("fallbacks", "mean"))
    table["citation_verification"] = verification
    table["citation_recall"] = recall
    errors = frame[frame.text.isna()].groupby("system")["error"].first()
    pd.set_option("display.width", 200)
    print(f"model: {params['llm']['embedded']['model']} · targets: {[t.target_id for t in targets]}")
    print(table.round(3).to_string())
    if len(errors):
        print("unavailable:", errors.str.slice(0, 140).to_dict())
    frame.to_json(out / "generations.json", orient="records", indent=1, default_handler=str)


if __name__ == "__main__":
    main()
