"""Speed of surrogate IPPO training, and the paper-scale run extrapolated from a timed fraction.

Paper scale: 1,829 training papers x 3 epochs x 15 rounds x 3 agents (goal: < 30 minutes on a
2-core machine). This trains ``--episodes`` episodes on the bundled sample (its pools hold 12-18
papers; OARelatedWork pools can be larger, which makes each step dearer) and extrapolates.

    python benchmarks/ippo_speed.py [--episodes 112] [--devices cpu cuda]

With several ``--devices`` the same training (same seed) runs on each in turn and the ratios of
their wall times are printed, measured in this one run.
"""

from __future__ import annotations

import argparse
import tempfile
import time

import pandas as pd

from crewlib.config import load_params
from crewlib.rl import IPPOConfig, build_training_env, train

PAPERS, EPOCHS, ROUNDS, AGENTS = 1829, 3, 15, 3


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--episodes", type=int, default=112)
    parser.add_argument("--devices", nargs="+", default=["auto"], help="ippo.device values: auto, cpu, cuda")
    args = parser.parse_args()
    params = load_params("quick")
    env, train_idx, _ = build_training_env(params)
    per_update = 8
    epochs = max(1, args.episodes // len(train_idx))
    walls = {}
    for device in args.devices:  # untimed warm-up on each device (imports, caches, CUDA context)
        with tempfile.TemporaryDirectory() as out:
            warm = IPPOConfig.from_params(params).replace(train_epochs=1, episodes_per_update=per_update, device=device)
            train(env, train_idx, warm, out, progress=False, max_updates=1)
    for device in args.devices:
        cfg = IPPOConfig.from_params(params).replace(train_epochs=epochs, episodes_per_update=per_update, device=device)
        with tempfile.TemporaryDirectory() as out:
            t0 = time.perf_counter()
            train(env, train_idx, cfg, out, progress=False)
            wall = walls[device] = time.perf_counter() - t0
            metrics = pd.read_csv(f"{out}/metrics.csv")
        episodes = int(metrics["episodes"].iloc[-1])
        agent_steps = int(metrics["env_steps"].sum())
        env_steps = agent_steps // AGENTS
        print(f"[{device} → {cfg.torch_device()}] trained {episodes} episodes ({env_steps} environment steps, "
              f"{agent_steps} agent steps) in {wall:.1f} s; final mean return {metrics['mean_return'].iloc[-1]:.3f}")
        print(f"{env_steps / wall:.0f} environment steps/s, {agent_steps / wall:.0f} agent steps/s, "
              f"{wall / episodes * 1000:.0f} ms an episode including updates")
        paper = PAPERS * EPOCHS
        print(f"paper scale: {paper} episodes x {ROUNDS} rounds x {AGENTS} agents -> "
              f"{paper * wall / episodes / 60:.1f} minutes extrapolated (goal < 30)")
    first = args.devices[0]
    for device in args.devices[1:]:
        print(f"wall time {device} / {first}: {walls[device] / walls[first]:.2f}")

if __name__ == "__main__":
    main()
