"""Notebook 05's experiment: every system on the evaluation split, scored, beside the paper.

``run_main_results(params, ...)`` generates (resumable), scores with the evaluation suite, and
measures how well each configured judge tells the gold section from damaged copies of it
(:mod:`.discrimination`); the :class:`MainResults` it returns builds CREW's table, the RWGBench
and MA-RWG metric tables, CREW-minus-SRW differences as the paper states them, and the headline
numbers a test reads. Also a command line for recording a run in parts::

    python -m crewlib.experiments.main_results --params quick --systems crew,srw
"""

from __future__ import annotations

import argparse
import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path

import pandas as pd

from crewlib.baselines import SYSTEMS
from crewlib.config import load_params, resolve_path
from crewlib.data.loaders import SAMPLE_FILES, load_oarelatedwork
from crewlib.data.records import RWGExample
from crewlib.eval import EvalExample, Evaluator
from crewlib.eval.instrument import instrument_settings
from crewlib.eval.text_metrics import BERTSCORE_LABEL
from crewlib.experiments import discrimination, paired, paper, real_discrimination
from crewlib.experiments.run import Generations, run_generations
from crewlib.experiments.tables import beside_paper, metric_summary, results_table
from crewlib.llm import connect
from crewlib.schema import InstrumentBlock, Params
from crewlib.tasks import build_tasks, evaluation_pairs

CREW_TABLE = {"judge_coverage": "Coverage", "judge_logic": "Logic", "judge_relevance": "Relevance",
              "judge_overall": "Overall", "citation_verification": "citation verification"}
RWGBENCH_TABLE = {"citation_precision": "citation precision", "citation_recall": "citation recall",
                  "soft_recall_cosine": "soft recall (cosine)", "soft_recall": "soft recall (NLI)",
                  "claim_support": "claim support", "topical_relevance": "topical relevance",
                  "citation_density_ratio": "density ratio", "citation_balance": "balance", "pss": "PSS",
                  "frame_alignment": "frame alignment", "rougeL": "ROUGE-L", "bertscore_minilm_f1": "BERTScore*",
                  "rwgbench_judge_score": "judge score"}
MARWG_TABLE = {"clap": "ClaP", "citp": "CitP", "rc": "RC", "cc": "CC", "tq": "TQ", "sn_p": "SN-P", "sn_r": "SN-R",
               "sn_f1": "SN-F1"}
# Which metric group computes which metric (a group not run shows "not run" in its columns)
GROUP_OF = {"soft_recall": "soft_recall", "claim_support": "claim_support", "clap": "claim_support",
            "citp": "claim_support", "frame_alignment": "frame_alignment", "rwgbench_judge_score": "rwgbench_judge",
            "tq": "tq", "rougeL": "rouge", "bertscore_minilm_f1": "bertscore", "pss": "pss", "sn_p": "sn",
            "sn_r": "sn", "sn_f1": "sn", "soft_recall_cosine": "soft_recall_cosine",
            "topical_relevance": "topical_relevance", **{m: "judge" for m in CREW_TABLE if m.startswith("judge_")}}


