"""The evaluation suite (docs/method.md §Metrics): every system's output is scored by this one package.

- :mod:`crewlib.eval.suite` — :class:`Evaluator`, the entry point returning tidy scores
- :mod:`crewlib.eval.text_metrics` — ROUGE, BERTScore (offline MiniLM, labelled)
- :mod:`crewlib.eval.rwgbench`, :mod:`crewlib.eval.marwg` — the two benchmarks' metrics
- :mod:`crewlib.eval.llm_metrics` — LLM judges, NLI and citation-function labelling
- :mod:`crewlib.eval.human` — pair packets and the analysis of human judgements
"""

from crewlib.eval.records import EvalExample, EvalReference
from crewlib.eval.suite import LLM_METRICS, REFERENCE_METRICS, EvalSettings, Evaluator, Unavailable, summarise

__all__ = ["LLM_METRICS", "REFERENCE_METRICS", "EvalExample", "EvalReference", "EvalSettings", "Evaluator",
           "Unavailable", "summarise"]
