"""Notebook 08's surrogate experiments: the paper's ablations, retrained, and the number of agents.

**Ablations** (the paper's ablation table): each variant of ``ablations.variants`` — overrides of
the ``env`` block, e.g. ``masked_features: [social]``, ``reward: {draft: 0.0}``,
``disabled_actions: [critique]`` — and CREW itself are trained with IPPO and the surrogate
executor once per seed of ``ablations.seeds`` (resumable: one folder per variant and seed, named
with a fingerprint of the settings a training depends on, so a changed variant trains anew), then
played on the held-out papers. A variant keeps its own observations and actions when it is
evaluated, but every variant is scored with the *full* reward, so returns compare (a controller
trained without the draft-quality term is still judged on the draft). Reported: return, final
draft quality, citation verification of the final draft and the share of each action, per
variant with a bootstrap 95% CI over episodes.

**Agents** (paper Appendix E): one trained controller (the policy is per agent) plays teams of
each size in ``ablations.agents`` on the held-out papers: return, draft quality, executor actions
per paper (the surrogate's stand-in for LLM calls) and seconds per episode.

These are surrogate results, never LLM results: every table carries ``executor = surrogate``.

**With the LLM** (:func:`run_llm_ablations`): the first seed's trained controller of each variant
(shipped in ``ablations.llm.checkpoints`` by :func:`ship_checkpoints`; CREW's is the shipped
controller, which the first seed's CREW training reproduces) writes with the LLM executor on the
evaluation papers, in the variant's own observations and actions; and the shipped controller writes
with teams of ``ablations.llm.agents``. Scored by the judges and the citation metrics.
"""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path

import numpy as np
import pandas as pd

from crewlib.actions import ACTION_NAMES
from crewlib.config import params_fingerprint, resolve_path, with_overrides
from crewlib.env import CrewEnv, EnvConfig, SurrogateExecutor
from crewlib.env.policies import run_episode
from crewlib.experiments import paper
from crewlib.experiments.run import folder_name
from crewlib.experiments.tables import ci_cell, metric_summary
from crewlib.rl import IPPOConfig, PolicyController, build_training_env, train
from crewlib.rl.controller import same_weights
from crewlib.schema import Params

FULL = "CREW"  # the variant without overrides
METRICS = ("return", "draft quality", "citation verification")


def variant_params(params: Params, variant: str) -> Params:
    """The params of one variant: the base params with its ``env`` overrides (validated)."""
    if variant == FULL:
        return with_overrides(params, {})
    variants = params.ablations.variants
    if variant not in variants:
        raise KeyError(f"unknown ablation variant {variant!r}; known: {[FULL, *variants]}")
    return with_overrides(params, {"env": variants[variant]})


def evaluation_config(params: Params, variant: str) -> EnvConfig:
    """The variant's observations and actions, scored with the base params' full reward."""
    own = EnvConfig.from_params(variant_params(params, variant))
    return dataclasses.replace(own, weights=EnvConfig.from_params(params).weights)


def play(env: CrewEnv, make_policy: Callable[[int], object], indices: Sequence[int], seeds: Sequence[int],
         **labels) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Episodes of ``make_policy(seed)`` on each example index × seed: one row per episode, one per action."""
    rows, actions = [], []
    for index in indices:
        for seed in seeds:
            t0 = time.perf_counter()
            ret = run_episode(env, make_policy(seed), seed=seed, example_index=index)
            trace = env.trace
            rows.append({**labels, "paper": index, "seed": seed, "return": ret,
                         "draft quality": trace.totals["final_quality"]["draft"],
                         "citation verification": trace.citation_check.get("verification", np.nan),
                         "executor actions": sum(a is not None for r in trace.rounds for a in r["actions"].values()),
                         "seconds": time.perf_counter() - t0})
            actions += [{**labels, "round": r["t"], "action": ACTION_NAMES[a]}
                        for r in trace.rounds for a in r["actions"].values() if a is not None]
    return pd.DataFrame(rows), pd.DataFrame(actions)


def sampled(net, cfg: IPPOConfig, n_agents: int) -> Callable[[int], PolicyController]:
    """seed → the trained network as a sampling policy seeded with it (one per evaluation episode)."""
    return lambda seed: PolicyController(net, cfg, n_agents, greedy=False, seed=seed)


@dataclass
class Ablations:
    episodes: pd.DataFrame  # variant, train_seed, paper, seed, return, draft quality, ...
    actions: pd.DataFrame  # variant, train_seed, round, action
    training: pd.DataFrame  # variant, train_seed, update, mean_return, ... (the training curves)

    def summary(self) -> pd.DataFrame:
        """Per variant and metric: mean with a bootstrap 95% CI over episodes, and n."""
        return self._summary.copy()

    @cached_property
    def _summary(self) -> pd.DataFrame:  # bootstrapped once
        return _summarise(self.episodes, "variant", METRICS)

    def action_shares(self) -> pd.DataFrame:
        """Per variant: the share of each action over every agent-round of its evaluation episodes."""
        shares = pd.crosstab(self.actions["variant"], self.actions["action"], normalize="index")
        return shares.reindex(columns=list(ACTION_NAMES), fill_value=0.0).reindex(self.variants)

    @property
    def variants(self) -> list[str]:
        return list(dict.fromkeys(self.episodes["variant"]))

    def table(self) -> pd.DataFrame:
        """One row per variant: each metric as ``mean [95% CI]``, the action shares, the paper's finding beside."""
        summary = self.summary().set_index(["variant", "metric"])
        shares = self.action_shares()
        rows = []
        for variant in self.variants:
            row = {"variant": variant, **{m: ci_cell(summary, variant, m, 3) for m in METRICS}}
            row.update({f"{a} share": round(float(shares.loc[variant, a]), 3) for a in shares.columns})
            row["training seeds"] = len(set(self.episodes[self.episodes.variant == variant].train_seed))
            row[paper.PAPER_LABEL] = paper.ABLATIONS.get(variant, "—")
            rows.append(row)
        return pd.DataFrame(rows).set_index("variant")

    def headline(self) -> dict:
        return {"summary": self.summary(), "action_shares": self.action_shares().reset_index(),
                "train_seeds": sorted(set(self.episodes["train_seed"])), "executor": "surrogate"}


