"""Sanity run of the reference-based metrics on published system outputs (STRoGeNS sample).

Usage: python benchmarks/eval_strogens.py PATH/rwg_strogens_outputs.jsonl [--limit N]

Scores the gold sections (as a system: the ceiling) and every system output of the file with
the reference-based metric groups and prints the mean per system, plus seconds per group.
The file is a developer sample, not part of the project (see the data datasheet).
"""

from __future__ import annotations

import argparse
import json
import os

import pandas as pd

os.environ.setdefault("HF_HUB_OFFLINE", "1")

from crewlib.eval import EvalExample, Evaluator, summarise  # noqa: E402


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("path")
    parser.add_argument("--limit", type=int, default=None)
    args = parser.parse_args()
    with open(args.path, encoding="utf-8") as fh:
        rows = [json.loads(line) for line in fh][: args.limit]
    examples, outputs = [], []
    for row in rows:
        numbers = json.loads(row["ref_numbers"]) if isinstance(row["ref_numbers"], str) else row["ref_numbers"]
        ex = EvalExample.from_numbered(row["id"], row["gold_related_work"], numbers)
        examples.append(ex)
        outputs.append({"system": "gold", "example": ex.example_id, "text": row["gold_related_work"]})
        for system, text in row["system_outputs"].items():
            outputs.append({"system": system, "example": ex.example_id, "text": text})
    evaluator = Evaluator(params={})
    scores = evaluator.score(outputs, examples, metrics=["citation", "rouge", "bertscore", "pss", "sn"])
    table = summarise(scores).pivot(index="system", columns="metric", values="mean")
    columns = ["citation_verification", "citation_precision", "citation_recall", "citation_density_ratio",
               "citation_balance", "rouge1", "rouge2", "rougeL", "bertscore_minilm_f1", "pss", "sn_f1"]
    pd.set_option("display.width", 200)
    print(f"{len(examples)} examples; outputs per system:")
    print(scores.groupby("system")["example"].nunique().to_string())
    print(table[[c for c in columns if c in table]].round(3).sort_values("rougeL", ascending=False).to_string())
    unavailable = pd.DataFrame(scores.attrs["unavailable"])
    if len(unavailable):
        print("unavailable:", unavailable.groupby(["system", "group"]).size().to_dict())
    print("seconds per group:", {k: round(v, 1) for k, v in scores.attrs["timing_s"].items()})


if __name__ == "__main__":
    main()
