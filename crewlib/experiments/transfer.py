"""Notebook 06: one trained controller, several inference LLMs (the paper's transfer experiment).

The controller never changes (``baselines.crew.checkpoint``, trained once); each backbone of
``transfer.backbones`` — overrides of the ``llm`` block: another embedded model, or any
OpenAI-compatible endpoint — writes with CREW and with the systems it is compared against
(``transfer.systems``, long context in the paper) on the same targets. Every backbone's sections
are scored by the same judges (``eval.judges`` of the base params), so a difference between
backbones is the writer's, not the judge's. Generations are resumable, one folder per backbone.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import pandas as pd

from crewlib.config import resolve_path, with_overrides
from crewlib.data.records import RWGExample
from crewlib.eval import EvalExample, Evaluator
from crewlib.experiments import paper
from crewlib.experiments.run import run_generations
from crewlib.experiments.tables import ci_cell, metric_summary
from crewlib.llm import connect
from crewlib.tasks import build_tasks

COLUMNS = {"judge_overall": "Overall", "judge_coverage": "Coverage", "judge_logic": "Logic",
           "judge_relevance": "Relevance", "citation_verification": "citation verification",
           "citation_recall": "citation recall"}


@dataclass
class Transfer:
    generations: pd.DataFrame  # backbone, system, example, text, cost columns, error
    scores: pd.DataFrame  # backbone, system, example, metric, value
    examples: list[RWGExample]
    judges: list[str]
    models: dict[str, str]  # backbone → the model name its client reported

    def _by_run(self) -> pd.DataFrame:
        """The summary keyed by ``run`` = "backbone\tsystem"."""
        return metric_summary(self.scores.assign(run=self.scores.backbone + "\t" + self.scores.system), by="run")

    def summary(self) -> pd.DataFrame:
        """``backbone, system, metric, n, mean, ci_low, ci_high``."""
        summary = self._by_run()
        summary[["backbone", "system"]] = summary.pop("run").str.split("\t", expand=True)
        return summary[["backbone", "system", "metric", "n", "mean", "ci_low", "ci_high"]]

    def table(self) -> pd.DataFrame:
        """One row per backbone × system: judge scores and citations with CIs, cost, drafts."""
        summary = self._by_run().set_index(["run", "metric"])
        rows = []
        for (backbone, system), part in self.generations.groupby(["backbone", "system"], sort=False):
            done = part[part.text.notna()]
            row = {"backbone": backbone, "model": self.models.get(backbone, backbone), "system": system,
                   "drafts": f"{len(done)}/{len(part)}"}
            row.update({label: ci_cell(summary, f"{backbone}\t{system}", metric, 2)
                        for metric, label in COLUMNS.items()})
            row.update({"tokens in": done.prompt_tokens.mean(), "tokens out": done.completion_tokens.mean(),
                        "LLM calls": done.calls.mean()})
            rows.append(row)
        return pd.DataFrame(rows).set_index(["backbone", "system"])

    def crew_minus(self, other: str = "long_context", metric: str = "judge_overall") -> pd.DataFrame:
        """Per backbone: CREW's mean, the other system's, and the difference (ours), the paper's beside."""
        mean = self.summary().set_index(["backbone", "system", "metric"])["mean"]
        rows = []
        for backbone in dict.fromkeys(self.generations.backbone):
            crew, base = (mean.get((backbone, s, metric), float("nan")) for s in ("crew", other))
            rows.append({"backbone": backbone, "model": self.models.get(backbone, backbone), other: base,
                         "crew": crew, "crew − " + other: crew - base})
        ours = pd.DataFrame(rows)
        theirs = pd.DataFrame([{"backbone": f"{name} (paper)", "model": name, other: v[0], "crew": v[1],
                                "crew − " + other: (v[1] - v[0]) if v[0] is not None else float("nan")}
                               for name, v in paper.TRANSFER.items()])
        return pd.concat([ours, theirs], ignore_index=True).set_index("backbone")

    def headline(self) -> dict:
        return {"backbones": list(dict.fromkeys(self.generations.backbone)), "models": self.models,
                "examples": [e.target_id for e in self.examples], "judges": self.judges,
                "summary": self.summary(), "crew_minus_long_context": self.crew_minus().reset_index(),
                "drafts": self.generations.assign(ok=self.generations.text.notna()).groupby(
                    ["backbone", "system"]).ok.sum().reset_index()}


def run_transfer(params: dict, *, backbones: Sequence[str] | None = None, systems: Sequence[str] | None = None,
                 targets: int | None = None, metrics: Sequence[str] = ("citation", "judge"),
                 out_dir: str | Path | None = None, progress: bool = False) -> Transfer:
    """Every backbone writes with every system on the first ``targets`` evaluation papers; one judge set scores all."""
    settings = params["transfer"]
    configured = {b["name"]: b["llm"] for b in settings["backbones"]}
    names = list(backbones or configured)
    unknown = [n for n in names if n not in configured]
    if unknown:
        raise KeyError(f"unknown backbones {unknown}; transfer.backbones has {list(configured)}")
    taskset = build_tasks(params)
    pairs = taskset.evaluation[:targets] if targets else taskset.evaluation
    examples = [e for e, _ in pairs]
    root = resolve_path(out_dir or settings["out_dir"])
    evaluator = Evaluator(params)  # the base params' judges: the same for every backbone
    eval_examples = [EvalExample.from_rwg(e) for e in examples]
    frames, scores, models = [], [], {}
    for name in names:
        bparams = with_overrides(params, {"llm": configured[name]})
        client = connect(bparams)
        same = [other for other, model in models.items() if model == client.model]
        if same:  # an environment override (CREW_LLM_MODEL, CREW_EMBEDDED_MODEL) wins over every backbone's block
            raise ValueError(f"backbones {same[0]!r} and {name!r} both resolve to model {client.model!r}: unset "
                             "CREW_LLM_BASE_URL / CREW_LLM_MODEL / CREW_EMBEDDED_MODEL, which override every backbone")
        models[name] = client.model
        generations = run_generations(list(systems or settings["systems"]), examples, bparams, client,
                                      tasks={t.target_id: t for _, t in pairs}, out_dir=root / _slug(name),
                                      progress=progress)
        frame = generations.frame()
        frames.append(frame.assign(backbone=name))
        scores.append(evaluator.score(frame, eval_examples, metrics=list(metrics), progress=progress)
                      .assign(backbone=name))
    return Transfer(pd.concat(frames, ignore_index=True), pd.concat(scores, ignore_index=True), examples,
                    [j.name for j in evaluator.judges], models)


def _slug(name: str) -> str:
    return "".join(c if c.isalnum() or c in ".-" else "_" for c in name)
