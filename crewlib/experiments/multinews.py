"""Notebook 07: CREW on Multi-News — the same controller and reward on another task.

Each Multi-News cluster becomes the environment's input (:meth:`MultiDocExample.to_rwg_example`:
the articles as references in a fully connected graph, the summary as the gold) and the prompts
describe the summary of a news event instead of a related-work section (``multinews.task_wording``,
applied to every message of the systems and judges by :func:`crewlib.prompts.for_task`,
:data:`crewlib.prompts.WORDINGS`). The controller,
the reward and the systems are unchanged. Scored with the judge's Coverage / Logic / Relevance /
Overall (the rubrics reworded for news) and ROUGE-1/2/L against the reference summary. Also a
command line for recording::

    python -m crewlib.experiments.multinews --params quick
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path

import pandas as pd

from crewlib.config import resolve_path, with_overrides
from crewlib.data.records import RWGExample
from crewlib.eval import EvalExample, Evaluator
from crewlib.experiments import paired, paper
from crewlib.experiments.run import Generations, run_generations
from crewlib.experiments.tables import beside_paper, metric_summary, results_table
from crewlib.llm import connect
from crewlib.schema import Params
from crewlib.tasks import task_for

COLUMNS = {"judge_coverage": "Coverage", "judge_logic": "Logic", "judge_relevance": "Relevance",
           "judge_overall": "Overall", "rouge1": "ROUGE-1", "rouge2": "ROUGE-2", "rougeL": "ROUGE-L",
           "citation_recall": "articles cited"}
METRICS = ("citation", "rouge", "judge")


@dataclass
class MultiNews:
    generations: Generations
    scores: pd.DataFrame
    examples: list[RWGExample]
    judges: list[str]
    model: str
    systems: tuple[str, ...]
    paired: pd.DataFrame | None = None  # the instrument's verdicts on (CREW, system) per cluster

    @cached_property
    def frame(self) -> pd.DataFrame:
        return self.generations.frame()

    def paired_table(self) -> pd.DataFrame | None:
        """CREW against each system, cluster by cluster, on the instrument; the paper's Overall margin beside."""
        if self.paired is None or self.paired.empty:
            return None
        return paired.paired_table(self.paired, paper_differences=paper.MULTINEWS_CREW_MINUS)

    def paired_conclusion(self, discrimination: pd.DataFrame | None = None) -> str:
        table = self.paired_table()
        if table is None:
            return "No paired comparison: CREW or the other systems wrote nothing to compare."
        return paired.conclusion(table, discrimination, unit="cluster")

    @cached_property
    def summary(self) -> pd.DataFrame:
        return metric_summary(self.scores)

    def table(self) -> pd.DataFrame:
        """Per system: the judge's dimensions and ROUGE (mean [95% CI] over clusters), cost; the paper's beside.

        ``keyed by overlap``: CREW's sentences per summary given their article's key by
        ``executor.attribute_uncited`` (the model wrote them without one).
        """
        table = results_table(self.scores, self.frame, COLUMNS, systems=self.systems)
        written = self.frame[self.frame.text.notna()]
        keyed = written.groupby("system").notes.apply(
            lambda notes: pd.Series([n.get("attributed_sentences") for n in notes], dtype=float).mean())
        table["keyed by overlap"] = keyed.reindex(table.index)
        return beside_paper(table,
                            paper.paper_cells(paper.MULTINEWS, COLUMNS))

    def crew_minus(self, metric: str = "judge_overall") -> pd.DataFrame:
        """CREW minus each other system on ``metric`` (ours), and the difference the paper states."""
        mean = self.summary.set_index(["system", "metric"])["mean"]
        crew = mean.get(("crew", metric), float("nan"))
        rows = [{"CREW −": system, "ours": crew - mean.get((system, metric), float("nan")),
                 "paper": paper.MULTINEWS_CREW_MINUS.get(system) if metric == "judge_overall" else None}
                for system in self.systems if system != "crew"]
        return pd.DataFrame(rows, columns=["CREW −", "ours", "paper"]).set_index("CREW −")

    def headline(self) -> dict:
        return {"systems": list(self.systems), "examples": [e.target_id for e in self.examples],
                "model": self.model, "judges": self.judges, "summary": self.summary,
                "crew_minus": self.crew_minus().reset_index(),
                "paired": None if (table := self.paired_table()) is None else table.reset_index(),
                "drafts": {s: int(self.frame[self.frame.system == s].text.notna().sum()) for s in self.systems},
                "errors": {s: sorted(set(self.frame[(self.frame.system == s) & self.frame.text.isna()].error
                                         .astype(str))) for s in self.systems}}


