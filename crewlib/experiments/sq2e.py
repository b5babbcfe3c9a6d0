"""Notebook 10: SQ2E against Direct Generation and HERA on arXiv and PubMed (crewlib/sq2e).

``run_sq2e(params)`` summarises the documents of each dataset of ``sq2e.datasets`` with each system
of ``sq2e.systems`` (resumable: one generations folder per dataset under ``sq2e.out_dir``), scores
the summaries against the reference abstracts (ROUGE-1/2/L, BERTScore with the offline MiniLM) and
the documents (the FactCC-style factual consistency of :mod:`crewlib.sq2e.metrics`), and counts
SQ2E's valid questions per role. Also a command line for recording::

    python -m crewlib.experiments.sq2e --params quick
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path

import numpy as np
import pandas as pd

from crewlib.config import resolve_path
from crewlib.data.records import LongDocument
from crewlib.eval.text_metrics import BERTSCORE_LABEL, bertscore, rouge
from crewlib.experiments import paper
from crewlib.experiments.run import GenerationResult, Generations, result_of, resumable
from crewlib.experiments.tables import ci_cell, metric_summary
from crewlib.llm import LLMClient, LLMError, connect
from crewlib.schema import Params
from crewlib.sq2e import FactualConsistency, make_summariser
from crewlib.sq2e.systems import ROLES

COLUMNS = {"rouge1": "ROUGE-1", "rouge2": "ROUGE-2", "rougeL": "ROUGE-L", "bertscore_minilm_f1": "BERTScore*",
           "factual_consistency": "factual consistency"}


def load_documents(params: Params, dataset: str, targets: int | None = None) -> list[LongDocument]:
    """The documents of ``sq2e.split`` of ``dataset`` (``data.source`` says from where): the first ``targets`` when
    given, else a random sample of ``sq2e.documents`` drawn with ``sq2e.sample_seed`` (in the split's order), else
    all of them."""
    from crewlib.data.loaders import DatasetUnavailableError, load_task_data
    from crewlib.data.split import seeded_sample

    settings = params.sq2e
    docs, report = load_task_data(params, dataset, split=settings.split, limit=targets)
    if not docs:
        raise DatasetUnavailableError(f"no {dataset} document to summarise ({report})")
    if targets is None:
        docs = seeded_sample(docs, settings.documents, settings.sample_seed)
    return docs[:targets]


def summarise_pair(name: str, doc: LongDocument, params: Params, client: LLMClient) -> GenerationResult:
    """One summariser on one document; a failure gives a result with its error."""
    try:
        return result_of(make_summariser(name, params, client).summarise(doc))
    except (LLMError, ValueError) as exc:
        return GenerationResult(name, doc.id, None, f"{type(exc).__name__}: {exc}")


_SENTENCE_END = re.compile(r"(?<=[.!?])\s+|\n+")


def count_sentences(text: str) -> int:
    """Sentences as the datasets delimit them: a line each (their sentence lists joined by the loader), and
    within a line a stop followed by a space, whatever the case of the next word (the datasets are lower-cased
    and tokenised: "... eccentricities observed . unlike ...")."""
    return sum(1 for s in _SENTENCE_END.split(text) if re.search(r"\w", s))


def length_statistics(docs: Sequence[LongDocument]) -> dict[str, float]:
    """The paper's Table 1 for a set of documents: mean words and sentences of articles and of summaries."""
    def mean(values):
        return float(np.mean(values)) if values else float("nan")

    return {"documents": len(docs),
            "article words": mean([len(d.article.split()) for d in docs]),
            "article sentences": mean([count_sentences(d.article) for d in docs]),
            "summary words": mean([len(d.abstract.split()) for d in docs]),
            "summary sentences": mean([count_sentences(d.abstract) for d in docs])}


@dataclass
class SQ2EResults:
    documents: dict[str, list[LongDocument]]  # dataset → documents
    generations: dict[str, Generations]  # dataset → its generations
    scores: pd.DataFrame  # dataset, system, example, metric, value
    fact_label: str
    model: str
    systems: tuple[str, ...]

    @cached_property
    def frame(self) -> pd.DataFrame:
        return pd.concat([g.frame().assign(dataset=d) for d, g in self.generations.items()], ignore_index=True)

    @cached_property
    def summary(self) -> pd.DataFrame:
        """``dataset, system, metric, n, mean, ci_low, ci_high`` (bootstrap over documents)."""
        out = metric_summary(self.scores.assign(run=self.scores.dataset + "\t" + self.scores.system), by="run")
        out[["dataset", "system"]] = out.pop("run").str.split("\t", expand=True)
        return out[["dataset", "system", "metric", "n", "mean", "ci_low", "ci_high"]]

    def lengths(self) -> pd.DataFrame:
        """Table 1: ours per dataset, the paper's 300-document test samples beside."""
        rows = [{"dataset": d, "source": "ours", **length_statistics(docs)} for d, docs in self.documents.items()]
        rows += [{"dataset": d, "source": "paper (its Table 1: dataset statistics)", **numbers}
                 for d, numbers in paper.SQ2E_LENGTHS.items() if d in self.documents]
        return pd.DataFrame(rows).set_index(["dataset", "source"])

    def table(self) -> pd.DataFrame:
        """Table 3 as measured: per dataset and system, each metric's mean [95% CI], drafts and cost."""
        summary = self.summary.assign(run=self.summary.dataset + "\t" + self.summary.system).set_index(
            ["run", "metric"])
        rows = []
        for (dataset, system), part in self.frame.groupby(["dataset", "system"], sort=False):
            done = part[part.text.notna()]
            row = {"dataset": dataset, "system": system, "summaries": f"{len(done)}/{len(part)}"}
            row.update({label: ci_cell(summary, f"{dataset}\t{system}", m, 3) for m, label in COLUMNS.items()})
            row.update({"words": done.text.str.split().str.len().mean(), "LLM calls": done.calls.mean(),
                        "tokens in": done.prompt_tokens.mean(), "tokens out": done.completion_tokens.mean(),
                        "LLM s": done.llm_s.mean(), "fallbacks": done.fallbacks.mean()})
            rows.append(row)
        return pd.DataFrame(rows).set_index(["dataset", "system"])

    def beside_paper(self) -> pd.DataFrame:
        """Table 3 on the paper's 0–100 scale and in its columns (R-1, R-2, R-L, BERTScore, FactCC): ours (each
        metric's mean × 100, this run's model) and the paper's rows for each of its three models, per dataset and
        system. Ours differ in kind in two columns: our BERTScore is the offline MiniLM's, our FactCC this project's
        checker (``fact_label``) unless the FactCC weights were given."""
        mean = self.summary.set_index(["dataset", "system", "metric"])["mean"]
        rows = []
        for dataset in self.documents:
            for system in self.systems:
                rows.append({"dataset": dataset, "system": system.upper(), "model": f"{self.model} (ours)",
                             **{label: 100 * mean.get((dataset, system, metric), float("nan"))
                                for metric, label in zip(COLUMNS, paper.SQ2E_METRICS, strict=True)}})
            rows += [{"dataset": dataset, "system": system, "model": f"{model} (paper)",
                      **dict(zip(paper.SQ2E_METRICS, values, strict=True))}
                     for (model, d, system), values in paper.SQ2E_TABLE3.items() if d == dataset]
        frame = pd.DataFrame(rows)
        frame["system"] = pd.Categorical(frame.system, ["DG", "HERA", "SQ2E"])
        return frame.sort_values(["dataset", "system"], kind="stable").set_index(["dataset", "system", "model"])

    def valid_questions_beside_paper(self) -> pd.DataFrame:
        """Figure 3's counts: our valid questions per document and role, the paper's range for most runs beside."""
        valid = self.valid_questions()
        low_high = valid.role.map(paper.SQ2E_VALID_QUESTIONS)
        return valid.assign(**{"paper (most runs)": low_high.map(lambda r: f"{r[0]}–{r[1]}" if isinstance(r, tuple)
                                                                 else "—")})

    def valid_questions(self) -> pd.DataFrame:
        """Figure 3: per dataset and role, questions asked and valid (their revision kept), summed over documents."""
        rows = []
        sq2e = self.frame[(self.frame.system == "sq2e") & self.frame.text.notna()]
        for dataset, part in sq2e.groupby("dataset", sort=False):
            for role in ROLES:
                asked = sum(n["asked"][role] for n in part.notes)
                valid = sum(n["valid"][role] for n in part.notes)
                rows.append({"dataset": dataset, "role": role, "documents": len(part), "asked": asked, "valid": valid,
                             "valid per document": valid / len(part), "valid share": valid / asked if asked else 0.0})
        return pd.DataFrame(rows, columns=["dataset", "role", "documents", "asked", "valid", "valid per document",
                                           "valid share"])

    def example_trace(self, dataset: str | None = None, doc_id: str | None = None) -> dict:
        """SQ2E's work on one document: the initial summary, every question and answer, what the Evaluator kept.

        By default the first document where the Evaluator kept a revision (the whole mechanism at work), else the
        first."""
        sq2e = self.frame[(self.frame.system == "sq2e") & self.frame.text.notna()]
        if dataset:
            sq2e = sq2e[sq2e.dataset == dataset]
        if doc_id:
            sq2e = sq2e[sq2e.example == doc_id]
        if sq2e.empty:
            raise ValueError(f"no SQ2E summary for dataset={dataset!r}, document={doc_id!r}")
        kept = [i for i, notes in enumerate(sq2e.notes) if any(step["valid"] for step in notes["steps"])]
        row = sq2e.iloc[kept[0] if kept and not doc_id else 0]
        return {"dataset": row.dataset, "document": row.example, "initial": row.notes["initial"],
                "steps": row.notes["steps"], "final": row.text}

    def headline(self) -> dict:
        return {"datasets": list(self.documents), "systems": list(self.systems), "model": self.model,
                "documents": {d: [doc.id for doc in docs] for d, docs in self.documents.items()},
                "summary": self.summary, "valid_questions": self.valid_questions(), "lengths": self.lengths(),
                "fact_label": self.fact_label, "bertscore_label": BERTSCORE_LABEL,
                "summaries": self.frame.assign(ok=self.frame.text.notna()).groupby(["dataset", "system"]).ok.sum()
                .reset_index()}


def score_summaries(generations: Generations, docs: Sequence[LongDocument], fact: FactualConsistency,
                    dataset: str) -> pd.DataFrame:
    """Tidy scores (dataset, system, example, metric, value) of the finished summaries."""
    by_id = {d.id: d for d in docs}
    done = [g for g in generations if g.ok]
    rows = []
    bert = bertscore([g.text for g in done], [by_id[g.example].abstract for g in done])
    for g, b in zip(done, bert, strict=True):
        doc = by_id[g.example]
        values = {**rouge(g.text, doc.abstract), "bertscore_minilm_f1": b["bertscore_minilm_f1"],
                  **fact.score(g.text, doc)}
        rows += [{"dataset": dataset, "system": g.system, "example": g.example, "metric": m, "value": float(v)}
                 for m, v in values.items()]
    return pd.DataFrame(rows, columns=["dataset", "system", "example", "metric", "value"])


def run_sq2e(params: Params, *, datasets: Sequence[str] | None = None, systems: Sequence[str] | None = None,
             targets: int | None = None, out_dir: str | Path | None = None, progress: bool = False) -> SQ2EResults:
    """Every system on the first ``targets`` documents of every dataset, scored; resumable in ``out_dir``."""
    settings = params.sq2e
    datasets = list(datasets or settings.datasets)
    systems = tuple(systems or settings.systems)
    root = resolve_path(out_dir or settings.out_dir)
    client = connect(params)
    fact = FactualConsistency(params)
    documents, generations, scores = {}, {}, []
    for dataset in datasets:
        docs = load_documents(params, dataset, targets)
        by_id = {d.id: d for d in docs}
        if len(by_id) < len(docs):
            raise ValueError(f"{dataset}: two documents share an id; a resumed run could not tell them apart")
        documents[dataset] = docs
        generations[dataset] = resumable(
            [(s, d.id) for s in systems for d in docs],
            lambda pending, by_id=by_id: (summarise_pair(s, by_id[i], params, client) for s, i in pending),
            out_dir=root / dataset, params=params, progress=progress)
        scores.append(score_summaries(generations[dataset], docs, fact, dataset))
    return SQ2EResults(documents, generations, pd.concat(scores, ignore_index=True), fact.label, client.model,
                       systems)


def main() -> None:
    import argparse
    import os

    from crewlib.config import load_params

    parser = argparse.ArgumentParser(description="Record (or resume) notebook 10: SQ2E, DG and HERA.")
    parser.add_argument("--params", default="quick")
    parser.add_argument("--cache-dir", default="notebooks/llm_cache")
    parser.add_argument("--targets", type=int, default=None)
    parser.add_argument("--datasets", nargs="+", default=None, help="default: the params' sq2e.datasets")
    args = parser.parse_args()
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    params = load_params(args.params, {"llm": {"cache_dir": args.cache_dir}})
    results = run_sq2e(params, datasets=args.datasets, targets=args.targets, progress=True)
    pd.set_option("display.width", 250)
    print(results.table().to_string())
    print(results.valid_questions().to_string())


if __name__ == "__main__":
    main()
