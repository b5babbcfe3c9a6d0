"""The evaluation suite (docs/method.md §Metrics): every system's output is scored by this one package.

- :mod:`crewlib.eval.suite` — :class:`Evaluator`, the entry point returning tidy scores
- :mod:`crewlib.eval.text_metrics` — ROUGE, BERTScore (offline MiniLM, labelled)
- :mod:`crewlib.eval.rwgbench`, :mod:`crewlib.eval.marwg_metrics` — the two benchmarks' metrics
- :mod:`crewlib.eval.llm_metrics` — LLM judges, NLI and citation-function labelling
- :mod:`crewlib.eval.human` — pair packets and the filled sheets read back; :mod:`crewlib.eval.human_stats` — the
  analysis of human judgements
"""

from crewlib.eval.examples import EvalExample, EvalReference
from crewlib.eval.suite import LLM_METRICS, REFERENCE_METRICS, Evaluator, Unavailable, summarise

__all__ = ["LLM_METRICS", "REFERENCE_METRICS", "EvalExample", "EvalReference", "Evaluator",
           "Unavailable", "summarise"]
