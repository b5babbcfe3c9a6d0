"""Notebook 06: one trained controller, several inference LLMs (the paper's transfer experiment).

The controller never changes (``baselines.crew.checkpoint``, trained once); each backbone of
``transfer.backbones`` — overrides of the ``llm`` block: another embedded model, or any
OpenAI-compatible endpoint — writes with CREW and with the systems it is compared against
(``transfer.systems``, long context in the paper) on the same targets. Every backbone's sections
are scored by the same judges (``eval.judges`` of the base params), so a difference between
backbones is the writer's, not the judge's. Generations are resumable, one folder per backbone.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path

import pandas as pd

from crewlib.config import resolve_path, with_overrides
from crewlib.data.records import RWGExample
from crewlib.eval import EvalExample, Evaluator
from crewlib.experiments import paired, paper
from crewlib.experiments.run import folder_name, run_generations
from crewlib.experiments.tables import ci_cell, metric_summary
from crewlib.llm import connect
from crewlib.schema import Params
from crewlib.tasks import evaluation_pairs

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
    paired: pd.DataFrame | None = None  # the instrument's verdicts on (CREW, system) per backbone and paper

    def paired_table(self) -> pd.DataFrame | None:
        """Per backbone: CREW against each other system, paper by paper, on the instrument (docs/method.md)."""
        if self.paired is None or self.paired.empty:
            return None
        return pd.concat({backbone: paired.paired_table(part) for backbone, part in
                          self.paired.groupby("backbone", sort=False)}, names=["backbone"])

    def paired_conclusion(self, discrimination: pd.DataFrame | None = None) -> str:
        table = self.paired_table()
        if table is None:
            return "No paired comparison: CREW or the other systems wrote nothing to compare."
        return " ".join(f"{backbone}: {paired.conclusion(part.droplevel(0), discrimination)}"
                        for backbone, part in table.groupby(level=0, sort=False))

    @cached_property
    def _by_run(self) -> pd.DataFrame:
        """The summary keyed by ``run`` = "backbone\tsystem" (bootstrapped once)."""
        return metric_summary(self.scores.assign(run=self.scores.backbone + "\t" + self.scores.system), by="run")

    def summary(self) -> pd.DataFrame:
        """``backbone, system, metric, n, mean, ci_low, ci_high``."""
        summary = self._by_run.copy()
        summary[["backbone", "system"]] = summary.pop("run").str.split("\t", expand=True)
        return summary[["backbone", "system", "metric", "n", "mean", "ci_low", "ci_high"]]

    def table(self, columns: Mapping[str, str] = COLUMNS) -> pd.DataFrame:
        """One row per backbone × system: the metrics of ``columns`` (metric → label; default the judge scores and
        citations) with CIs, cost, drafts.

        ``fallbacks``: actions per section that ended as a counted no-op (the backbone's JSON failed
        validation after the re-ask, nothing new to compose from, ...); ``words``: section length;
        ``LLM s``: the calls' seconds when their answers were produced, summed per section (a replayed
        run shows the recording's).
        """
        summary = self._by_run.set_index(["run", "metric"])
        rows = []
        for (backbone, system), part in self.generations.groupby(["backbone", "system"], sort=False):
            done = part[part.text.notna()]
            row = {"backbone": backbone, "model": self.models.get(backbone, backbone), "system": system,
                   "drafts": f"{len(done)}/{len(part)}"}
            row.update({label: ci_cell(summary, f"{backbone}\t{system}", metric, 2)
                        for metric, label in columns.items()})
            row.update({"tokens in": done.prompt_tokens.mean(), "tokens out": done.completion_tokens.mean(),
                        "LLM calls": done.calls.mean(), "LLM s": done.llm_s.mean(), "fallbacks": done.fallbacks.mean(),
                        "words": done.text.str.split().str.len().mean()})
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
                "paired": None if (table := self.paired_table()) is None else table.reset_index(),
                "drafts": self.generations.assign(ok=self.generations.text.notna()).groupby(
                    ["backbone", "system"]).ok.sum().reset_index()}


def run_transfer(params: Params, *, backbones: Sequence[str] | None = None, systems: Sequence[str] | None = None,
                 targets: int | None = None, metrics: Sequence[str] = ("citation", "judge"),
                 out_dir: str | Path | None = None, progress: bool = False) -> Transfer:
    """Every backbone writes with every system on the first ``targets`` evaluation papers; one judge set scores all."""
    settings = params.transfer
    configured = _backbones(params)
    names = list(backbones or configured)
    unknown = [n for n in names if n not in configured]
    if unknown:
        raise KeyError(f"unknown backbones {unknown}; transfer.backbones has {list(configured)}")
    pairs = evaluation_pairs(params, targets)
    runs = {name: with_overrides(params, {"llm": configured[name]}) for name in names}
    models = {name: connect(rparams).model for name, rparams in runs.items()}  # no call is made
    same = [(a, b) for i, a in enumerate(names) for b in names[i + 1:] if models[a] == models[b]]
    if same:  # an environment override (CREW_LLM_MODEL, CREW_EMBEDDED_MODEL) wins over every backbone's block
        a, b = same[0]
        raise ValueError(f"backbones {a!r} and {b!r} both resolve to model {models[a]!r}: unset "
                         "CREW_LLM_BASE_URL / CREW_LLM_MODEL / CREW_EMBEDDED_MODEL, which override every backbone")
    return run_labelled(params, runs, list(systems or settings.systems), pairs,
                    resolve_path(out_dir or settings.out_dir), metrics, progress)


def compare_controllers(params: Params, *, targets: int | None = None, metrics: Sequence[str] = ("citation", "judge"),
                        out_dir: str | Path | None = None, progress: bool = False) -> Transfer:
    """CREW with the shipped (surrogate-trained) controller and with the LLM-trained one, on one backbone.

    The backbone is ``transfer.llm_training.backbone``; the LLM-trained controller is
    ``transfer.llm_training.checkpoint`` (:func:`train_with_llm`). Rows are labelled by controller.
    """
    from crewlib.rl.controller import controller_path

    settings = params.transfer.llm_training
    llm = _backbone_llm(params, settings.backbone)
    runs = {f"{settings.backbone}, {label}": with_overrides(params, {"llm": llm, "baselines": {"crew": {
        "checkpoint": str(path)}}}) for label, path in (("surrogate-trained", controller_path(params)),
                                                         ("LLM-trained", resolve_path(settings.checkpoint)))}
    pairs = evaluation_pairs(params, targets)
    root = resolve_path(out_dir or params.transfer.out_dir) / "controllers"
    return run_labelled(params, runs, ["crew"], pairs, root, metrics, progress)


def train_with_llm(params: Params, *, out_dir: str | Path, progress: bool = False) -> Path:
    """The shipped controller trained further with the LLM executor on ``transfer.llm_training.backbone``.

    ``updates`` IPPO updates of ``ippo.episodes_per_update`` training papers each, episodes of
    ``rounds`` rounds, starting from the shipped controller's weights (resumable in ``out_dir``);
    the result is copied to ``transfer.llm_training.checkpoint``. Every executor call goes through
    the client and its cache, so a rerun with the recorded answers pays for nothing.
    """
    import math
    import shutil

    from crewlib.rl import IPPOConfig, build_training_env, train
    from crewlib.rl.controller import controller_path

    settings = params.transfer.llm_training
    tparams = with_overrides(params, {"llm": _backbone_llm(params, settings.backbone),
                                      "training": {"executor": "llm"}, "env": {"horizon": settings.rounds}})
    env, train_idx, _ = build_training_env(tparams)
    cfg = IPPOConfig.from_params(tparams)
    epochs = math.ceil(settings.updates * cfg.episodes_per_update / len(train_idx))
    cfg = cfg.replace(train_epochs=epochs)
    _, checkpoint = train(env, train_idx, cfg, out_dir, progress=progress, max_updates=settings.updates,
                          init=controller_path(params))
    target = resolve_path(settings.checkpoint)
    target.parent.mkdir(parents=True, exist_ok=True)
    if not _reproduced(checkpoint, target):  # a rerun that reproduces the training leaves a shipped file as it is
        shutil.copyfile(checkpoint, target)
    return target


def _reproduced(checkpoint: Path, target: Path) -> bool:
    """Whether ``target`` exists and holds ``checkpoint``'s weights (:func:`crewlib.rl.controller.same_weights`)."""
    from crewlib.rl.controller import same_weights

    return target.exists() and same_weights(checkpoint, target)


