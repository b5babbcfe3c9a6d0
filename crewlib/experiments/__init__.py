"""The experiment layer: run systems over examples, score them, tabulate them beside the paper.

>>> from crewlib import experiments
>>> gens = experiments.run_generations(["crew", "srw"], examples, params, client, out_dir="outputs/05")
>>> scores = experiments.score(gens, examples, params, metrics=["citation", "judge"])
>>> table = experiments.results_table(scores, gens.frame(), {"judge_overall": "Overall"})

- :mod:`.run` — typed generations (:class:`GenerationResult`), resumable in one output folder,
  on the ``local`` or the ``ray`` backend (``experiments.backend``);
- :mod:`.tables` — mean and bootstrap 95% CI per system and metric, cost columns, counts of
  unavailable metrics and missing judgements, the paper's numbers beside ours;
- :mod:`.paper` — the published numbers and the conditions of each run;
- :mod:`.discrimination` — how well a judge ranks the gold section above damaged copies of it;
- :mod:`.results` — the headline results a notebook writes and a test reads.
"""

from __future__ import annotations

from collections.abc import Sequence

import pandas as pd

from crewlib.data.records import RWGExample
from crewlib.eval import EvalExample, Evaluator
from crewlib.experiments.run import (
    BACKENDS,
    GenerationResult,
    Generations,
    generate_pair,
    read_generations,
    run_generations,
)
from crewlib.experiments.tables import beside_paper, bootstrap_ci, metric_summary, results_table
from crewlib.schema import Params

__all__ = ["BACKENDS", "GenerationResult", "Generations", "beside_paper", "bootstrap_ci",
           "generate_pair", "metric_summary", "read_generations", "results_table", "run_generations", "score"]


def score(generations: Sequence[GenerationResult], examples: Sequence[RWGExample], params: Params, *,
          metrics: Sequence[str], evaluator: Evaluator | None = None, progress: bool = False) -> pd.DataFrame:
    """The evaluation suite's tidy scores of ``generations`` (unavailable and missing in ``attrs``)."""
    evaluator = evaluator or Evaluator(params)
    rows = [g.to_row() for g in generations]
    return evaluator.score(pd.DataFrame(rows), [EvalExample.from_rwg(e) for e in examples], metrics=metrics,
                           progress=progress)
