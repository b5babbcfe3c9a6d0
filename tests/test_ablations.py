"""Notebook 08's surrogate experiments: ablation variants retrained and evaluated, team sizes."""

from __future__ import annotations

import pytest

from crewlib.config import ParamsError, load_params
from crewlib.env import EnvConfig
from crewlib.experiments.ablations import (
    FULL,
    agent_count_summary,
    evaluation_config,
    run_ablations,
    run_agent_counts,
    variant_params,
)

TINY = {"ippo": {"train_epochs": 1}, "ablations": {"seeds": [0], "eval_episodes": 1}, "env": {"horizon": 4}}


def test_a_variant_is_the_base_params_with_its_env_overrides_and_is_scored_with_the_full_reward():
    params = load_params("quick")
    no_draft = variant_params(params, "w/o draft-quality reward")
    assert no_draft.env.reward.draft == 0.0 and params.env.reward.draft == 1.0  # base untouched
    assert variant_params(params, "w/o Critique").env.disabled_actions == ["critique"]
    assert variant_params(params, FULL).env == params.env
    config = evaluation_config(params, "w/o draft-quality reward")
    assert config.weights == EnvConfig.from_params(params).weights  # judged on the draft like every variant
    assert evaluation_config(params, "w/o social features").masked_features == ("social",)


def test_an_unknown_variant_or_an_invalid_override_is_a_clear_error():
    params = load_params("quick")
    with pytest.raises(KeyError, match="unknown ablation variant 'w/o Retrieve'"):
        variant_params(params, "w/o Retrieve")
    bad = load_params("quick", {"ablations": {"variants": {"typo": {"disabled_action": ["critique"]}}}})
    with pytest.raises(ParamsError, match="env.disabled_action: unknown setting"):
        variant_params(bad, "typo")


def test_each_variant_is_trained_per_seed_resumably_and_keeps_its_own_action_space(tmp_path):
    params = load_params("quick", TINY)
    run = run_ablations(params, variants=[FULL, "w/o Critique"], out_dir=tmp_path)
    assert run.variants == [FULL, "w/o Critique"]
    shares = run.action_shares()
    assert shares.loc["w/o Critique", "critique"] == 0 and shares.loc[FULL].sum() == pytest.approx(1.0)
    [checkpoint] = tmp_path.glob("w_o_critique-*/seed0/checkpoint.pt")
    stamp = checkpoint.stat().st_mtime_ns
    again = run_ablations(params, variants=[FULL, "w/o Critique"], out_dir=tmp_path)  # resumed: nothing to train
    assert checkpoint.stat().st_mtime_ns == stamp
    assert again.episodes.equals(run.episodes.assign(seconds=again.episodes.seconds))
    changed = load_params("quick", {**TINY, "ablations": {**TINY["ablations"], "variants": {
        "w/o Critique": {"disabled_actions": ["critique", "disseminate"]}}}})
    run_ablations(changed, variants=["w/o Critique"], out_dir=tmp_path)  # a new definition: a new training
    assert len(list(tmp_path.glob("w_o_critique-*/seed0/checkpoint.pt"))) == 2
    table = run.table()
    assert table.loc["w/o Critique", "paper (Qwen 2.5 72B, judges)"].startswith("Overall 2.58")
    assert table.loc[FULL, "training seeds"] == 1


def test_one_controller_plays_any_team_size_and_more_agents_take_more_actions():
    params = load_params("quick", TINY)
    episodes = run_agent_counts(params, counts=[2, 4])
    per_team = episodes.groupby("agents")["executor actions"].mean()
    assert per_team[2] == 2 * 4 and per_team[4] == 4 * 4  # every agent acts every round (horizon 4)
    summary = agent_count_summary(episodes)
    assert set(summary.metric) == {"return", "draft quality", "citation verification"}
    assert (summary["executor actions"] > 0).all()


def test_the_first_seeds_controllers_are_shipped_without_optimiser_state_and_run_with_the_llm(tmp_path):
    from crewlib.experiments.ablations import llm_ablation_runs, same_weights, ship_checkpoints
    from crewlib.rl import PolicyController
    from crewlib.rl.controller import controller_path, read_checkpoint

    params = load_params("quick", {**TINY, "ablations": {**TINY["ablations"], "llm": {
        "checkpoints": str(tmp_path / "shipped")}}})
    only = ["w/o Critique"]
    with pytest.raises(FileNotFoundError, match="no training for seed 0"):
        ship_checkpoints(params, variants=only, out_dir=tmp_path / "train")
    with pytest.raises(FileNotFoundError, match="--ship"):
        llm_ablation_runs(params, variants=only)
    run_ablations(params, variants=only, out_dir=tmp_path / "train")
    shipped = ship_checkpoints(params, variants=only, out_dir=tmp_path / "train")["w/o Critique"]
    [trained] = (tmp_path / "train").glob("w_o_critique-*/seed0/checkpoint.pt")
    assert same_weights(trained, shipped) and "optimizer" not in read_checkpoint(shipped)
    assert not same_weights(shipped, controller_path(params))
    PolicyController.load(shipped)  # loads as a controller
    runs = llm_ablation_runs(params, variants=only, agents=[2, 3, 6])
    assert list(runs) == [FULL, "w/o Critique", "2 agents", "6 agents"]  # 3 agents is CREW's own row
    assert runs[FULL].baselines.crew.checkpoint == str(controller_path(params))
    assert runs["w/o Critique"].baselines.crew.checkpoint == str(shipped)
    assert runs["w/o Critique"].env.disabled_actions == ["critique"]  # its own action space at inference
    assert runs["6 agents"].env.n_agents == 6 and runs["6 agents"].baselines.crew == params.baselines.crew


def test_the_same_training_matches_up_to_rounding_and_another_does_not(tmp_path):
    import torch

    from crewlib.experiments.ablations import same_weights
    from crewlib.rl.controller import controller_path, read_checkpoint

    shipped = controller_path(load_params("quick"))
    checkpoint = read_checkpoint(shipped)
    for name, shift in (("rounded", 3e-6), ("other", 1e-2)):
        checkpoint["model"] = {k: v + shift for k, v in read_checkpoint(shipped)["model"].items()}
        torch.save(checkpoint, tmp_path / f"{name}.pt")
    assert same_weights(shipped, tmp_path / "rounded.pt") and not same_weights(shipped, tmp_path / "other.pt")
