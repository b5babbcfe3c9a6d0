"""The main job (``make demo``): CREW writes the related work of a bundled target paper.

Three agents act for ``demo.rounds`` rounds on a target from the bundled sample corpus, with the
LLM executor on the embedded model (or the endpoint the environment names). The agents follow the
trained controller in ``training.shipped_checkpoint`` when it exists (trained with the surrogate
executor, ``python -m crewlib.rl --params quick --ship``), else the documented fixed schedule
(:data:`crewlib.env.policies.FIXED_SCHEDULE`: read, read, share, compose, critique, revise, ...).
It writes the related work (Markdown, citations resolved and verified), the episode trace and a
cost summary (calls, tokens, wall time) under ``demo.output_dir``::

    python -m crewlib.demo --params quick [--rounds 6] [--target-index 0]
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import sys
import time
from dataclasses import dataclass
from pathlib import Path

from crewlib.config import load_params, resolve_path
from crewlib.data import DatasetUnavailableError, RWGExample, evaluation_targets
from crewlib.env import CrewEnv, EnvConfig
from crewlib.env.llm_executor import LLMExecutor
from crewlib.env.policies import FIXED_SCHEDULE, FixedSchedule, run_episode
from crewlib.env.trace import EpisodeTrace
from crewlib.llm import LLMError, connect


@dataclass(frozen=True)
class DemoResult:
    target: RWGExample
    trace: EpisodeTrace
    summary: dict
    output_dir: Path


def demo_target(params: dict, target_index: int) -> RWGExample:
    """The ``target_index``-th evaluation target of the configured data (the sample by default)."""
    pool = evaluation_targets(params)
    return pool[target_index % len(pool)]


def demo_policy(params: dict, n_agents: int):
    """The shipped trained controller if there is one (sampling, seeded), else the fixed schedule."""
    path = resolve_path(params.get("training", {}).get("shipped_checkpoint", "checkpoints/ippo_sample.pt"))
    if path.exists():
        from crewlib.rl.train import PolicyController, load_checkpoint

        ckpt = load_checkpoint(path)
        if ckpt["n_agents"] == n_agents:
            greedy = params.get("demo", {}).get("greedy", False)
            return (PolicyController(ckpt["net"], ckpt["config"], n_agents, greedy=greedy),
                    f"trained IPPO controller ({path.name}, {'greedy' if greedy else 'sampled'})")
    return FixedSchedule(FIXED_SCHEDULE), "fixed schedule " + "".join(str(a) for a in FIXED_SCHEDULE)


def run_demo(params: dict, *, rounds: int | None = None, target_index: int | None = None,
             output_dir: str | Path | None = None) -> DemoResult:
    settings = params.get("demo", {})
    rounds = rounds or settings.get("rounds", 6)
    target = demo_target(params, settings.get("target_index", 0) if target_index is None else target_index)
    out = resolve_path(output_dir or settings.get("output_dir", "outputs/demo"))
    client = connect(params)
    config = dataclasses.replace(EnvConfig.from_params(params), horizon=rounds)
    env = CrewEnv([target], LLMExecutor(client, max_tokens=settings.get("max_tokens")), config)
    policy, policy_name = demo_policy(params, config.n_agents)
    t0 = time.perf_counter()
    team_return = run_episode(env, policy, seed=0, example_index=0)
    wall = time.perf_counter() - t0
    trace = env.trace
    trace.save(out)
    client.ledger.to_csv(out / "ledger.csv")
    totals = client.ledger.totals()
    summary = {
        "target_id": target.target_id, "title": target.title, "model": client.model, "endpoint": client.endpoint,
        "policy": policy_name, "rounds": rounds,
        "agents": config.n_agents, "calls": totals["calls"], "prompt_tokens": totals["prompt_tokens"],
        "completion_tokens": totals["completion_tokens"], "billed_tokens": totals["billed_tokens"],
        "cache_hits": totals["cache_hits"], "fallbacks": trace.totals["fallbacks"], "wall_time_s": round(wall, 2),
        "team_return": round(team_return, 4), "citation_verification": trace.citation_check["verification"],
        "citation_markers": trace.citation_check["markers"], "draft_words": len(trace.final_draft.split()),
    }
    (out / "summary.json").write_text(json.dumps(summary, indent=2) + "\n")
    return DemoResult(target, trace, summary, out)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m crewlib.demo", description=__doc__.split("\n")[0])
    parser.add_argument("--params", default="quick", help="params mode or YAML path (default: quick)")
    parser.add_argument("--rounds", type=int, default=None, help="rounds to play (default: demo.rounds)")
    parser.add_argument("--target-index", type=int, default=None, help="which evaluation target (default 0)")
    parser.add_argument("--out", default=None, help="output folder (default: demo.output_dir)")
    args = parser.parse_args(argv)
    try:
        demo = run_demo(load_params(args.params), rounds=args.rounds, target_index=args.target_index,
                        output_dir=args.out)
    except (LLMError, DatasetUnavailableError, ValueError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    s = demo.summary
    print(demo.trace.to_markdown())
    print(f"model: {s['model']} | {s['agents']} agents x {s['rounds']} rounds | policy: {s['policy']}")
    print(f"cost: {s['calls']} LLM calls, {s['prompt_tokens']} prompt + {s['completion_tokens']} completion tokens "
          f"({s['cache_hits']} cached), {s['fallbacks']} counted fallbacks, wall time {s['wall_time_s']:.1f} s")
    print(f"written: {demo.output_dir}/related_work.md, trace.json, summary.json, ledger.csv")
    return 0


if __name__ == "__main__":
    sys.exit(main())