@dataclass
class MainResults:
    generations: Generations
    scores: pd.DataFrame
    examples: list[RWGExample]
    metrics: tuple[str, ...]  # the metric groups run
    ours: dict  # our conditions
    instrument: discrimination.InstrumentCheck | None  # the instruments on gold vs damaged (None: not measured)
    systems: tuple[str, ...]
    paired: pd.DataFrame | None = None  # the instrument's verdicts on (CREW, system) per paper
    real: pd.DataFrame | None = None  # the composite without the LLM on real sections (real_discrimination.measured)
    only: Mapping[str, Sequence[str]] = field(default_factory=dict)  # experiments.metric_systems: group -> systems

    @cached_property
    def frame(self) -> pd.DataFrame:
        return self.generations.frame()

    def _table(self, labels: Mapping[str, str]) -> pd.DataFrame:
        table = results_table(self.scores, self.frame, labels, systems=self.systems)
        for metric, label in labels.items():
            group = GROUP_OF.get(metric, "citation")
            if group not in self.metrics:
                table[label] = f"not run ({group})"
            elif group in self.only:
                others = [s for s in table.index if s not in self.only[group]]
                table.loc[others, label] = f"not run ({group}: {', '.join(self.only[group])} only)"
        return table

    def crew_table(self) -> pd.DataFrame:
        """CREW's main table: judge dimensions, citation verification, cost; the paper's numbers beside."""
        return beside_paper(self._table(CREW_TABLE), paper.paper_cells(paper.MAIN, CREW_TABLE),
                            percent=["citation verification"])

    def rwgbench_table(self) -> pd.DataFrame:
        return self._table(RWGBENCH_TABLE).drop(columns=["LLM calls", "LLM s"])

    def marwg_table(self) -> pd.DataFrame:
        """MA-RWG's metrics; MA-RWG's own paper numbers (its benchmark, its backbone) beside our MA-RWG row."""
        table = self._table({**MARWG_TABLE})
        cells = {("marwg", MARWG_TABLE[m]): v for m, v in paper.MARWG.items() if m in MARWG_TABLE}
        cells[("marwg", "LLM s")] = paper.MARWG["wall_s"]
        return beside_paper(table, cells, digits=3)

    def conditions(self, *papers: Mapping) -> pd.DataFrame:
        return paper.conditions(self.ours, *(papers or (paper.CREW_PAPER,)))

    def crew_minus_srw(self) -> pd.DataFrame:
        """CREW − SRW as the paper states it (Overall points, verification points, tokens relative), ours beside."""
        mean = metric_summary(self.scores).set_index(["system", "metric"])["mean"]
        frame = self.frame[self.frame.text.notna()]
        tokens = (frame.prompt_tokens + frame.completion_tokens).groupby(frame.system).mean()
        ours = {}
        for metric in ("judge_overall", "citation_verification"):
            have = ("crew", metric) in mean.index and ("srw", metric) in mean.index
            ours[metric] = mean["crew", metric] - mean["srw", metric] if have else float("nan")
        ours["tokens_relative"] = (tokens["crew"] / tokens["srw"] - 1 if "crew" in tokens and "srw" in tokens
                                   and tokens["srw"] else float("nan"))
        names = {"judge_overall": "Overall (points)", "citation_verification": "citation verification (points)",
                 "tokens_relative": "tokens (relative)"}
        return pd.DataFrame([{"CREW − SRW": names[k], "ours": ours[k], "paper": v}
                             for k, v in paper.CREW_MINUS_SRW.items()]).set_index("CREW − SRW")

    @property
    def discrimination(self) -> pd.DataFrame | None:
        """Per judge, instrument and damage: pairs, the share ranked correctly and of ties; the sample's sets
        (this run) and, after them, the real sets as last measured (``real``), each labelled in ``papers``."""
        parts = [t for t in (None if self.instrument is None else self.instrument.table, self.real) if t is not None]
        return pd.concat(parts, ignore_index=True) if parts else None

    def discrimination_summary(self) -> pd.DataFrame | None:
        table = self.discrimination
        return None if table is None else discrimination.summary_of(table)

    def paired_table(self) -> pd.DataFrame | None:
        """CREW against each system, paper by paper, on the instrument; the paper's Overall difference beside."""
        if self.paired is None or self.paired.empty:
            return None
        differences = {s: paper.MAIN["crew", "judge_overall"] - v for (s, m), v in paper.MAIN.items()
                       if m == "judge_overall" and s != "crew"} | {"srw": paper.CREW_MINUS_SRW["judge_overall"]}
        return paired.paired_table(self.paired, paper_differences=differences)

    def paired_conclusion(self, table: pd.DataFrame | None = None) -> str:
        table = self.paired_table() if table is None else table
        if table is None:
            return "No paired comparison: CREW or the other systems wrote nothing to compare."
        return paired.conclusion(table, paired.discrimination_basis(self.discrimination))

    def headline(self) -> dict:
        """What the notebook records: per system and metric mean/CI/n, counts, conditions, discrimination."""
        summary = metric_summary(self.scores)
        paired_table = self.paired_table()
        return {
            "systems": list(self.systems), "examples": [e.target_id for e in self.examples],
            "metric_groups": list(self.metrics), "metric_systems": {g: list(s) for g, s in self.only.items()},
            "conditions": self.ours,
            "drafts": {s: int(self.frame[(self.frame.system == s)].text.notna().sum()) for s in self.systems},
            "errors": {s: sorted(set(self.frame[(self.frame.system == s) & self.frame.text.isna()].error.astype(str)))
                       for s in self.systems},
            "summary": summary,
            "unavailable": len(self.scores.attrs.get("unavailable", [])),
            "missing_judgements": len(self.scores.attrs.get("missing", [])),
            "discrimination": self.discrimination_summary(),
            "instrument_consistency": None if self.instrument is None else self.instrument.consistency,
            "instrument_skipped": None if self.instrument is None else self.instrument.skipped,
            "paired": None if paired_table is None else paired_table.reset_index(),
            "paired_conclusion": self.paired_conclusion(paired_table),
            "bertscore_label": BERTSCORE_LABEL,
        }


