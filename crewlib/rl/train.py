"""Training the shared controller over the training papers (inference lives in ``controller.py``).

``train`` runs ``train_epochs`` passes over the training papers; every ``episodes_per_update``
episodes (one paper each, all agents' transitions) it makes one IPPO update, logs the metrics
to CSV and writes a checkpoint that carries the config, the observation feature names and the
library version. Re-running with the same checkpoint path resumes after the last update.
"""

from __future__ import annotations

import csv
import time
from collections.abc import Mapping
from pathlib import Path

import numpy as np
import torch

from crewlib.actions import ACTION_NAMES, N_ACTIONS
from crewlib.env.crew_env import CrewEnv
from crewlib.rl.controller import build_network, read_checkpoint, save_checkpoint
from crewlib.rl.episodes import build_training_env, collect_episode
from crewlib.rl.ippo import Batch, IPPOConfig, SharedActorCritic, gae, ippo_update
from crewlib.rl.rollouts import ProcessRollouts
from crewlib.schema import Params

__all__ = ["METRICS", "build_training_env", "collect_episode", "rollouts_from_params", "to_batch", "train"]

METRICS = ["update", "epoch", "episodes", "env_steps", "mean_return", "mean_draft_quality", "policy_loss",
           "value_loss", "entropy", "approx_kl", "clip_fraction", *(f"p_{name}" for name in ACTION_NAMES), "wall_s"]


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
          max_updates: int | None = None, rollouts: ProcessRollouts | None = None,
          init: str | Path | None = None) -> tuple[SharedActorCritic, Path]:
    """Train on ``env.examples[i]`` for ``i`` in ``train_indices``; resume from ``out_dir`` if possible.

    Writes ``out_dir/metrics.csv`` and ``out_dir/checkpoint.pt``; returns the network and the
    checkpoint path. ``max_updates`` stops early (for a timed fraction or an interruption test).
    ``rollouts``: worker processes that collect each update's episodes in parallel
    (:func:`rollouts_from_params`; each episode then samples from a generator of its own seed).
    ``init``: a checkpoint whose network weights a new run starts from (fine-tuning a trained
    controller, e.g. with the LLM executor); ignored when ``out_dir`` holds a run to resume.
    """
    from tqdm import tqdm  # plain text bars: no widget (and no IProgress warning) in notebooks

    out = Path(out_dir)
    device = cfg.torch_device()
    torch.manual_seed(cfg.seed)
    n = env.config.n_agents
    net = build_network(cfg, n).to(device)
    optimizer = torch.optim.Adam(net.parameters(), lr=cfg.learning_rate, eps=cfg.adam_eps)
    generator = torch.Generator().manual_seed(cfg.seed)
    rng = np.random.default_rng(cfg.seed)
    schedule = [int(i) for _ in range(cfg.train_epochs) for i in rng.permutation(train_indices)]
    chunks = [schedule[i:i + cfg.episodes_per_update] for i in range(0, len(schedule), cfg.episodes_per_update)]
    ckpt_path, metrics_path = out / "checkpoint.pt", out / "metrics.csv"
    done_updates = _resume(ckpt_path, metrics_path, net, optimizer, generator, init, device)
    out.mkdir(parents=True, exist_ok=True)
    todo = chunks[done_updates:] if max_updates is None else chunks[done_updates:max_updates]
    bar = tqdm(total=len(chunks), initial=done_updates, disable=not progress, desc="IPPO updates")
    with cfg.cpu_threads():  # one thread: the network is tiny
        for k, chunk in enumerate(todo, start=done_updates + 1):
            t0 = time.perf_counter()
            jobs = [(index, cfg.seed * 100_003 + k * 101 + j) for j, index in enumerate(chunk)]
            if rollouts is None:
                episodes = [collect_episode(env, net, cfg, index, seed, generator, device) for index, seed in jobs]
            else:
                episodes = rollouts.collect(net, cfg, jobs)
            trajectories = [e[0] for e in episodes]
            returns, qualities = [e[1] for e in episodes], [e[2] for e in episodes]
            batch = to_batch(trajectories, cfg, device)
            stats = ippo_update(net, optimizer, batch, cfg, generator)
            counts = np.bincount(batch.actions.cpu().numpy(), minlength=N_ACTIONS) / len(batch)
            _append_metrics(metrics_path, {
                "update": k, "epoch": (k - 1) * cfg.episodes_per_update // max(1, len(train_indices)) + 1,
                "episodes": sum(len(c) for c in chunks[:k]), "env_steps": len(batch),
                "mean_return": np.mean(returns), "mean_draft_quality": np.mean(qualities), **stats,
                **{f"p_{name}": counts[a] for a, name in enumerate(ACTION_NAMES)},
                "wall_s": time.perf_counter() - t0})
            save_checkpoint(ckpt_path, net, cfg, n, optimizer=optimizer,
                            state={"updates": k, "generator_state": generator.get_state()})
            bar.update(1)
    bar.close()
    return net, ckpt_path


def _resume(ckpt_path: Path, metrics_path: Path, net: SharedActorCritic, optimizer, generator: torch.Generator,
            init: str | Path | None, device: torch.device) -> int:
    """The updates a previous run of this folder finished (its network, optimizer and generator restored), or 0 for
    a new run (stale metrics removed; ``init``'s weights loaded when given)."""
    if ckpt_path.exists():
        ckpt = read_checkpoint(ckpt_path, map_location=device)
        net.load_state_dict(ckpt["model"])
        optimizer.load_state_dict(ckpt["optimizer"])
        generator.set_state(ckpt["generator_state"])
        return ckpt["updates"]
    if metrics_path.exists():
        metrics_path.unlink()  # metrics without a checkpoint belong to another run
    if init is not None:
        net.load_state_dict(read_checkpoint(init, map_location=device)["model"])
    return 0


def _append_metrics(path: Path, row: Mapping) -> None:
    """One update's row of ``metrics.csv`` (the header written with the first)."""
    new_file = not path.exists()
    with path.open("a", newline="") as fh:
        writer = csv.DictWriter(fh, fieldnames=METRICS)
        if new_file:
            writer.writeheader()
        writer.writerow({m: row[m] for m in METRICS})


def rollouts_from_params(params: Params) -> ProcessRollouts | None:
    """Worker processes for ``training.rollout_workers`` > 1 (close them, or use ``with``); None for 1."""
    workers = params.training.rollout_workers
    return ProcessRollouts(params, workers) if workers > 1 else None
