"""The faithful parts: tasks from the citation graph, one controller module, the params schema, switches."""

from __future__ import annotations

import pickle
from pathlib import Path

import numpy as np
import pydantic
import pytest
import torch
from quick_settings import env_config

from crewlib.config import PROJECT_ROOT, ParamsError, load_params
from crewlib.env import CrewEnv, EnvConfig, SurrogateExecutor
from crewlib.env.llm_executor import LLMExecutor
from crewlib.env.observation import FEATURE_GROUPS, FEATURE_NAMES
from crewlib.env.policies import FIXED_SCHEDULE, FixedSchedule, run_episode
from crewlib.llm.settings import llm_config, llm_settings
from crewlib.rl import ControllerError, IPPOConfig, PolicyController, build_training_env
from crewlib.rl.controller import build_network, save_checkpoint
from crewlib.rl.ippo import minibatch_indices
from crewlib.sections import OutputChecks
from crewlib.tasks import build_tasks

QUICK = load_params("quick")


@pytest.fixture(scope="module")
def tasks():
    return build_tasks(QUICK)


# ------------------------------------------------------------------ tasks: graph, filter, centrality
def test_every_feature_varies_over_the_evaluation_targets_first_rounds(tasks):
    """Fails if a feature is constant — as centrality (feature 7) was when no graph reached the tasks."""
    pairs = tasks.evaluation
    env = CrewEnv([e for e, _ in pairs], SurrogateExecutor(), env_config(horizon=8),
                  tasks=[t for _, t in pairs])
    rows = []
    for index in range(len(pairs)):
        observations, infos = env.reset(seed=0, options={"example_index": index})
        policy, t = FixedSchedule(FIXED_SCHEDULE), 0
        while env.agents:
            rows.extend(observations.values())
            observations, _, _, _, infos = env.step(policy(t, observations, infos))
            t += 1
    values = np.stack(rows)
    constant = [name for name, column in zip(FEATURE_NAMES, values.T, strict=True) if np.ptp(column) == 0]
    assert constant == []
    first_round_centrality = {float(env.task(i).centrality[env.task(i).references[0].id]) for i in range(len(pairs))}
    assert len(first_round_centrality) > 1  # centrality differs between pools, not only over rounds


def test_centrality_is_pagerank_over_the_pools_maximum(tasks):
    for _, task in tasks.evaluation:
        pagerank = tasks.graph.centrality()
        top = max(pagerank[r.id] for r in task.references)
        for ref in task.references:
            assert task.centrality[ref.id] == pytest.approx(pagerank[ref.id] / top, abs=1e-6)
        assert max(task.centrality.values()) == pytest.approx(1.0)


def test_the_pool_filter_reaches_the_environment(tasks):
    env, _, eval_idx = build_training_env(QUICK)
    removed_total = 0
    for index in eval_idx:
        task = env.task(index)
        pool = tasks.pools[task.target_id]
        ids = {r.id for r in task.references}
        assert ids == set(pool.pool) and not ids & set(pool.removed)
        assert all(tasks.graph.connections(r) >= QUICK.graph.min_connections for r in ids)
        removed_total += len(pool.removed)
        env.reset(seed=0, options={"example_index": index})
        assert {r.id for r in env.current_task.references} == ids
    assert removed_total > 0  # the sample has references the filter removes (notebook 02: 9 of 75)


def test_evaluation_targets_enter_the_graph_as_the_sentinel(tasks):
    for target_id in tasks.eval_ids:
        assert target_id not in tasks.graph.graph  # its own id never enters: no leak into the training graph
    for target_id in tasks.train_ids:
        assert target_id in tasks.graph.graph


def test_an_excluded_target_is_counted_not_run():
    strict = build_tasks(load_params("quick", {"graph": {"min_connections": 1000}}))
    assert strict.tasks == {} and len(strict.excluded) == len(strict.examples) > 0
    assert "excluded" in strict.report()


# ------------------------------------------------------------------ the controller
def test_no_checkpoint_is_loaded_with_weights_only_false():
    offenders = [p for p in (PROJECT_ROOT / "crewlib").rglob("*.py") if "weights_only=False" in p.read_text()]
    assert offenders == []


class _Exploit:
    def __reduce__(self):
        return (Path.touch, (Path(_Exploit.marker),))


@pytest.mark.filterwarnings("ignore:Detected pickle protocol")  # the crafted file is written with protocol 4
def test_a_checkpoint_that_would_run_code_is_refused(tmp_path):
    _Exploit.marker = str(tmp_path / "pwned")
    path = tmp_path / "evil.pt"
    with path.open("wb") as fh:
        pickle.dump({"feature_names": list(FEATURE_NAMES), "payload": _Exploit()}, fh)
    with pytest.raises(ControllerError, match="not a readable controller checkpoint"):
        PolicyController.load(path)
    assert not (tmp_path / "pwned").exists()


def test_a_missing_checkpoint_says_how_to_train_one(tmp_path):
    with pytest.raises(ControllerError, match="python -m crewlib.rl"):
        PolicyController.load(tmp_path / "nothing.pt")


def test_a_controller_trained_with_three_agents_runs_with_five(tasks):
    shipped = PROJECT_ROOT / QUICK.training.shipped_checkpoint
    policy = PolicyController.load(shipped, greedy=True)
    assert policy.n_agents == 3
    pairs = tasks.evaluation[:1]
    env = CrewEnv([pairs[0][0]], SurrogateExecutor(), env_config(n_agents=5, horizon=6),
                  tasks=[pairs[0][1]])
    run_episode(env, policy, seed=0, example_index=0)
    assert env.invalid_actions == 0 and all(len(r["actions"]) == 5 for r in env.trace.rounds)


