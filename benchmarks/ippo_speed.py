"""Speed of surrogate IPPO training, and the paper-scale run extrapolated from a timed fraction.

Paper scale: 1,829 training papers x 3 epochs x 15 rounds x 3 agents (goal: < 30 minutes on a
2-core machine). This trains ``--episodes`` episodes on the bundled sample (its pools hold 12-18
papers; OARelatedWork pools can be larger, which makes each step dearer) and extrapolates.

    python benchmarks/ippo_speed.py [--episodes 112]
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
    args = parser.parse_args()
    env, train_idx, _ = build_training_env(load_params("quick"))
    per_update = 8
    epochs = max(1, args.episodes // len(train_idx))
    cfg = IPPOConfig(train_epochs=epochs, episodes_per_update=per_update)
    with tempfile.TemporaryDirectory() as out:
        t0 = time.perf_counter()
        train(env, train_idx, cfg, out, progress=False)
        wall = time.perf_counter() - t0
        metrics = pd.read_csv(f"{out}/metrics.csv")
    episodes = int(metrics["episodes"].iloc[-1])
    agent_steps = int(metrics["env_steps"].sum())
    env_steps = agent_steps // AGENTS
    print(f"trained {episodes} episodes ({env_steps} environment steps, {agent_steps} agent steps) in {wall:.1f} s")
    print(f"{env_steps / wall:.0f} environment steps/s, {agent_steps / wall:.0f} agent steps/s, "
          f"{wall / episodes * 1000:.0f} ms an episode including updates")
    paper = PAPERS * EPOCHS
    print(f"paper scale: {paper} episodes x {ROUNDS} rounds x {AGENTS} agents -> "
          f"{paper * wall / episodes / 60:.1f} minutes extrapolated (goal < 30)")


if __name__ == "__main__":
    main()
