"""Training the shared controller over the training papers, checkpoints, and the learned policy.

``train`` runs ``train_epochs`` passes over the training papers; every ``episodes_per_update``
episodes (one paper each, all agents' transitions) it makes one IPPO update, logs the metrics
to CSV and writes a checkpoint that carries the config, the observation feature names and the
library version. Re-running with the same checkpoint path resumes after the last update.
"""

from __future__ import annotations

import csv
import dataclasses
import time
from pathlib import Path

import numpy as np
import torch

from crewlib import __version__
from crewlib.env.crew_env import CrewEnv
from crewlib.env.observation import FEATURE_NAMES
from crewlib.rl.ippo import Batch, IPPOConfig, SharedActorCritic, gae, ippo_update

METRICS = ["update", "epoch", "episodes", "env_steps", "mean_return", "mean_draft_quality", "policy_loss",
           "value_loss", "entropy", "approx_kl", "clip_fraction", "p_retrieve", "p_disseminate", "p_compose",
           "p_critique", "wall_s"]


def _features(obs: np.ndarray, agent_index: int, cfg: IPPOConfig, n_agents: int) -> np.ndarray:
    if not cfg.agent_id:
        return obs
    return np.concatenate([obs, np.eye(n_agents, dtype=np.float32)[agent_index]])


def round_tensors(observations: dict, infos: dict, agents: list[str], cfg: IPPOConfig, n_agents: int,
                  device: torch.device | str = "cpu") -> tuple[torch.Tensor, torch.Tensor]:
    """The round's observations (with the optional agent id) and action masks, one row per agent."""
    obs = np.stack([_features(observations[a], i, cfg, n_agents) for i, a in enumerate(agents)])
    masks = np.stack([infos[a]["action_mask"] for a in agents])
    return torch.as_tensor(obs, device=device), torch.as_tensor(masks, device=device)


class PolicyController:
    """The trained controller as a policy: ``policy(t, observations, infos)`` (sample or greedy)."""

    def __init__(self, net: SharedActorCritic, cfg: IPPOConfig, n_agents: int, greedy: bool = True,
                 seed: int = 0) -> None:
        self.net, self.cfg, self.n_agents, self.greedy = net.eval(), cfg, n_agents, greedy
        self.generator = torch.Generator().manual_seed(seed)

    def __call__(self, t: int, observations: dict, infos: dict) -> dict[str, int]:
        agents = list(observations)
        obs, masks = round_tensors(observations, infos, agents, self.cfg, self.n_agents)
        with torch.no_grad():
            dist = self.net.distribution(obs, masks)
            actions = dist.probs.argmax(-1) if self.greedy else torch.multinomial(dist.probs, 1,
                                                                                  generator=self.generator)[:, 0]
        return {a: int(x) for a, x in zip(agents, actions.tolist(), strict=True)}

    @classmethod
    def load(cls, path: str | Path, greedy: bool = True) -> PolicyController:
        ckpt = load_checkpoint(path)
        return cls(ckpt["net"], ckpt["config"], ckpt["n_agents"], greedy=greedy)


def save_checkpoint(path: Path, net, optimizer, cfg: IPPOConfig, state: dict) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(".tmp")
    torch.save({"model": net.state_dict(), "optimizer": optimizer.state_dict(), "config": dataclasses.asdict(cfg),
                "feature_names": list(FEATURE_NAMES), "library_version": __version__, **state}, tmp)
    tmp.replace(path)  # a checkpoint is either the old one or the new one, never half written


def load_checkpoint(path: str | Path) -> dict:
    data = torch.load(path, map_location="cpu", weights_only=False)
    if list(data["feature_names"]) != list(FEATURE_NAMES):
        raise ValueError(f"{path} was trained on other observation features: {data['feature_names']}")
    cfg = IPPOConfig(**data["config"])
    net = SharedActorCritic(len(FEATURE_NAMES) + (data["n_agents"] if cfg.agent_id else 0), cfg.hidden)
    net.load_state_dict(data["model"])
    return {**data, "config": cfg, "net": net}


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


