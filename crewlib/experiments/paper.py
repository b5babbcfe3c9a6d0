"""The published numbers our tables set beside ours, and the conditions of each (docs/results.md).

Sources: the CREW paper (main results, SRW comparison, human evaluation), the MA-RWG paper
(its own metrics, on its own data and backbone) and RWGBench (its retrieval setting). Only numbers
these papers report are here; where a paper gives a difference (CREW vs SRW), the difference is kept as such and ours is
computed the same way, never turned into an absolute number the paper does not print.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import pandas as pd

from crewlib.schema import Params

# The paper's setting (its §4.1, Appendix D.1): Qwen 2.5 72B Instruct is the LLM executor in policy training and the
# writer in the main results (SRW's and the Orchestrator's too); GPT-4o is one of the three judges and one transfer
# backbone, not the writer.
PAPER_WRITER = "Qwen 2.5 72B Instruct"
PAPER_JUDGES = "GPT-4o, LLaMA 3.3 70B, DeepSeek-V3 (mean)"
CREW_PAPER = {"source": "CREW paper", "model": PAPER_WRITER, "data": "OARelatedWork evaluation split", "papers": 366,
              "rounds": 15, "judges": PAPER_JUDGES}
MARWG_PAPER = {"source": "MA-RWG paper", "model": "its own backbone", "data": "its own benchmark", "papers": None,
               "rounds": None, "judges": "its own"}
# How a "(paper)" column names the paper's condition
PAPER_LABEL = "paper (Qwen 2.5 72B, judges)"

# (system, metric of the evaluation suite) → number, CREW paper main table. The 98.67% citation verification is the
# Naive Orchestrator's; the paper gives no verification figure for CREW.
MAIN = {("crew", "judge_overall"): 3.82, ("orchestrator", "judge_overall"): 3.80,
        ("naive_orchestrator", "judge_overall"): 3.40, ("naive_orchestrator", "citation_verification"): 0.9867}
# CREW minus SRW, as the paper states it: +0.06 Overall, +23.54% citation verification (the paper does not say
# whether points or relative; kept as a share), −12.90% tokens (relative)
CREW_MINUS_SRW = {"judge_overall": 0.06, "citation_verification": 0.2354, "tokens_relative": -0.1290}
# MA-RWG on its own benchmark (metric of the evaluation suite → number); wall time per article in seconds
MARWG = {"citp": 0.910, "rc": 0.812, "tq": 4.046, "sn_f1": 0.624, "clap": 0.900, "wall_s": 1100.0}
# MA-RWG's ablation (its Table 2; its text gives only these): what each variant loses, in its words
MARWG_ABLATIONS = {"w/o taxonomy (DAG)": "TQ −18.4%",
                   "w/o fact-checking": "CitP −46.3%, ClaP −49.8% (the steepest drops)",
                   "w/o summarisation": "weaker evidence alignment",
                   "w/o feedback": "less evaluative depth and clarity"}
# Ablations (CREW paper, ablation table; Qwen 2.5 72B, the judges' scores and citation verification): what the
# paper reports for each variant, in its words where it gives no single number
ABLATIONS = {"w/o Critique": "Overall 2.58 (CREW 3.82)",
             "w/o social features": "Coverage / Logic / Relevance about 3.30",
             "w/o draft-quality reward": "citation verification about halved, Overall slightly up",
             "CREW": "Overall 3.82"}
# The one ablation the paper gives as a single Overall number: CREW's Overall minus it (3.82 − 2.58)
ABLATION_OVERALL_DROP = {"w/o Critique": round(3.82 - 2.58, 2)}
# RWGBench's Table 2, GPT-5.5 rows (docs/results.md): its corpus of 1.09M documents, 100 test papers, top-50
# candidates. Its soft recall is stated for Oracle-RAG only.
RWGBENCH_RETRIEVAL = {
    ("RWGBench RAG", "bm25"): {"hard recall": 0.140, "coverage": 0.144},
    ("RWGBench RAG", "dense"): {"hard recall": 0.175, "coverage": 0.182},
    ("RWGBench workflow, multi-query", "bm25"): {"hard recall": 0.161, "coverage": 0.167},
    ("RWGBench workflow, multi-query", "dense"): {"hard recall": 0.178, "coverage": 0.186},
    ("RWGBench Oracle-RAG", "gold citations given"): {"hard recall": 0.971, "soft recall": 0.993, "precision": 1.000},
}
RWGBENCH_RETRIEVAL_CONDITION = "paper (RWGBench, GPT-5.5; top 50 of 1.09M documents, 100 papers)"
# 5% injected API failures (CREW paper): the wall seconds it reports for each system under failures
API_FAILURES = {"crew": 812.0, "orchestrator": 1012.0}
# Transfer (CREW paper): the controller trained once with Qwen 2.5 72B, the inference LLM swapped; Overall of long
# context → CREW on the same backbone ("LLaMA 8B": the paper names no version). Qwen 2.5 72B is the main results'
# backbone (CREW 3.82 in the main table); GPT-4o 3.82 as the paper states it; neither has a long-context number.
TRANSFER = {"LLaMA 8B": (3.04, 3.57), "Gemini 2.0 Flash": (3.28, 3.71), "Qwen 2.5 72B": (None, 3.82),
            "GPT-4o": (None, 3.82)}
# Multi-News (CREW paper): CREW's Overall, and its margin over the Orchestrator and SRW as the paper states them
MULTINEWS = {("crew", "judge_overall"): 3.84}
MULTINEWS_CREW_MINUS = {"orchestrator": 0.09, "srw": 0.47}
# SQ2E paper, Table 1: length statistics of its 300-document test samples (mean per document)
SQ2E_LENGTHS = {
    "arxiv": {"article words": 5171.85, "article sentences": 206.3, "summary words": 257.94,
              "summary sentences": 9.61},
    "pubmed": {"article words": 2872.13, "article sentences": 206.3, "summary words": 194.22,
               "summary sentences": 6.85},
}
# SQ2E paper, Table 3 (0–100 scale): (model, dataset, system) →, R-L, BERTScore, FactCC. The LLaMA-3.1-8B DG
# rows are identical on both datasets, as printed.
SQ2E_METRICS = ("R-1", "R-2", "R-L", "BERTScore", "FactCC")
SQ2E_TABLE3 = {
    ("LLaMA-3.1-8B", "arxiv", "DG"): (32.22, 8.23, 16.25, 80.41, 54.33),
    ("LLaMA-3.1-8B", "arxiv", "HERA"): (30.03, 7.51, 15.39, 80.28, 70.00),
    ("LLaMA-3.1-8B", "arxiv", "SQ2E"): (34.19, 8.07, 16.89, 81.38, 60.67),
    ("LLaMA-3.1-70B", "arxiv", "DG"): (33.53, 9.44, 17.65, 80.99, 61.00),
    ("LLaMA-3.1-70B", "arxiv", "HERA"): (37.23, 10.66, 19.06, 82.19, 47.33),
    ("LLaMA-3.1-70B", "arxiv", "SQ2E"): (38.89, 11.27, 18.95, 84.01, 50.67),
    ("DeepSeek-R1", "arxiv", "DG"): (36.19, 10.64, 17.88, 81.28, 46.0),
    ("DeepSeek-R1", "arxiv", "HERA"): (36.78, 10.28, 19.64, 82.49, 57.0),
    ("DeepSeek-R1", "arxiv", "SQ2E"): (38.94, 11.74, 20.22, 82.33, 52.67),
    ("LLaMA-3.1-8B", "pubmed", "DG"): (32.22, 8.23, 16.25, 80.41, 54.33),
    ("LLaMA-3.1-8B", "pubmed", "HERA"): (29.66, 8.11, 16.26, 81.90, 59.33),
    ("LLaMA-3.1-8B", "pubmed", "SQ2E"): (34.65, 9.16, 17.35, 82.41, 55.0),
    ("LLaMA-3.1-70B", "pubmed", "DG"): (39.58, 14.25, 20.7, 82.86, 58.33),
    ("LLaMA-3.1-70B", "pubmed", "HERA"): (35.34, 11.31, 19.67, 83.14, 37.33),
    ("LLaMA-3.1-70B", "pubmed", "SQ2E"): (36.82, 12.28, 20.60, 83.87, 54.0),
    ("DeepSeek-R1", "pubmed", "DG"): (35.43, 11.03, 17.70, 81.82, 34.33),
    ("DeepSeek-R1", "pubmed", "HERA"): (31.03, 9.57, 18.04, 83.27, 38.67),
    ("DeepSeek-R1", "pubmed", "SQ2E"): (37.29, 12.04, 19.86, 83.21, 35.67),
}
# SQ2E paper, Figure 3: valid questions per run, in most runs (both datasets)
SQ2E_VALID_QUESTIONS = {"expert": (3, 4), "editor": (2, 3)}
# The paper's split (CREW §4.1): training and evaluation papers
SPLIT = {"train": 1829, "evaluation": 366}
# Human pairwise evaluation, CREW vs SRW (20 papers): share of judgements preferring CREW
HUMAN_CREW_VS_SRW = {"coverage": 0.53, "logic": 0.60, "relevance": 0.57, "overall": 0.567}


def paper_cells(numbers: Mapping[tuple[str, str], float], labels: Mapping[str, str]) -> dict[tuple[str, str], float]:
    """(system, metric) → number as (system, column label) → number, for :func:`~.tables.beside_paper`."""
    return {(system, labels[metric]): v for (system, metric), v in numbers.items() if metric in labels}


def conditions(ours: Mapping, *papers: Mapping) -> pd.DataFrame:
    """The conditions table shown under every results table: one row per source."""
    rows = [{"source": "ours", **{k: v for k, v in ours.items() if k != "source"}}, *[dict(p) for p in papers]]
    return pd.DataFrame(rows).astype(object).set_index("source").fillna("—")


def our_conditions(params: Params, *, model: str, papers: int, judges: Sequence[str], systems_rounds: str,
                   executor: str = "LLM") -> dict:
    """What our run was: model, data, papers, rounds and judges, read from the params it ran with."""
    data = params.data
    source = {"sample": "bundled sample (evaluation split)", "hub": "OARelatedWork (Hub) evaluation split",
              "local": f"local files ({data.oarelatedwork_path})"}.get(data.source, data.source)
    return {"model": model, "data": source, "papers": papers, "rounds": systems_rounds,
            "judges": ", ".join(judges), "executor": executor}