def _backbones(params: Params) -> dict[str, dict]:
    """``transfer.backbones`` as name → overrides of the llm block."""
    return {b.name: b.llm for b in params.transfer.backbones}


def _backbone_llm(params: Params, name: str) -> dict:
    configured = _backbones(params)
    if name not in configured:
        raise KeyError(f"unknown backbone {name!r}; transfer.backbones has {list(configured)}")
    return configured[name]


def run_labelled(params: Params, runs: dict[str, Params], systems: list[str], pairs, root: Path, metrics: Sequence[str],
                 progress: bool) -> Transfer:
    """Each run's params (a label → params) writes with ``systems``; the base params' judges score all.

    The label is the ``backbone`` column of the result (a backbone here; an ablation variant or a
    team size in :func:`crewlib.experiments.ablations.run_llm_ablations`); one resumable folder each.
    """
    examples = [e for e, _ in pairs]
    evaluator = Evaluator(params)  # the base params' judges: the same for every run
    eval_examples = [EvalExample.from_rwg(e) for e in examples]
    frames, scores, models, found = [], [], {}, []
    for label, rparams in runs.items():
        client = connect(rparams)
        models[label] = client.model
        generations = run_generations(systems, examples, rparams, client, tasks={t.target_id: t for _, t in pairs},
                                      out_dir=root / folder_name(label), progress=progress)
        frame = generations.frame()
        frames.append(frame.assign(backbone=label))
        scores.append(evaluator.score(frame, eval_examples, metrics=list(metrics), progress=progress)
                      .assign(backbone=label))
        if "crew" in systems and len(systems) > 1:  # CREW against the others on this backbone, on the instrument
            found.append(paired.compare_on_instrument(params, frame, scores[-1].drop(columns="backbone"),
                                                      eval_examples, systems, evaluator=evaluator,
                                                      progress=progress).assign(backbone=label))
    return Transfer(pd.concat(frames, ignore_index=True), pd.concat(scores, ignore_index=True), examples,
                    [j.name for j in evaluator.judges], models,
                    pd.concat(found, ignore_index=True) if found else None)


def main() -> None:
    import argparse
    import os

    from crewlib.config import load_params

    parser = argparse.ArgumentParser(description="Record (or resume) notebook 06: the transfer runs, or train the "
                                                 "controller further with the LLM executor.")
    parser.add_argument("--params", default="quick")
    parser.add_argument("--cache-dir", default="notebooks/llm_cache")
    parser.add_argument("--train-llm", action="store_true", help="train with transfer.llm_training and ship it")
    parser.add_argument("--out-dir", default="outputs/06_transfer")
    args = parser.parse_args()
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    params = load_params(args.params, {"llm": {"cache_dir": args.cache_dir}})
    if args.train_llm:
        shipped = train_with_llm(params, out_dir=resolve_path(args.out_dir) / "llm_training", progress=True)
        print(f"LLM-trained controller: {shipped}")
    else:
        print(run_transfer(params, out_dir=args.out_dir, progress=True).crew_minus().round(2).to_string())


if __name__ == "__main__":
    main()