def run_main_results(params: Params, *, systems: Sequence[str] = tuple(SYSTEMS), targets: int | None = None,
                     metrics: Sequence[str] | None = None, out_dir: str | Path, judge_check: bool = True,
                     progress: bool = False) -> MainResults:
    """Generate (resumable in ``out_dir``), score and measure the judges; ``targets``: the first N of the split.

    ``metrics``: the evaluation suite's groups; default ``experiments.metrics`` of the params.
    """

    metrics = tuple(metrics or params.experiments.metrics)
    pairs = evaluation_pairs(params, targets)
    examples = [e for e, _ in pairs]
    client = connect(params)
    generations = run_generations(list(systems), examples, params, client, tasks={t.target_id: t for _, t in pairs},
                                  out_dir=out_dir, progress=progress)
    evaluator = Evaluator(params)
    eval_examples = [EvalExample.from_rwg(e) for e in examples]
    frame = generations.frame()
    scores = score_groups(evaluator, frame, eval_examples, metrics, params.experiments.metric_systems,
                          progress=progress)
    checked, found = None, None
    if judge_check:
        checked = measure_instrument(params, eval_examples, judges=evaluator.judges, progress=progress)
        if "crew" in systems:
            found = paired.compare_on_instrument(params, frame, scores, eval_examples, systems, evaluator=evaluator,
                                                 progress=progress)
    judges = [j.name for j in evaluator.judges]
    rounds = ", ".join(f"{s} {getattr(params.baselines, s).rounds}" for s in ("crew", "orchestrator", "srw")
                       if s in systems)
    ours = paper.our_conditions(params, model=client.model, papers=len(examples), judges=judges,
                                systems_rounds=rounds)
    return MainResults(generations, scores, examples, tuple(metrics), ours, checked, tuple(systems), found,
                       real_discrimination.measured(), dict(params.experiments.metric_systems))


def score_groups(evaluator: Evaluator, frame: pd.DataFrame, examples: Sequence[EvalExample], metrics: Sequence[str],
                 only: Mapping[str, Sequence[str]], *, progress: bool = False) -> pd.DataFrame:
    """The suite's ``metrics`` groups on every system's sections, except a group of ``only``
    (``experiments.metric_systems``), scored on the sections of its systems only; a group of ``only`` that is not
    among ``metrics`` (a run the user narrowed) is not run."""
    only = {group: systems for group, systems in only.items() if group in metrics}
    everywhere = [g for g in metrics if g not in only]
    parts = [evaluator.score(frame, examples, metrics=everywhere, progress=progress)] if everywhere else []
    parts += [evaluator.score(frame[frame.system.isin(systems)], examples, metrics=[group], progress=progress)
              for group, systems in only.items()]
    scores = pd.concat(parts, ignore_index=True) if parts else pd.DataFrame()
    if parts:  # what could not be computed, per part; the missing answers and judgements accumulate in the evaluator
        scores.attrs.update(parts[-1].attrs)
        scores.attrs["unavailable"] = [u for part in parts for u in part.attrs.get("unavailable", [])]
        scores.attrs["timing_s"] = {g: t for part in parts for g, t in part.attrs.get("timing_s", {}).items()}
    return scores