def run_ablations(params: Params, *, variants: Sequence[str] | None = None, out_dir: str | Path | None = None,
                  progress: bool = False) -> Ablations:
    """Train every variant once per seed with the surrogate (resumable) and play it on the held-out papers."""
    settings = params.ablations
    variants = list(variants or [FULL, *settings.variants])
    root = resolve_path(out_dir or settings.out_dir)
    episodes, actions, curves = [], [], []
    base = _surrogate(params)
    for variant in variants:
        vparams = variant_params(base, variant)
        env, train_idx, eval_idx = build_training_env(vparams)
        eval_env = CrewEnv(env.examples, SurrogateExecutor(), evaluation_config(base, variant),
                           tasks=[env.task(i) for i in range(len(env.examples))])
        for seed in settings.seeds:
            cfg = IPPOConfig.from_params(vparams).replace(seed=seed)
            # named with what the training depends on: a changed variant or setting trains anew, never resumes
            folder = training_folder(root, vparams, variant, seed)
            net, _ = train(env, train_idx, cfg, folder, progress=progress)
            rows, acts = play(eval_env, sampled(net, cfg, eval_env.config.n_agents), eval_idx,
                              range(settings.eval_episodes), variant=variant, train_seed=seed)
            episodes.append(rows)
            actions.append(acts)
            curves.append(pd.read_csv(folder / "metrics.csv").assign(variant=variant, train_seed=seed))
    return Ablations(pd.concat(episodes, ignore_index=True), pd.concat(actions, ignore_index=True),
                     pd.concat(curves, ignore_index=True))


def training_folder(root: Path, vparams: Params, variant: str, seed: int) -> Path:
    """Where a variant's training for one seed lives: named with what the training depends on, so a
    changed variant or setting trains anew, never resumes."""
    fingerprint = params_fingerprint(vparams, ("data", "split", "graph", "features", "env", "ippo", "output"))
    return root / f"{folder_name(variant)}-{fingerprint[:8]}" / f"seed{seed}"


def ablated_checkpoint(params: Params, variant: str) -> Path:
    """The shipped controller of an ablation variant (the first training seed's), run with the LLM."""
    return resolve_path(params.ablations.llm.checkpoints) / f"{folder_name(variant)}.pt"


def ship_checkpoints(params: Params, *, variants: Sequence[str] | None = None,
                     out_dir: str | Path | None = None) -> dict[str, Path]:
    """Copy each variant's first-seed controller from its training (:func:`run_ablations`) to
    ``ablations.llm.checkpoints``, without its optimiser state; returns variant → shipped path."""
    import torch

    from crewlib.rl.controller import read_checkpoint

    settings = params.ablations
    root, seed, base = resolve_path(out_dir or settings.out_dir), settings.seeds[0], _surrogate(params)
    shipped = {}
    for variant in variants if variants is not None else settings.variants:
        source = training_folder(root, variant_params(base, variant), variant, seed) / "checkpoint.pt"
        if not source.exists():
            raise FileNotFoundError(f"{source}: variant {variant!r} has no training for seed {seed}; run "
                                    "run_ablations (notebook 08) first")
        data = {k: v for k, v in read_checkpoint(source).items() if k not in ("optimizer", "generator_state")}
        target = ablated_checkpoint(params, variant)
        target.parent.mkdir(parents=True, exist_ok=True)
        torch.save(data, target)
        shipped[variant] = target
    return shipped


