"""Training: resume after an interruption, and evidence that the controller learns."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
import torch
from quick_settings import env_config, ippo_config, quick_executor

from crewlib.config import load_params
from crewlib.env.policies import FixedSchedule, RandomPolicy, run_episode
from crewlib.rl import IPPOConfig, PolicyController, build_training_env, controller_path, read_checkpoint, train


@pytest.fixture(scope="module")
def setup():
    return build_training_env(load_params("quick"))


def test_training_resumes_exactly_where_it_stopped(setup, tmp_path):
    env, train_idx, _ = setup
    cfg = ippo_config(train_epochs=2, episodes_per_update=2, seed=3)
    full, _ = train(env, train_idx[:3], cfg, tmp_path / "full", progress=False)
    train(env, train_idx[:3], cfg, tmp_path / "resumed", progress=False, max_updates=2)  # "interrupted"
    assert len(pd.read_csv(tmp_path / "resumed" / "metrics.csv")) == 2
    resumed, path = train(env, train_idx[:3], cfg, tmp_path / "resumed", progress=False)
    assert len(pd.read_csv(tmp_path / "resumed" / "metrics.csv")) == 3  # ceil(2 epochs x 3 papers / 2)
    for a, b in zip(full.state_dict().values(), resumed.state_dict().values(), strict=True):
        torch.testing.assert_close(a, b)
    ckpt = read_checkpoint(path)
    assert ckpt["updates"] == 3 and ckpt["library_version"] and len(ckpt["feature_names"]) == 20


def evaluate(env, indices, make_policy):
    returns, quality = [], []
    for i in indices:
        for seed in range(3):
            returns.append(run_episode(env, make_policy(seed), seed=seed, example_index=i))
            quality.append(env.trace.totals["final_quality"]["draft"])
    return float(np.mean(returns)), float(np.mean(quality))


def test_trained_controller_beats_random_and_matches_the_fixed_schedule(setup, tmp_path):
    """Held-out sample papers, surrogate executor, fixed seeds: fails if training breaks."""
    env, train_idx, eval_idx = setup
    params = load_params("quick")
    cfg = IPPOConfig.from_params(params)
    net, _ = train(env, train_idx, cfg, tmp_path / "run", progress=False)
    trained = evaluate(env, eval_idx, lambda s: PolicyController(net, cfg, 3, greedy=False, seed=s))
    random_ = evaluate(env, eval_idx, lambda s: RandomPolicy(s))
    fixed = evaluate(env, eval_idx, lambda s: FixedSchedule())
    print(f"held-out return / draft quality: trained {trained}, random {random_}, fixed {fixed}")
    assert trained[0] > random_[0] and trained[1] > random_[1]
    assert trained[0] >= fixed[0] and trained[1] >= fixed[1]


def test_the_shipped_checkpoint_beats_random_and_matches_the_fixed_schedule(setup):
    """checkpoints/ippo_sample.pt, loaded as the demo and the crew system load it, on the held-out papers."""
    env, _, eval_idx = setup
    path = controller_path(load_params("quick"))
    trained = evaluate(env, eval_idx, lambda s: PolicyController.load(path, greedy=False, seed=s))
    random_ = evaluate(env, eval_idx, lambda s: RandomPolicy(s))
    fixed = evaluate(env, eval_idx, lambda s: FixedSchedule())
    print(f"shipped controller, held-out return / draft quality: {trained}, random {random_}, fixed {fixed}")
    assert trained[0] > random_[0] and trained[1] > random_[1]
    assert trained[0] >= fixed[0] and trained[1] >= fixed[1]


def test_training_runs_with_the_llm_executor_through_the_client(setup, make_client, scripted_server, tmp_path):
    """The LLM path of the training loop (scripted endpoint): calls go through the client and its cache."""
    import json

    from fakes import Step

    from crewlib.env import CrewEnv

    scripted_server.default = Step(200, json.dumps({"notes": ["A finding [R1]."], "confidence": 0.6,
                                                    "text": "Prior work studied this problem [R1].", "feedback": []}))
    env, train_idx, _ = setup
    client = make_client(scripted_server)
    llm_env = CrewEnv(env.examples[:1], quick_executor(client), env_config(horizon=3))
    train(llm_env, [0], ippo_config(train_epochs=1, episodes_per_update=1), tmp_path / "llm", progress=False)
    assert len(pd.read_csv(tmp_path / "llm" / "metrics.csv")) == 1
    calls = client.ledger.totals()["calls"]
    # 3 agents x 3 rounds, all ledgered; an action that needs no model (a paper a teammate already read, a
    # problem the text checks find, a masked action) makes no call.
    assert calls >= 6 and len(scripted_server.requests) == calls


def test_rollouts_in_worker_processes_give_the_same_training_whatever_the_number_of_workers(setup, tmp_path):
    """Surrogate executor, 2 and 3 workers: each episode samples from its own seed, so the nets are equal."""
    from crewlib.rl.rollouts import ProcessRollouts

    env, train_idx, _ = setup
    params = load_params("quick")
    cfg = ippo_config(train_epochs=1, episodes_per_update=3, seed=5)
    nets = []
    for workers in (2, 3):
        with ProcessRollouts(params, workers) as rollouts:
            net, _ = train(env, train_idx[:3], cfg, tmp_path / f"w{workers}", progress=False, rollouts=rollouts)
        nets.append(net)
        assert len(pd.read_csv(tmp_path / f"w{workers}" / "metrics.csv")) == 1
    for a, b in zip(nets[0].state_dict().values(), nets[1].state_dict().values(), strict=True):
        torch.testing.assert_close(a, b)


def test_llm_rollouts_in_workers_reach_the_configured_endpoint_and_cache(scripted_server, tmp_path):
    import json

    from fakes import Step

    from crewlib.rl.train import rollouts_from_params

    scripted_server.default = Step(200, json.dumps({"notes": ["A finding [R1]."], "confidence": 0.6,
                                                    "text": "Prior work studied this problem [R1].", "feedback": []}))
    params = load_params("quick", {
        "llm": {"provider": "openai", "base_url": scripted_server.base_url, "model": "scripted", "api_key_env": "",
                "cache_dir": str(tmp_path / "cache"), "max_retries": 0},
        "env": {"horizon": 2}, "training": {"executor": "llm", "rollout_workers": 2}})
    env, train_idx, _ = build_training_env(params)
    rollouts = rollouts_from_params(params)
    try:
        train(env, train_idx[:2], ippo_config(train_epochs=1, episodes_per_update=2), tmp_path / "run",
              progress=False, rollouts=rollouts)
    finally:
        rollouts.close()
    assert scripted_server.requests  # from the worker processes
    assert len(list((tmp_path / "cache").rglob("*.json"))) >= 1
    assert rollouts_from_params(load_params("quick")) is None  # one worker: the in-process loop
