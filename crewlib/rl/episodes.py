"""Episodes for training: the environment over the run's papers, and one episode played by the current policy.

Used by :func:`crewlib.rl.train.train` in this process and by the worker processes of
:mod:`crewlib.rl.rollouts`; both import it, neither imports the other's internals.
"""

from __future__ import annotations

import torch

from crewlib.env.crew_env import CrewEnv, EnvConfig
from crewlib.env.executors import SurrogateExecutor
from crewlib.env.llm_executor import LLMExecutor
from crewlib.llm import connect
from crewlib.rl.controller import round_tensors
from crewlib.rl.ippo import IPPOConfig, SharedActorCritic
from crewlib.schema import Params
from crewlib.tasks import build_tasks


def build_training_env(params: Params) -> tuple[CrewEnv, list[int], list[int]]:
    """The environment over the run's train + evaluation tasks (:func:`crewlib.tasks.build_tasks`).

    Returns the env and the example indices of each part. The executor is ``training.executor``:
    the surrogate, or the LLM executor through the client and its cache.
    """
    tasks = build_tasks(params)
    pairs = tasks.train + tasks.evaluation
    executor_name = params.training.executor
    if executor_name == "surrogate":
        executor = SurrogateExecutor()
    else:
        executor = LLMExecutor.from_params(connect(params), params, system="crew-training")
    env = CrewEnv([ex for ex, _ in pairs], executor, EnvConfig.from_params(params), tasks=[t for _, t in pairs])
    n_train = len(tasks.train)
    return env, list(range(n_train)), list(range(n_train, len(pairs)))


def collect_episode(env: CrewEnv, net: SharedActorCritic, cfg: IPPOConfig, example_index: int, seed: int,
                    generator: torch.Generator, device: torch.device) -> tuple[dict, float, float]:
    """One episode with the current policy: per-agent trajectories, the return, the final draft quality."""
    n = env.config.n_agents
    observations, infos = env.reset(seed=seed, options={"example_index": example_index})
    traj = {a: {k: [] for k in ("obs", "mask", "action", "logprob", "reward", "value", "done")}
            for a in env.possible_agents}
    total = 0.0
    while env.agents:
        agents = list(env.agents)
        obs, masks = round_tensors(observations, infos, agents, cfg, n, device)
        with torch.no_grad():
            dist = net.distribution(obs, masks)
            actions = torch.multinomial(dist.probs.cpu(), 1, generator=generator)[:, 0].to(device)
            logprobs, values = dist.log_prob(actions), net.value(obs)
        observations, rewards, terminations, truncations, infos = env.step(
            {a: int(x) for a, x in zip(agents, actions.tolist(), strict=True)})
        for i, a in enumerate(agents):
            t = traj[a]
            t["obs"].append(obs[i].cpu().numpy())
            t["mask"].append(masks[i].cpu().numpy())
            t["action"].append(int(actions[i]))
            t["logprob"].append(float(logprobs[i]))
            t["value"].append(float(values[i]))
            t["reward"].append(rewards[a])
            t["done"].append(float(terminations[a] or truncations[a]))
        total += rewards[agents[0]]
    return traj, total, env.trace.totals["final_quality"]["draft"]
