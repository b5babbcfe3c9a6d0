"""The published numbers our tables set beside ours, and the conditions of each (docs/results.md).

Sources: the CREW paper (main results, SRW comparison, human evaluation) and the MA-RWG paper
(its own metrics, on its own data and backbone). Only numbers these papers report are here;
where a paper gives a difference (CREW vs SRW), the difference is kept as such and ours is
computed the same way, never turned into an absolute number the paper does not print.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import pandas as pd

CREW_PAPER = {"source": "CREW paper", "model": "GPT-4o", "data": "OARelatedWork evaluation split", "papers": 366,
              "rounds": 15, "judges": "GPT-4o, LLaMA 3.3 70B, DeepSeek-V3 (mean)"}
MARWG_PAPER = {"source": "MA-RWG paper", "model": "its own backbone", "data": "its own benchmark", "papers": None,
               "rounds": None, "judges": "its own"}

# (system, metric of the evaluation suite) → number, CREW paper main table
MAIN = {("crew", "judge_overall"): 3.82, ("orchestrator", "judge_overall"): 3.80,
        ("naive_orchestrator", "judge_overall"): 3.40, ("crew", "citation_verification"): 0.9867}
# CREW minus SRW, as the paper states it: Overall points, verification percentage points, tokens relative
CREW_MINUS_SRW = {"judge_overall": 0.06, "citation_verification": 0.2354, "tokens_relative": -0.1290}
# MA-RWG on its own benchmark (metric of the evaluation suite → number); wall time per article in seconds
MARWG = {"citp": 0.910, "rc": 0.812, "tq": 4.046, "sn_f1": 0.624, "clap": 0.900, "wall_s": 1100.0}
# Ablations (CREW paper, ablation table; GPT-4o, judges' Overall and citation verification): what the paper
# reports for each variant, in its words where it gives no single number (DESIGN figures; docs/results.md)
ABLATIONS = {"w/o Critique": "Overall 2.58 (CREW 3.82)",
             "w/o social features": "Coverage / Logic / Relevance about 3.30",
             "w/o draft-quality reward": "citation verification about halved (CREW 98.67%)",
             "CREW": "Overall 3.82, citation verification 98.67%"}
# The one ablation the paper gives as a single Overall number: CREW's Overall minus it (3.82 − 2.58)
ABLATION_OVERALL_DROP = {"w/o Critique": round(3.82 - 2.58, 2)}
# 5% injected API failures (CREW paper): the wall seconds it reports for each system under failures
API_FAILURES = {"crew": 812.0, "orchestrator": 1012.0}
# Transfer (CREW paper): the controller trained once, the inference LLM swapped; Overall of long context → CREW
# on the same backbone (GPT-4o: CREW's main-table number; the paper gives no long-context number beside it here)
TRANSFER = {"LLaMA 3.1 8B": (3.04, 3.57), "Gemini 2.0 Flash": (3.28, 3.71), "GPT-4o": (None, 3.82)}
# Multi-News (CREW paper): CREW's Overall, and its margin over the Orchestrator and SRW as the paper states them
MULTINEWS = {("crew", "judge_overall"): 3.84}
MULTINEWS_CREW_MINUS = {"orchestrator": 0.09, "srw": 0.47}
# SQ2E paper, Table 1: length statistics of its 300-document test samples (mean per document)
SQ2E_LENGTHS = {
    "arxiv": {"article words": 5171.85, "article sentences": 206.32, "summary words": 257.94,
              "summary sentences": 9.61},
    "pubmed": {"article words": 2872.13, "article sentences": 206.31, "summary words": 194.22,
               "summary sentences": 6.85},
}
# Human pairwise evaluation, CREW vs SRW (20 papers): share of judgements preferring CREW
HUMAN_CREW_VS_SRW = {"coverage": 0.53, "logic": 0.60, "relevance": 0.57, "overall": 0.567}


def paper_cells(numbers: Mapping[tuple[str, str], float], labels: Mapping[str, str]) -> dict[tuple[str, str], float]:
    """(system, metric) → number as (system, column label) → number, for :func:`~.tables.beside_paper`."""
    return {(system, labels[metric]): v for (system, metric), v in numbers.items() if metric in labels}


def conditions(ours: Mapping, *papers: Mapping) -> pd.DataFrame:
    """The conditions table shown under every results table: one row per source."""
    rows = [{"source": "ours", **{k: v for k, v in ours.items() if k != "source"}}, *[dict(p) for p in papers]]
    return pd.DataFrame(rows).astype(object).set_index("source").fillna("—")


def our_conditions(params: Mapping, *, model: str, papers: int, judges: Sequence[str], systems_rounds: str,
                   executor: str = "LLM") -> dict:
    """What our run was: model, data, papers, rounds and judges, read from the params it ran with."""
    data = params["data"]
    source = {"sample": "bundled sample (evaluation split)", "hub": "OARelatedWork (Hub) evaluation split",
              "local": f"local files ({data.get('oarelatedwork_path')})"}.get(data["source"], data["source"])
    return {"model": model, "data": source, "papers": papers, "rounds": systems_rounds,
            "judges": ", ".join(judges), "executor": executor}