def absolute_judged(settings: InstrumentBlock, evaluation: Sequence[EvalExample]) -> bool | set[str]:
    """The papers whose discrimination pairs the absolute 1–5 judge scores (``instrument.absolute_papers``): all
    (True) or the evaluation targets' ids."""
    return settings.absolute_papers == "all" or {e.example_id for e in evaluation}


def measure_instrument(params: Params, evaluation: Sequence[EvalExample], *, judges=None, absolute: bool = True,
                       progress: bool = False) -> discrimination.InstrumentCheck:
    """The discrimination test on each set of ``instrument.papers``, measured apart (rows labelled by set when
    there are several); the absolute judge on the pairs ``instrument.absolute_papers`` names (``absolute``:
    False, none)."""
    settings = instrument_settings(params)
    checks = {}
    for name in settings.papers:
        examples = discrimination_examples(params, evaluation, name)
        judged = absolute and absolute_judged(settings, evaluation)
        if isinstance(judged, set):  # the evaluation targets among this set's papers (the held-out set has none)
            judged &= {e.example_id for e in examples}
        checks[name] = discrimination.instrument_discrimination(params, examples, judges=judges, absolute=judged,
                                                                progress=progress)
    return next(iter(checks.values())) if len(checks) == 1 else discrimination.InstrumentCheck.combine(checks)


def discrimination_examples(params: Params, evaluation: Sequence[EvalExample], papers: str) -> list[EvalExample]:
    """The papers of one discrimination set: the evaluation targets (``evaluation``), every paper of the data with
    a gold section (``all``: training targets too), or the held-out papers written after the instrument was
    designed (``holdout``: the bundled ``instrument_holdout.jsonl``)."""
    if papers == "evaluation":
        return list(evaluation)
    if papers == "holdout":
        rows, _ = load_oarelatedwork(SAMPLE_FILES["instrument_holdout"])
        return [EvalExample.from_rwg(e) for e in rows if e.gold_related_work.strip()]
    return [EvalExample.from_rwg(e) for e in build_tasks(params).examples.values() if e.gold_related_work.strip()]


def quality_vs_tokens(results: MainResults, metric: str | None = None) -> pd.DataFrame:
    """Per system: the mean of one quality metric (with its CI) and mean tokens per section, for the figure.

    ``metric``: default the judge's Overall when it was run, else citation recall; systems without it are left out.
    """
    mean = metric_summary(results.scores).set_index(["system", "metric"])
    metric = metric or ("judge_overall" if "judge_overall" in mean.index.get_level_values(1) else "citation_recall")
    frame = results.frame[results.frame.text.notna()]
    rows = []
    for system, part in frame.groupby("system", sort=False):
        if (system, metric) not in mean.index:
            continue
        s = mean.loc[(system, metric)]
        rows.append({"system": system, "tokens": float((part.prompt_tokens + part.completion_tokens).mean()),
                     "quality": float(s["mean"]), "ci_low": s["ci_low"], "ci_high": s["ci_high"], "metric": metric})
    return pd.DataFrame(rows, columns=["system", "tokens", "quality", "ci_low", "ci_high", "metric"])


def main() -> None:
    parser = argparse.ArgumentParser(description="Record (or resume) notebook 05's generations and judgements.")
    parser.add_argument("--params", default="quick")
    parser.add_argument("--systems", default=",".join(SYSTEMS))
    parser.add_argument("--metrics", default=None, help="comma-separated groups (default: experiments.metrics)")
    parser.add_argument("--targets", type=int, default=None)
    parser.add_argument("--cache-dir", default="notebooks/llm_cache")
    parser.add_argument("--out-dir", default="outputs/05_main_results")
    parser.add_argument("--no-judge-check", action="store_true")
    args = parser.parse_args()
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    params = load_params(args.params, {"llm": {"cache_dir": args.cache_dir}})
    results = run_main_results(params, systems=args.systems.split(","), targets=args.targets,
                               metrics=args.metrics.split(",") if args.metrics else None,
                               out_dir=resolve_path(args.out_dir), judge_check=not args.no_judge_check, progress=True)
    pd.set_option("display.width", 250)
    print(results.crew_table().to_string())
    print(f"{sum(g.ok for g in results.generations)} of {len(results.generations)} generations written")


if __name__ == "__main__":
    main()
