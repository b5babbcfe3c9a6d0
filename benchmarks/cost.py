"""Where the cost goes: CREW, SRW and the Orchestrator on the same papers, broken down in one run (issue 47).

Usage: python benchmarks/cost.py [--params quick] [--targets N] [--systems crew,srw,orchestrator]
                                 [--local papers.jsonl ...] [--hoang-kan rws.jsonl ...] [--recent papers.jsonl ...]

The papers are those of ``benchmarks/quality.py`` (same options). Every system writes every paper in this run (no
generation is resumed from a file, so every call is in the ledger; answers already in the LLM cache cost nothing
again and keep the tokens and seconds they cost when produced). Printed per system: calls, prompt and completion
tokens, the share of prompt tokens the endpoint reused from its prompt cache (live calls only), and the model
seconds; then by action (the caller's role), by prompt part (fixed instructions, target, references, notes, draft:
:meth:`crewlib.llm.ledger.Ledger.breakdown`) and, for CREW, by round; and CREW's tokens as a share of SRW's (the
paper: 12.9% fewer).
"""

from __future__ import annotations

import argparse
import os

import pandas as pd

os.environ.setdefault("HF_HUB_OFFLINE", "1")

from quality import add_paper_arguments, papers, run_params  # noqa: E402  (benchmarks/, beside this script)

from crewlib.config import resolve_path  # noqa: E402
from crewlib.experiments import run_generations  # noqa: E402
from crewlib.llm import Ledger, connect  # noqa: E402

SYSTEMS = "crew,srw,orchestrator"


def tables(records, systems: list[str]) -> dict[str, pd.DataFrame]:
    """The run's cost by system, by system and action, by system and part, and CREW's by round."""
    ledger = Ledger()
    totals, actions, parts, rounds = [], [], [], []
    for system in systems:
        mine = [r for r in records if r.system == system]
        cost = ledger.breakdown(mine)
        live = [r for r in mine if not r.cache_hit]
        prompt = sum(r.prompt_tokens for r in mine)
        totals.append({"system": system, "calls": len(mine), "prompt_tokens": prompt,
                       "completion_tokens": sum(r.completion_tokens for r in mine),
                       "tokens": prompt + sum(r.completion_tokens for r in mine),
                       "reused_share": (sum(r.prompt_tokens_cached for r in live)
                                        / max(sum(r.prompt_tokens for r in live), 1) if live else float("nan")),
                       "model_s": round(sum(r.recorded_latency_s for r in mine), 1)})
        actions += [{"system": system, "action": a, **row} for a, row in cost["by_action"].items()]
        parts += [{"system": system, "part": p, "prompt_tokens": v, "share": v / max(prompt, 1)}
                  for p, v in cost["by_part"].items()]
        if system == "crew":
            rounds += [{"round": int(t), **row} for t, row in cost["by_round"].items()]
    return {"totals": pd.DataFrame(totals), "actions": pd.DataFrame(actions), "parts": pd.DataFrame(parts),
            "rounds": pd.DataFrame(rounds)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    add_paper_arguments(parser, SYSTEMS)
    args = parser.parse_args()
    params = run_params(args)
    examples, tasks = papers(args, params, resolve_path("outputs/cost"))
    systems = args.systems.split(",")
    client = connect(params)
    mark = client.ledger.mark()
    run_generations(systems, examples, params, client, tasks=tasks, out_dir=None, progress=False)
    found = tables(client.ledger.since(mark), systems)
    pd.set_option("display.width", 200)
    print(f"model: {client.model} · {len(examples)} papers · prompt parts are shares of each call's measured prompt "
          "tokens by the template's fields (estimates)")
    for name in ("totals", "actions", "parts", "rounds"):
        if not found[name].empty:
            print(f"\n{name}:\n{found[name].round(3).to_string(index=False)}")
    totals = found["totals"].set_index("system")
    if {"crew", "srw"} <= set(totals.index):
        print(f"\nCREW's tokens / SRW's: {totals.loc['crew', 'tokens'] / totals.loc['srw', 'tokens']:.3f} "
              "(the paper: 0.871, 12.9% fewer)")


if __name__ == "__main__":
    main()
