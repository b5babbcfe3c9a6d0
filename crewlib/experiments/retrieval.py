"""RWGBench's retrieval setting (its Table 2) on the corpus's own library: retrieve candidates, then write.

- **Library**: every distinct reference of every paper of the corpus, deduplicated by id (the bundled sample:
  60), so a target's own references are hidden among all the others; the target itself is never a candidate.
- **Retrieval**: the target's title and abstract are the query; each retriever of
  ``experiments.retrieval.retrievers`` ranks the library — ``bm25`` (Okapi BM25 over the library,
  :func:`crewlib.write.library.bm25_scores`) or ``dense`` (the cosine of the MiniLM embeddings the project has,
  :func:`crewlib.write.library.embedding_scores`) — ties broken by the library's order; the first
  ``experiments.retrieval.top_k`` are the candidates.
- **Candidate coverage**: the share of the gold cited papers among the candidates.
- **Generation**: the long-context writer (``baselines.long_context``: its prompt, its model) writes the section
  from the candidates' titles and abstracts, keyed R1..Rk in retrieval order.
- **Hard recall / precision**: the distinct cited papers against the gold cited ids; **soft recall**: RWGBench's
  (:mod:`crewlib.eval.rwgbench`: a cited non-gold candidate judged as an alternative to a missed gold paper).

RWGBench retrieves the top 50 of 1.09M documents; ours the top ``top_k`` of the sample's 60, so the numbers
measure the same steps, not the same difficulty (the table says both). RWGBench's *workflow* (multi-query)
rows have no counterpart here.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import pandas as pd

from crewlib.baselines.single import LongContext
from crewlib.citations import check_citations
from crewlib.data.records import Reference, RWGExample
from crewlib.eval.examples import EvalExample, EvalReference
from crewlib.eval.llm_metrics import parallel
from crewlib.eval.rwgbench import citation_recall
from crewlib.eval.suite import Evaluator
from crewlib.experiments.paper import RWGBENCH_RETRIEVAL, RWGBENCH_RETRIEVAL_CONDITION
from crewlib.llm import LLMClient, LLMError
from crewlib.schema import Params
from crewlib.tasks import Task, build_tasks, evaluation_pairs
from crewlib.write.library import bm25_scores, embedding_scores

RETRIEVERS = ("bm25", "dense")


def library(examples: Sequence[RWGExample]) -> list[Reference]:
    """Every distinct reference of ``examples`` (first occurrence kept, in the corpus's order)."""
    out: dict[str, Reference] = {}
    for example in examples:
        for ref in example.references:
            out.setdefault(ref.id, ref)
    return list(out.values())


def rank(retriever: str, query: str, documents: Sequence[Reference]) -> list[tuple[Reference, float]]:
    """``documents`` by ``retriever``'s score for ``query``, best first (ties: the library's order)."""
    texts = [d.text for d in documents]
    if retriever == "bm25":
        scores = bm25_scores(query, texts)
    elif retriever == "dense":
        scores = embedding_scores(query, texts)
    else:
        raise ValueError(f"unknown retriever {retriever!r}; known: {list(RETRIEVERS)}")
    order = sorted(range(len(documents)), key=lambda i: (-float(scores[i]), i))
    return [(documents[i], float(scores[i])) for i in order]


def candidates(example: RWGExample, pool: Sequence[Reference], retriever: str, k: int) -> list[tuple[Reference, float]]:
    """The ``k`` references of ``pool`` that ``retriever`` ranks first for the target (never the target itself)."""
    if k < 1:
        raise ValueError(f"experiments.retrieval.top_k must be >= 1, not {k}")
    others = [r for r in pool if r.id != example.target_id]
    if not others:
        raise ValueError(f"target {example.target_id}: the library holds no reference to retrieve")
    return rank(retriever, f"{example.title}. {example.abstract}", others)[:k]


# Candidate coverage: the share of the gold cited papers among the candidates, recall's formula (gold must not be empty)
coverage = citation_recall


def candidate_task(example: RWGExample, found: Sequence[tuple[Reference, float]], target_words: int) -> Task:
    """The target with the candidates as its pool, keyed R1..Rk in retrieval order."""
    top = max((s for _, s in found), default=0.0) or 1.0
    return Task(example.target_id, example.title, example.abstract, tuple(r for r, _ in found),
                relevance={r.id: max(0.0, s / top) for r, s in found}, centrality={r.id: 0.0 for r, _ in found},
                target_words=target_words)


def eval_example(example: RWGExample, extra: Sequence[Reference]) -> EvalExample:
    """The example for scoring, its references joined by the candidates (so a cited candidate has its text)."""
    base = EvalExample.from_rwg(example)
    known = {r.ref_id for r in base.references}
    added = tuple(EvalReference(r.id, r.title, r.abstract) for r in extra if r.id not in known)
    return dataclasses.replace(base, references=base.references + added)


@dataclass
class RetrievalResults:
    frame: pd.DataFrame  # one row per (target, retriever): candidates, coverage, recall, precision, soft recall
    generations: list[dict]  # the generated sections (system, example, text, key_to_id, error)
    library_size: int
    top_k: int
    model: str
    missing: list[dict]  # judgements that failed after retries (counted, no credit)
    errors: list[dict]  # sections that could not be written, with why (an empty section among them)
    pairs: list[tuple[RWGExample, Task]]  # the evaluation papers, each with its pool (for the row "the pool given")

    @property
    def replay_misses(self) -> list[dict]:
        """Sections whose requests a replay-only cache did not hold (a stale recording, never a result)."""
        return [g for g in self.errors if str(g["error"]).startswith("CacheMissError")]

    def table(self, main_scores: pd.DataFrame | None = None) -> pd.DataFrame:
        """Mean per retriever (ours), ours with the pool given (from ``main_scores``, the main results' tidy
        scores, when given: :func:`pool_given`) and RWGBench's GPT-5.5 rows, each row naming its condition."""
        given = pool_given(main_scores, self.pairs) if main_scores is not None else None
        metrics = ["coverage", "hard recall", "precision", "soft recall"]
        by = self.frame.groupby("retriever", sort=False)
        nothing = by.cited.apply(lambda cited: int((cited == 0).sum()))
        ours = by[metrics].mean().assign(papers=by.size(), **{"citing nothing": nothing})
        rows = [{"setting": "RAG", "retriever": retriever, **row.to_dict(),
                 "condition": f"ours ({self.model}; top {self.top_k} of the library's {self.library_size})"}
                for retriever, row in ours.iterrows()]
        if given:
            rows.append({"setting": "the pool given", "retriever": "none", **given,
                         "condition": f"ours ({self.model}; long context on the pool, main results above)"})
        rows += [{"setting": setting, "retriever": retriever, **values, "papers": 100,
                  "condition": RWGBENCH_RETRIEVAL_CONDITION}
                 for (setting, retriever), values in RWGBENCH_RETRIEVAL.items()]
        table = pd.DataFrame(rows, columns=["setting", "retriever", "papers", *metrics, "citing nothing", "condition"])
        return table.astype({"papers": int})


def pool_given(scores: pd.DataFrame, pairs: Sequence[tuple[RWGExample, Task]],
               system: str = "long_context") -> dict[str, float] | None:
    """The main results' ``system`` on the same papers with their pool given (not retrieved): the pool's
    coverage of the gold, and the system's mean hard recall and precision (``scores``: the suite's tidy
    frame); None when it has no score there."""
    ids = {e.target_id for e, _ in pairs}
    mine = scores[(scores.system == system) & scores.example.isin(ids)]
    means = mine.groupby("metric").value.mean()
    if "citation_recall" not in means:
        return None
    covered = [coverage([r.id for r in task.references], e.gold_cited_ids) for e, task in pairs if e.gold_cited_ids]
    return {"papers": int(mine[mine.metric == "citation_recall"].example.nunique()),
            "coverage": float(np.mean(covered)), "hard recall": float(means["citation_recall"]),
            "precision": float(means.get("citation_precision", np.nan)), "soft recall": np.nan}


def run_retrieval(params: Params, client: LLMClient, *, targets: int | None = None,
                  progress: bool = False) -> RetrievalResults:
    """Retrieve, write and score on the first ``targets`` evaluation papers (all when None); the sections are
    written ``llm.concurrency`` at a time. A section that could not be written (its error kept, a replay-only
    cache miss among them) is in ``errors`` and scored as no output."""
    settings = params.experiments.retrieval
    pool = library(list(build_tasks(params).examples.values()))
    jobs, rows, examples = [], [], {}
    pairs = evaluation_pairs(params, targets)
    for example, _ in pairs:
        gold = tuple(dict.fromkeys(example.gold_cited_ids))
        if not gold:
            raise ValueError(f"target {example.target_id}: no gold cited ids to measure retrieval against")
        for retriever in settings.retrievers:
            found = candidates(example, pool, retriever, int(settings.top_k))
            jobs.append((example, candidate_task(example, found, int(params.env.target_words))))
            examples[example.target_id] = eval_example(example, [r for r, _ in found])
            rows.append({"example": example.target_id, "retriever": retriever, "candidates": len(found),
                         "gold": len(gold), "coverage": coverage([r.id for r, _ in found], gold)})
    writer = LongContext(params, client)

    def write(job: tuple[RWGExample, Task]) -> tuple[str | None, dict, str | None]:
        try:
            generation = writer.generate(*job)
        except (LLMError, ValueError) as exc:  # a failed call, a replay-only cache miss: the error is the result
            return None, {}, f"{type(exc).__name__}: {exc}"
        if not generation.text.strip():
            return None, {}, "EmptySection: the writer's section was empty after the output checks"
        return generation.text, dict(generation.key_to_id), None

    # Written side by side; their calls share the ledger, so no cost is kept per section (none is reported).
    written = parallel(write, jobs, int(params.llm.concurrency))
    generations = [{"system": f"rag_{row['retriever']}", "example": row["example"], "text": text,
                    "key_to_id": keys, "error": error}
                   for row, (text, keys, error) in zip(rows, written, strict=True)]
    scores = Evaluator(params).score(generations, examples, metrics=list(settings.metrics), progress=progress)
    names = {"citation_recall": "hard recall", "citation_precision": "precision", "soft_recall": "soft recall",
             "soft_recall_pairs": "pairs judged", "soft_recall_compatible": "compatible"}
    wide = (scores.pivot_table(index=["system", "example"], columns="metric", values="value").reset_index()
            .rename(columns=names) if len(scores) else pd.DataFrame(columns=["system", "example"]))
    wide["retriever"] = wide.system.str.removeprefix("rag_")
    frame = pd.DataFrame(rows).merge(wide.drop(columns="system"), on=["example", "retriever"], how="left")
    for column in ("hard recall", "precision", "soft recall", "pairs judged", "compatible"):
        if column not in frame:
            frame[column] = np.nan
    frame["cited"] = [len(check_citations(g["text"], g["key_to_id"]).cited_ids) if g["text"] else 0
                      for g in generations]
    # A section the writer left empty (or the checks emptied) cites no paper: its recall is 0, as RWGBench's
    # direct generation's; its precision is undefined (left out of the mean, as RWGBench leaves out generations
    # without a resolvable marker).
    empty = frame["cited"] == 0
    frame.loc[empty, ["hard recall", "soft recall"]] = 0.0
    errors = [g for g in generations if g["error"]]
    return RetrievalResults(frame, generations, len(pool), int(settings.top_k), client.model,
                            list(scores.attrs.get("missing", [])), errors, pairs)