def llm_ablation_runs(params: Params, *, variants: Sequence[str] | None = None,
                      agents: Sequence[int] | None = None) -> dict[str, dict]:
    """label → params of every LLM run: CREW (the shipped controller), each variant with its shipped
    controller and its own ``env`` overrides, and the shipped controller with each team size of
    ``agents`` (default ``ablations.llm.agents``) other than ``env.n_agents`` (that team is CREW's row)."""
    from crewlib.rl.controller import controller_path

    runs = {}
    for variant in [FULL, *(variants if variants is not None else params.ablations.variants)]:
        checkpoint = controller_path(params) if variant == FULL else ablated_checkpoint(params, variant)
        if not checkpoint.exists():
            raise FileNotFoundError(f"{checkpoint}: no shipped controller for {variant!r}; train the ablations "
                                    "(notebook 08) and run `python -m crewlib.experiments.ablations --ship`")
        runs[variant] = with_overrides(variant_params(params, variant),
                                       {"baselines": {"crew": {"checkpoint": str(checkpoint)}}})
    team = int(params.env.n_agents)
    for m in agents if agents is not None else params.ablations.llm.agents:
        if int(m) != team:
            runs[f"{int(m)} agents"] = with_overrides(params, {"env": {"n_agents": int(m)}})
    return runs


def run_llm_ablations(params: Params, *, variants: Sequence[str] | None = None, agents: Sequence[int] | None = None,
                      targets: int | None = None, metrics: Sequence[str] = ("citation", "judge"),
                      out_dir: str | Path | None = None, progress: bool = False):
    """CREW of every :func:`llm_ablation_runs` run on the evaluation papers with the run's LLM, scored by the
    base params' judges; a :class:`~crewlib.experiments.transfer.Transfer` whose ``backbone`` column holds
    the run's label (a variant, or "M agents")."""
    from crewlib.experiments.transfer import run_labelled
    from crewlib.tasks import evaluation_pairs

    runs = llm_ablation_runs(params, variants=variants, agents=agents)
    root = resolve_path(out_dir or params.ablations.llm.out_dir)
    return run_labelled(params, runs, ["crew"], evaluation_pairs(params, targets), root, metrics, progress)


MARWG_FULL = "MA-RWG"  # MA-RWG with every component


def marwg_ablation_runs(params: Params, variants: Sequence[str] | None = None) -> dict[str, Params]:
    """MA-RWG's own ablation (its Table 2): label → params, the full pipeline first, then each variant of
    ``ablations.marwg.variants`` (overrides of ``baselines.marwg``)."""
    defined = params.ablations.marwg.variants
    unknown = [v for v in variants or () if v not in defined]
    if unknown:
        raise ValueError(f"unknown MA-RWG ablation(s) {unknown}; ablations.marwg.variants: {sorted(defined)}")
    chosen = list(variants) if variants else list(defined)
    return {MARWG_FULL: params} | {v: with_overrides(params, {"baselines": {"marwg": defined[v]}})
                                         for v in chosen}


def run_marwg_ablations(params: Params, *, variants: Sequence[str] | None = None, targets: int | None = None,
                        out_dir: str | Path | None = None, progress: bool = False):
    """MA-RWG and each of its ablated variants on the first ``targets`` evaluation papers (None:
    ``ablations.marwg.targets``) with the run's LLM, scored with ``ablations.marwg.metrics`` (CitP, ClaP and TQ
    are MA-RWG's own measures); a :class:`~crewlib.experiments.transfer.Transfer` whose ``backbone`` column holds
    the variant."""
    from crewlib.experiments.transfer import run_labelled
    from crewlib.tasks import evaluation_pairs

    settings = params.ablations.marwg
    root = resolve_path(out_dir or settings.out_dir)
    return run_labelled(params, marwg_ablation_runs(params, variants), ["marwg"],
                        evaluation_pairs(params, settings.targets if targets is None else targets), root,
                        settings.metrics, progress)


def marwg_ablation_table(run) -> pd.DataFrame:
    """One row per MA-RWG variant (mean [95% CI] of each metric, cost), what MA-RWG's paper reports beside."""
    columns = {"citp": "CitP", "clap": "ClaP", "tq": "TQ", "citation_recall": "citation recall",
               "citation_verification": "citation verification"}
    table = run.table(columns).droplevel("system").drop(columns=["model"]).rename_axis("variant")
    table["MA-RWG paper (its Table 2)"] = [paper.MARWG_ABLATIONS.get(v, "all components") if v != MARWG_FULL
                                           else "CitP 0.910, ClaP 0.900, TQ 4.046" for v in table.index]
    return table