def to_batch(trajectories: list[dict], cfg: IPPOConfig, device: torch.device) -> Batch:
    """GAE per agent trajectory, then everything pooled into one batch."""
    parts: dict[str, list] = {k: [] for k in ("obs", "mask", "action", "logprob", "adv", "ret", "value")}
    for traj in trajectories:
        for t in traj.values():
            values = np.asarray(t["value"])
            adv, ret = gae(np.asarray(t["reward"]), values, np.asarray(t["done"]), 0.0, cfg.gamma, cfg.gae_lambda)
            for key, src in [("obs", t["obs"]), ("mask", t["mask"]), ("action", t["action"]),
                             ("logprob", t["logprob"]), ("adv", adv), ("ret", ret), ("value", values)]:
                parts[key].extend(src)
    as_t = lambda x, dtype=torch.float32: torch.as_tensor(np.asarray(x), dtype=dtype, device=device)  # noqa: E731
    return Batch(as_t(parts["obs"]), as_t(parts["mask"], torch.int64), as_t(parts["action"], torch.int64),
                 as_t(parts["logprob"]), as_t(parts["adv"]), as_t(parts["ret"]), as_t(parts["value"]))


def train(env: CrewEnv, train_indices: list[int], cfg: IPPOConfig, out_dir: str | Path, *, progress: bool = True,
          max_updates: int | None = None) -> tuple[SharedActorCritic, Path]:
    """Train on ``env.examples[i]`` for ``i`` in ``train_indices``; resume from ``out_dir`` if possible.

    Writes ``out_dir/metrics.csv`` and ``out_dir/checkpoint.pt``; returns the network and the
    checkpoint path. ``max_updates`` stops early (for a timed fraction or an interruption test).
    """
    from tqdm.auto import tqdm

    out = Path(out_dir)
    device = cfg.torch_device()
    torch.manual_seed(cfg.seed)
    n = env.config.n_agents
    net = SharedActorCritic(len(FEATURE_NAMES) + (n if cfg.agent_id else 0), cfg.hidden).to(device)
    optimizer = torch.optim.Adam(net.parameters(), lr=cfg.learning_rate, eps=cfg.adam_eps)
    generator = torch.Generator().manual_seed(cfg.seed)
    rng = np.random.default_rng(cfg.seed)
    schedule = [int(i) for _ in range(cfg.train_epochs) for i in rng.permutation(train_indices)]
    chunks = [schedule[i:i + cfg.episodes_per_update] for i in range(0, len(schedule), cfg.episodes_per_update)]
    ckpt_path, metrics_path = out / "checkpoint.pt", out / "metrics.csv"
    done_updates = 0
    if ckpt_path.exists():
        ckpt = torch.load(ckpt_path, map_location=device, weights_only=False)
        net.load_state_dict(ckpt["model"])
        optimizer.load_state_dict(ckpt["optimizer"])
        generator.set_state(ckpt["generator_state"])
        done_updates = ckpt["updates"]
    elif metrics_path.exists():
        metrics_path.unlink()  # metrics without a checkpoint belong to another run
    out.mkdir(parents=True, exist_ok=True)
    todo = chunks[done_updates:] if max_updates is None else chunks[done_updates:max_updates]
    bar = tqdm(total=len(chunks), initial=done_updates, disable=not progress, desc="IPPO updates")
    for k, chunk in enumerate(todo, start=done_updates + 1):
        t0 = time.perf_counter()
        trajectories, returns, qualities = [], [], []
        for j, index in enumerate(chunk):
            traj, ret, q = collect_episode(env, net, cfg, index, cfg.seed * 100_003 + k * 101 + j, generator, device)
            trajectories.append(traj)
            returns.append(ret)
            qualities.append(q)
        batch = to_batch(trajectories, cfg, device)
        stats = ippo_update(net, optimizer, batch, cfg, generator)
        counts = np.bincount(batch.actions.cpu().numpy(), minlength=4) / len(batch)
        row = {"update": k, "epoch": (k - 1) * cfg.episodes_per_update // max(1, len(train_indices)) + 1,
               "episodes": sum(len(c) for c in chunks[:k]), "env_steps": len(batch), "mean_return": np.mean(returns),
               "mean_draft_quality": np.mean(qualities), **stats, "p_retrieve": counts[0],
               "p_disseminate": counts[1], "p_compose": counts[2], "p_critique": counts[3],
               "wall_s": time.perf_counter() - t0}
        new_file = not metrics_path.exists()
        with metrics_path.open("a", newline="") as fh:
            writer = csv.DictWriter(fh, fieldnames=METRICS)
            if new_file:
                writer.writeheader()
            writer.writerow({m: row[m] for m in METRICS})
        save_checkpoint(ckpt_path, net, optimizer, cfg, {"updates": k, "n_agents": n,
                                                         "generator_state": generator.get_state()})
        bar.update(1)
    bar.close()
    return net, ckpt_path
