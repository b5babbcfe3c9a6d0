"""The instrument's discrimination, live: every instrument on the gold sections against their damages.

Usage: python benchmarks/instrument.py [--params quick] [--no-absolute] [--papers all|evaluation|holdout]

Runs :func:`crewlib.experiments.main_results.measure_instrument` on each set of ``instrument.papers`` with the
params' LLM as judge (the embedded 1.5B in quick mode): the grounded measures (with the LLM's entailment when
``instrument.entailment``), the pairwise judge in both orders, the composite, and (unless ``--no-absolute``) the
absolute 1–5 judge. Prints, per set, instrument and damage, the share of (gold, damaged) pairs ranked correctly and
of ties, the worst damage per instrument, and the pairwise judge's position consistency; writes
``outputs/instrument/``. Every answer goes to
the LLM cache, so a rerun pays for nothing twice.
"""

from __future__ import annotations

import argparse
import os

import pandas as pd

os.environ.setdefault("HF_HUB_OFFLINE", "1")

from crewlib.config import load_params, resolve_path  # noqa: E402
from crewlib.eval import EvalExample  # noqa: E402
from crewlib.eval.instrument import SET  # noqa: E402
from crewlib.experiments.main_results import measure_instrument  # noqa: E402
from crewlib.tasks import build_tasks  # noqa: E402


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--params", default="quick")
    parser.add_argument("--papers", choices=["all", "evaluation", "holdout"], default=None,
                        help="the discrimination set (default: instrument.papers)")
    parser.add_argument("--no-absolute", action="store_true", help="leave the absolute 1-5 judge out")
    args = parser.parse_args()
    params = load_params(args.params, {"instrument": {"papers": [args.papers]}} if args.papers else None)
    evaluation = [EvalExample.from_rwg(e) for e, _ in build_tasks(params).evaluation]
    check = measure_instrument(params, evaluation, absolute=not args.no_absolute, progress=True)
    out = resolve_path("outputs/instrument")
    out.mkdir(parents=True, exist_ok=True)
    for name in ("table", "scores", "preferences", "verdicts", "consistency"):
        getattr(check, name).to_csv(out / f"{name}.csv", index=False)
    pd.set_option("display.width", 250)
    pd.set_option("display.max_columns", 30)
    table = check.table if SET in check.table else check.table.assign(**{SET: params.instrument.papers[0]})
    for (papers, judge), part in table.groupby([SET, "judge"], sort=False):
        print(f"\npapers {papers}, judge {judge}: share of pairs ranked correctly (ties in the second table)")
        print(part.pivot_table(index="instrument", columns="damage", values="correct").round(2).to_string())
        print(part.pivot_table(index="instrument", columns="damage", values="ties").round(2).to_string())
    print("\n", check.summary().round(3).to_string(index=False))
    print("\nposition consistency:\n", check.consistency.to_string(index=False))
    if check.skipped:
        print("\nskipped:", check.skipped)


if __name__ == "__main__":
    main()
