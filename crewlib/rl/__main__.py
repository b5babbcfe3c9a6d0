"""Train the CREW controller: ``python -m crewlib.rl --params quick [--ship]``.

Reads the data and split from params, trains parameter-shared IPPO on the training papers with
the surrogate executor (``training.executor``), resumes from ``training.out_dir`` when a
checkpoint is there, and with ``--ship`` copies the final checkpoint to
``training.shipped_checkpoint`` (the one the demo and notebooks load).
"""

from __future__ import annotations

import argparse
import shutil
import sys
import time

from crewlib.config import load_params, resolve_path
from crewlib.rl.ippo import IPPOConfig
from crewlib.rl.train import build_training_env, rollouts_from_params, train


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m crewlib.rl", description=__doc__.split("\n")[0])
    parser.add_argument("--params", default="quick")
    parser.add_argument("--ship", action="store_true", help="copy the final checkpoint to training.shipped_checkpoint")
    parser.add_argument("--no-progress", action="store_true")
    args = parser.parse_args(argv)
    params = load_params(args.params)
    env, train_idx, _ = build_training_env(params)
    cfg = IPPOConfig.from_params(params)
    out = resolve_path(params.training.out_dir)
    t0 = time.perf_counter()
    rollouts = rollouts_from_params(params)
    try:
        _, checkpoint = train(env, train_idx, cfg, out, progress=not args.no_progress, rollouts=rollouts)
    finally:
        if rollouts is not None:
            rollouts.close()
    print(f"trained on {len(train_idx)} papers x {cfg.train_epochs} epochs in {time.perf_counter() - t0:.1f} s; "
          f"checkpoint {checkpoint}, metrics {out / 'metrics.csv'}")
    if args.ship:
        target = resolve_path(params.training.shipped_checkpoint)
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(checkpoint, target)
        print(f"shipped: {target} ({target.stat().st_size / 1024:.0f} KiB)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
