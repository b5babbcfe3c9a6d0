"""Draft quality: CREW against single prompts to the same model, on the sample's evaluation targets.

Usage: python benchmarks/quality.py [--params quick] [--targets 5] [--systems crew,long_context,rag,srw,extractive]

Per system, the mean over the targets of: distinct papers cited / pool, citation recall against
the gold section, repeated paragraphs (after the output checks; counted before them in
``repairs``), words, the judge's Overall (the run's own LLM as judge — the embedded model unless
an endpoint is configured: a small-model judgement, labelled as such), LLM calls, tokens and wall
time; then CREW's ratio to long context on each. Generations go to ``outputs/quality/`` and every
answer to the LLM cache, so a rerun is fast and pays for nothing twice.
"""

from __future__ import annotations

import argparse
import os

import pandas as pd

os.environ.setdefault("HF_HUB_OFFLINE", "1")

from crewlib.citations import check_citations  # noqa: E402
from crewlib.config import load_params, resolve_path  # noqa: E402
from crewlib.eval import EvalExample, Evaluator  # noqa: E402
from crewlib.experiments import run_generations  # noqa: E402
from crewlib.llm import connect  # noqa: E402
from crewlib.sections import repeated_paragraph_count  # noqa: E402
from crewlib.tasks import build_tasks  # noqa: E402

SYSTEMS = "crew,long_context,rag,srw,extractive"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--params", default="quick")
    parser.add_argument("--targets", type=int, default=5)
    parser.add_argument("--systems", default=SYSTEMS)
    args = parser.parse_args()
    params = load_params(args.params)
    pairs = build_tasks(params).evaluation[: args.targets]
    tasks = {task.target_id: task for _, task in pairs}
    examples = [example for example, _ in pairs]
    client = connect(params)
    frame = run_generations(args.systems.split(","), examples, params, client, tasks=tasks,
                        out_dir=resolve_path("outputs/quality")).frame()
    frame = frame[frame.text.notna()].copy()
    threshold = params["output"]["duplicate_threshold"]
    frame["pool"] = frame.example.map(lambda i: len(tasks[i].references))
    frame["cited_share"] = [len(check_citations(row.text, row.key_to_id).cited_ids) / row.pool
                            for row in frame.itertuples()]
    frame["repeated_paragraphs"] = frame.text.map(lambda t: repeated_paragraph_count(t, threshold))
    frame["repairs"] = frame.notes.map(lambda n: sum(v for k, v in n["output_checks"].items()
                                                     if k not in ("first_person_copies", "target_descriptions")))
    frame["words"] = frame.text.str.split().str.len()
    scores = Evaluator(params).score(frame, [EvalExample.from_rwg(e) for e in examples],
                                     metrics=["citation", "judge"], progress=False)
    for metric in ("citation_recall", "judge_overall"):
        values = scores[scores.metric == metric].set_index(["system", "example"])["value"]
        frame[metric] = [values.get((row.system, row.example)) for row in frame.itertuples()]
    frame["tokens_in"], frame["tokens_out"] = frame.prompt_tokens, frame.completion_tokens
    columns = ["cited_share", "citation_recall", "repeated_paragraphs", "repairs", "words", "judge_overall",
               "calls", "tokens_in", "tokens_out", "wall_s"]
    table = frame.groupby("system", sort=False)[columns].mean(numeric_only=True)
    pd.set_option("display.width", 200)
    print(f"model: {client.model} (writer and judge) · targets: {len(examples)} evaluation targets of the "
          f"{params['data']['source']} data · CREW rounds: {params['baselines']['crew']['rounds']}")
    print(table.round(3).to_string())
    if {"crew", "long_context"} <= set(table.index):
        ratio = (table.loc["crew"] / table.loc["long_context"]).round(2)
        print("crew / long_context:", ratio.to_dict())
    print("missing judgements:", len(scores.attrs["missing"]))


if __name__ == "__main__":
    main()
