"""The main job (``make demo``): CREW writes the related work of a bundled target paper.

CREW — the system ``crew`` of the registry (:mod:`crewlib.baselines`), the same as in every
results table — runs on an evaluation target of the configured data (the bundled sample by
default): three agents for ``baselines.crew.rounds`` rounds, the LLM executor on the embedded
model (or the endpoint the environment names), actions from the trained controller in
``training.shipped_checkpoint`` (trained with the surrogate executor, ``python -m crewlib.rl
--params quick --ship``); without one it stops with an error that says how to get one. It
writes the related work (Markdown, citations resolved and verified), the episode trace and a
cost summary (calls, tokens, wall time) under ``demo.output_dir``::

    python -m crewlib.demo --params quick [--rounds 6] [--target-index 0]
"""

from __future__ import annotations

import argparse
import json
import sys
from dataclasses import dataclass
from pathlib import Path

from crewlib.baselines import Generation, SystemUnavailableError
from crewlib.baselines.runner import run_system
from crewlib.config import ParamsError, load_params, resolve_path
from crewlib.data import DatasetUnavailableError, RWGExample
from crewlib.env.trace import EpisodeTrace
from crewlib.eval.relating import task_relating
from crewlib.llm import LLMError, embedded_runtime
from crewlib.schema import Params
from crewlib.tasks import Task, build_tasks


@dataclass(frozen=True)
class DemoResult:
    target: RWGExample
    generation: Generation
    trace: EpisodeTrace
    summary: dict
    output_dir: Path


def demo_target(params: Params, target_index: int) -> tuple[RWGExample, Task]:
    """The ``target_index``-th evaluation target of the configured data and its task."""
    pairs = build_tasks(params).evaluation
    if not pairs:
        raise DatasetUnavailableError("no evaluation target left after the pool filter (graph.min_connections)")
    return pairs[target_index % len(pairs)]


def run_demo(params: Params, *, rounds: int | None = None, target_index: int | None = None,
             output_dir: str | Path | None = None) -> DemoResult:
    """CREW on one evaluation target (the path ``crew write`` takes too: :func:`crewlib.baselines.runner.run_system`);
    ``rounds`` overrides ``baselines.crew.rounds`` through the validated params."""
    settings = params.demo
    target, task = demo_target(params, settings.target_index if target_index is None else target_index)
    out = resolve_path(output_dir or settings.output_dir)
    run = run_system(params, "crew", target, task, rounds=rounds)
    params, client, generation, crew = run.params, run.client, run.generation, run.system
    trace = crew.trace
    trace.save(out)
    client.ledger.to_csv(out / "ledger.csv")
    totals = client.ledger.totals()
    summary = {
        "target_id": target.target_id, "title": target.title, "model": client.model, "endpoint": client.endpoint,
        "policy": generation.notes["policy"], "rounds": generation.notes["rounds"],
        "agents": params.env.n_agents, "calls": totals["calls"], "prompt_tokens": totals["prompt_tokens"],
        "completion_tokens": totals["completion_tokens"], "billed_tokens": totals["billed_tokens"],
        "cache_hits": totals["cache_hits"], "prompt_tokens_cached": totals["prompt_tokens_cached"],
        "runtime": embedded_runtime(client.config.embedded) if client.config.provider == "embedded" else None,
        "fallbacks": trace.totals["fallbacks"],
        "wall_time_s": round(generation.wall_s, 2), "team_return": round(trace.totals["return"], 4),
        "citation_verification": trace.citation_check["verification"],
        "citation_markers": trace.citation_check["markers"], "draft_words": len(trace.final_draft.split()),
        "output_checks": trace.output_checks, **({"themes": trace.themes} if trace.themes else {}),
        "relating": task_relating(generation.text, run.task, params.output.support_threshold,
                                   params.eval.paragraph_sentences),
        "cost": client.ledger.breakdown(),
    }
    (out / "summary.json").write_text(json.dumps(summary, indent=2) + "\n")
    return DemoResult(target, generation, trace, summary, out)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m crewlib.demo", description=__doc__.split("\n")[0])
    parser.add_argument("--params", default="quick", help="params mode or YAML path (default: quick)")
    parser.add_argument("--rounds", type=int, default=None, help="rounds to play (default: baselines.crew.rounds)")
    parser.add_argument("--target-index", type=int, default=None, help="which evaluation target (default 0)")
    parser.add_argument("--out", default=None, help="output folder (default: demo.output_dir)")
    args = parser.parse_args(argv)
    try:
        demo = run_demo(load_params(args.params), rounds=args.rounds, target_index=args.target_index,
                        output_dir=args.out)
    except (LLMError, DatasetUnavailableError, SystemUnavailableError, ParamsError, ValueError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    s = demo.summary
    print(demo.trace.to_markdown())
    served = f" ({s['runtime']} llama.cpp)" if s["runtime"] else ""
    print(f"model: {s['model']}{served} | {s['agents']} agents x {s['rounds']} rounds | policy: {s['policy']}")
    print(f"cost: {s['calls']} LLM calls ({s['cache_hits']} answered from the cache), {s['prompt_tokens']} prompt "
          f"tokens ({s['prompt_tokens_cached']} reused from the server's prompt cache) + {s['completion_tokens']} "
          f"completion tokens, {s['fallbacks']} counted fallbacks, wall time {s['wall_time_s']:.1f} s")
    print(f"written: {demo.output_dir}/related_work.md, trace.json, summary.json, ledger.csv")
    return 0


if __name__ == "__main__":
    sys.exit(main())