def test_a_controller_with_agent_ids_refuses_another_team_size(tmp_path, tasks):
    cfg = IPPOConfig.from_params(QUICK).replace(agent_id=True)
    save_checkpoint(tmp_path / "ids.pt", build_network(cfg, 3), cfg, 3)
    policy = PolicyController.load(tmp_path / "ids.pt")
    ex, task = tasks.evaluation[0]
    env = CrewEnv([ex], SurrogateExecutor(), env_config(n_agents=4, horizon=2), tasks=[task])
    with pytest.raises(ControllerError, match="3 agents"):
        run_episode(env, policy, seed=0, example_index=0)


# ------------------------------------------------------------------ the params schema
@pytest.mark.parametrize("override, message", [
    ({"env": {"n_agent": 3}}, "env.n_agent: unknown setting"),
    ({"baselines": {"srw": {"memroy_tokens": 4096}}}, "baselines.srw.memroy_tokens: unknown setting"),
    ({"llm": {"max_retries": "4"}}, "llm.max_retries: Input should be a valid integer"),
    ({"env": {"n_agents": "3"}}, "env.n_agents: Input should be a valid integer"),
    ({"env": {"disabled_actions": ["sleep"]}}, "env.disabled_actions.0"),
    ({"telemetry": True}, "telemetry: unknown setting"),
])
def test_a_bad_setting_is_named_with_its_file(override, message):
    with pytest.raises(ParamsError, match=message) as info:
        load_params("quick", override)
    assert "quick.yaml" in str(info.value)


def test_a_users_file_without_base_names_what_is_missing(tmp_path):
    path = tmp_path / "mine.yaml"
    path.write_text("llm: {temperature: 0.5}\n")
    with pytest.raises(ParamsError, match=r"mine.yaml: \d+ settings missing \(.*`base: quick`"):
        load_params(path)
    path.write_text("base: quick\nllm: {temperature: 0.5}\n")
    assert load_params(path).llm.temperature == 0.5


def test_every_setting_has_one_home_the_params_files():
    """One place for defaults: the configs are the params' blocks, and none of them can be made without its
    settings (no default of their own to disagree with params/quick.yaml)."""
    assert llm_settings(QUICK, env={}) == llm_config() == QUICK.llm
    assert IPPOConfig.from_params(QUICK).model_dump() == QUICK.ippo.model_dump()
    assert EnvConfig.from_params(QUICK).weights is QUICK.env.reward
    for make in (EnvConfig, IPPOConfig, OutputChecks, lambda: LLMExecutor(None)):
        with pytest.raises((TypeError, pydantic.ValidationError)):
            make()


def test_full_mode_caps_an_actions_context_at_the_papers_6144_tokens():
    from crewlib.env.llm_executor import LLMExecutor

    full = load_params("full")
    assert full.executor.context_tokens == 6144 and QUICK.executor.context_tokens is None
    executor = LLMExecutor.from_params(client=None, params=full)
    assert executor.context_tokens == 6144 and executor.max_tokens == full.executor.max_tokens.model_dump()


# ------------------------------------------------------------------ IPPO and the ablation switches
def test_minibatches_are_of_equal_size():
    index = minibatch_indices(315, 4, torch.Generator().manual_seed(0))
    assert [len(i) for i in index] == [78, 78, 78, 78]
    flat = torch.cat(index)
    assert len(set(flat.tolist())) == 312  # disjoint; 3 samples sit out this epoch


def _episode(tasks, **env_settings):
    ex, task = tasks.evaluation[0]
    config = env_config(horizon=8, **env_settings)
    env = CrewEnv([ex], SurrogateExecutor(), config, tasks=[task])
    rows, masks = [], []
    observations, infos = env.reset(seed=0, options={"example_index": 0})
    t, policy = 0, FixedSchedule(FIXED_SCHEDULE)
    while env.agents:
        rows.extend(observations.values())
        masks.extend(i["action_mask"] for i in infos.values())
        observations, _, _, _, infos = env.step(policy(t, observations, infos))
        t += 1
    return env, np.stack(rows), np.stack(masks)


def test_masking_the_social_features_zeroes_exactly_them(tasks):
    _, plain, _ = _episode(tasks)
    _, masked, _ = _episode(tasks, masked_features=("social",))
    social = [FEATURE_NAMES.index(n) for n in FEATURE_GROUPS["social"]]
    assert np.all(masked[:, social] == 0) and np.any(plain[:, social] > 0)
    others = [i for i in range(len(FEATURE_NAMES)) if i not in social]
    np.testing.assert_array_equal(masked[:, others], plain[:, others])
    with pytest.raises(ValueError, match="neither a feature nor a group"):
        env_config(masked_features=("sociall",))


def test_removing_critique_from_the_action_space(tasks):
    env, _, masks = _episode(tasks, disabled_actions=("critique",))
    assert masks[:, 3].sum() == 0
    assert all(a != 3 for r in env.trace.rounds for a in r["actions"].values())


def test_a_reward_term_turned_off_contributes_nothing(tasks):
    w = QUICK.env.reward.replace(draft=0.0)
    env, _, _ = _episode(tasks, weights=w)
    changed = 0
    for r in env.trace.rounds:
        terms = r["reward"]
        rest = w.local * terms["d_local"] + w.glob * terms["d_global"] + w.feedback * terms["q_feedback"]
        assert terms["total"] == pytest.approx(rest)
        changed += terms["d_draft"] != 0
    assert changed > 0  # the draft did change: its term was there to count, and counted 0