def multinews_params(params: Params) -> Params:
    """The run's params with the prompts reworded for Multi-News (``multinews.task_wording``), the prompts' edition
    and Compose form of ``multinews.prompt_edition`` / ``multinews.compose_form`` (a news summary has no paper to
    relate its articles to: the relating edition's closing sentence on "this paper" has nothing to say) and, with
    ``multinews.attribute_uncited``, CREW's uncited news sentences given their source's key."""
    settings = params.multinews
    return with_overrides(params, {"llm": {"task_wording": settings.task_wording,
                                           "prompt_edition": settings.prompt_edition},
                                   "executor": {"attribute_uncited": settings.attribute_uncited,
                                                "compose_form": settings.compose_form}})


def multinews_examples(params: Params, targets: int | None = None) -> list[RWGExample]:
    """The first ``targets`` clusters of ``multinews.split`` (``data.source`` says from where) as RWG examples."""
    from crewlib.data.loaders import DatasetUnavailableError, load_task_data

    clusters, report = load_task_data(params, "multinews", split=params.multinews.split, limit=targets)
    if not clusters:
        raise DatasetUnavailableError(f"no Multi-News cluster to run on ({report})")
    return [c.to_rwg_example() for c in clusters[:targets]]


def run_multinews(params: Params, *, systems: Sequence[str] | None = None, targets: int | None = None,
                  metrics: Sequence[str] = METRICS, out_dir: str | Path | None = None,
                  progress: bool = False) -> MultiNews:
    """Every system of ``multinews.systems`` on the clusters; resumable in ``out_dir`` (``multinews.out_dir``)."""
    mparams = multinews_params(params)
    systems = tuple(systems or params.multinews.systems)
    examples = multinews_examples(mparams, targets)
    client = connect(mparams)
    generations = run_generations(list(systems), examples, mparams, client,
                                  tasks={e.target_id: task_for(mparams, e) for e in examples},
                                  out_dir=resolve_path(out_dir or params.multinews.out_dir), progress=progress)
    evaluator = Evaluator(mparams)
    eval_examples = [EvalExample.from_rwg(e) for e in examples]
    frame = generations.frame()
    scores = evaluator.score(frame, eval_examples, metrics=list(metrics), progress=progress)
    found = paired.compare_on_instrument(mparams, frame, scores, eval_examples, systems, evaluator=evaluator,
                                         progress=progress) if "crew" in systems else None
    return MultiNews(generations, scores, examples, [j.name for j in evaluator.judges], client.model, systems, found)


def main() -> None:
    import argparse
    import os

    from crewlib.config import load_params

    parser = argparse.ArgumentParser(description="Record (or resume) notebook 07: the systems on Multi-News.")
    parser.add_argument("--params", default="quick")
    parser.add_argument("--cache-dir", default="notebooks/llm_cache")
    parser.add_argument("--systems", default=None, help="comma-separated (default: multinews.systems)")
    parser.add_argument("--targets", type=int, default=None)
    args = parser.parse_args()
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    params = load_params(args.params, {"llm": {"cache_dir": args.cache_dir}})
    run = run_multinews(params, systems=args.systems.split(",") if args.systems else None, targets=args.targets,
                        progress=True)
    pd.set_option("display.width", 250)
    print(run.table().to_string())
    print(run.crew_minus().round(2).to_string())


if __name__ == "__main__":
    main()