def shipped_matches_training(params: Params, *, out_dir: str | Path | None = None) -> dict[str, bool]:
    """variant → whether its shipped controller has the weights of this run's first-seed training."""
    base, seed = _surrogate(params), params.ablations.seeds[0]
    root = resolve_path(out_dir or params.ablations.out_dir)
    return {v: same_weights(training_folder(root, variant_params(base, v), v, seed) / "checkpoint.pt",
                            ablated_checkpoint(params, v)) for v in params.ablations.variants}


def llm_ablation_tables(run, params: Params) -> tuple[pd.DataFrame, pd.DataFrame]:
    """(variants, team sizes) of a :func:`run_llm_ablations` result's table: the variants with the paper's
    finding beside; the team sizes (CREW's row is the ``env.n_agents`` team) indexed by the number of agents."""
    table = run.table().droplevel("system").drop(columns=["model"])
    variants = [label for label in table.index if not label.endswith(" agents")]
    by_variant = table.loc[variants].rename_axis("variant")
    by_variant[paper.PAPER_LABEL] = [paper.ABLATIONS.get(v, "—") for v in variants]
    team = f"{params.env.n_agents} agents"
    teams = table.drop(index=[v for v in variants if v != FULL]).rename(index={FULL: team})
    teams.index = pd.Index([int(label.split()[0]) for label in teams.index], name="agents")
    return by_variant, teams.sort_index()


def run_agent_counts(params: Params, *, controller=None, counts: Sequence[int] | None = None) -> pd.DataFrame:
    """One trained controller (default: the shipped one) with teams of each size on the held-out papers.

    Returns one row per episode: agents, paper, seed, return, draft quality, citation verification,
    executor actions and seconds.
    """
    from crewlib.rl.controller import controller_path

    settings = params.ablations
    base = _surrogate(params)
    trained = controller or PolicyController.load(controller_path(params))
    frames = []
    for m in counts or settings.agents:
        env, _, eval_idx = build_training_env(with_overrides(base, {"env": {"n_agents": int(m)}}))
        rows, _ = play(env, sampled(trained.net, trained.cfg, trained.n_agents), eval_idx,
                       range(settings.eval_episodes), agents=m)
        frames.append(rows)
    return pd.concat(frames, ignore_index=True)


def agent_count_summary(episodes: pd.DataFrame) -> pd.DataFrame:
    """Per team size: mean and CI of return, draft quality, citation verification; mean executor actions (the
    episodes' seconds stay in ``episodes``: this run's wall time, not a result)."""
    table = _summarise(episodes, "agents", METRICS)
    cost = episodes.groupby("agents")[["executor actions"]].mean()
    return table.join(cost, on="agents")


def _summarise(frame: pd.DataFrame, by: str, metrics: Sequence[str]) -> pd.DataFrame:
    long = frame.melt(id_vars=[by], value_vars=list(metrics), var_name="metric", value_name="value")
    return metric_summary(long, by=by)


def _surrogate(params: Params) -> Params:
    return with_overrides(params, {"training": {"executor": "surrogate"}})


def main() -> None:
    import argparse
    import os

    from crewlib.config import load_params

    parser = argparse.ArgumentParser(description="Notebook 08 with the LLM: ship the ablated controllers, or record "
                                                 "(resume) their sections and the team sizes' with the LLM.")
    parser.add_argument("--params", default="quick")
    parser.add_argument("--cache-dir", default="notebooks/llm_cache")
    parser.add_argument("--ship", action="store_true",
                        help="copy each variant's first-seed controller to ablations.llm.checkpoints (after notebook "
                             "08 trained them)")
    parser.add_argument("--targets", type=int, default=None)
    args = parser.parse_args()
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    params = load_params(args.params, {"llm": {"cache_dir": args.cache_dir}})
    if args.ship:
        for variant, path in ship_checkpoints(params).items():
            print(f"{variant}: {path}")
        return
    run = run_llm_ablations(params, targets=args.targets, progress=True)
    pd.set_option("display.width", 250)
    print(run.table().to_string())


if __name__ == "__main__":
    main()


def llm_ablation_paired(run, params: Params) -> pd.DataFrame:
    """The full CREW against each ablated controller and team size of a :func:`run_llm_ablations` result, paper
    by paper, on the instrument (docs/method.md, "The instrument"): the verdicts, ``second`` the run's label."""
    from crewlib.eval import EvalExample
    from crewlib.experiments import paired

    frame = run.generations.assign(system=run.generations.backbone).drop(columns="backbone")
    scores = run.scores.assign(system=run.scores.backbone).drop(columns="backbone")
    labels = list(dict.fromkeys(frame.system))
    return paired.compare_on_instrument(params, frame, scores, [EvalExample.from_rwg(e) for e in run.examples],
                                        labels, reference=FULL)
