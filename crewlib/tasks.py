"""The tasks of a run: what every system may see of an example — its target and its reference pool.

A :class:`Task` is read by the environment, the baselines and the evaluation alike, so it lives
above all three. :func:`build_tasks` is the one place that makes them (docs/method.md, "Citation graph
and tasks"): the citation graph is built once from the corpus, with the training targets
under their own ids and every evaluation target as the sentinel ``-1``; each target's pool is
filtered to references with at least ``graph.min_connections`` valid connections; relevance and
centrality (PageRank over the pool's maximum) come from the cached reference features
(:mod:`crewlib.relevance`). The gold related-work section is never part of a task.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from functools import cached_property

from crewlib import CrewError
from crewlib.citations import reference_keys
from crewlib.config import params_fingerprint
from crewlib.data.records import Reference, RWGExample
from crewlib.graph import CitationGraph, TargetPool
from crewlib.relevance import ReferenceFeatures
from crewlib.schema import Params


def title_only(ref: Reference) -> bool:
    """A reference known by its title alone (no abstract, or the title given again as its abstract)."""
    abstract, title = ref.abstract.strip().rstrip(".").lower(), ref.title.strip().rstrip(".").lower()
    return not abstract or abstract == title


class EmptyPoolError(CrewError, ValueError):
    """A target has no reference left to work with (empty pool, or every reference filtered out)."""


@dataclass(frozen=True)
class Task:
    target_id: str
    title: str
    abstract: str
    references: tuple[Reference, ...]  # ordered by relevance to the target, most relevant first
    relevance: dict[str, float] = field(repr=False)  # in [0, 1]
    centrality: dict[str, float] = field(repr=False)  # PageRank / the pool's maximum, in [0, 1]
    target_words: int = 250

    @cached_property
    def keys(self) -> list[str]:
        return reference_keys(len(self.references))

    @cached_property
    def key_to_id(self) -> dict[str, str]:
        return dict(zip(self.keys, (r.id for r in self.references), strict=True))

    @cached_property
    def reference_by_key(self) -> dict[str, Reference]:
        return dict(zip(self.keys, self.references, strict=True))

    @cached_property
    def id_to_key(self) -> dict[str, str]:
        return {v: k for k, v in self.key_to_id.items()}

    @cached_property
    def readable_ids(self) -> frozenset[str]:
        """The ids of the references with more than a title to read (:func:`title_only`)."""
        return frozenset(r.id for r in self.references if not title_only(r))

    @property
    def target_text(self) -> str:
        return f"{self.title}. {self.abstract}"

    @classmethod
    def from_features(cls, example: RWGExample, features: Mapping[str, ReferenceFeatures], *,
                      relevance: str = "tfidf", target_words: int = 250,
                      pool_ids: Iterable[str] | None = None) -> Task:
        """The task of ``example`` with the pool ``pool_ids`` (default: all its references).

        Order: relevance (``tfidf`` or ``embedding`` cosine from ``features``), then centrality,
        then id — the order the keys ``R1..Rn`` follow and Retrieve offers papers in.
        """
        if relevance not in ("tfidf", "embedding"):
            raise ValueError(f"env.relevance must be 'tfidf' or 'embedding', not {relevance!r}")
        keep = None if pool_ids is None else set(pool_ids)
        refs = [r for r in example.references if keep is None or r.id in keep]
        if not refs:
            raise EmptyPoolError(f"target {example.target_id}: the reference pool is empty")
        score = {r.id: (features[r.id].tfidf_relevance if relevance == "tfidf" else features[r.id].embedding_relevance)
                 for r in refs}
        top = max(features[r.id].pagerank for r in refs) or 1.0
        centrality = {r.id: round(features[r.id].pagerank / top, 6) for r in refs}
        refs.sort(key=lambda r: (-score[r.id], -centrality[r.id], r.id))
        return cls(example.target_id, example.title, example.abstract, tuple(refs),
                   {r.id: score[r.id] for r in refs}, centrality, target_words)


@dataclass(frozen=True)
class TaskSet:
    """The tasks of a run, with the graph and the pools they came from."""

    examples: dict[str, RWGExample]  # train then evaluation targets → example (with its gold, for rewards and scores)
    tasks: dict[str, Task]  # target id → task; targets whose pool the filter emptied are absent
    train_ids: tuple[str, ...]
    eval_ids: tuple[str, ...]
    graph: CitationGraph = field(repr=False)
    pools: dict[str, TargetPool] = field(repr=False)
    min_connections: int = 0

    @property
    def excluded(self) -> tuple[str, ...]:
        """Targets left without a pool by the connection filter (counted, never run)."""
        return tuple(i for i in self.examples if i not in self.tasks)

    def pairs(self, ids: Iterable[str]) -> list[tuple[RWGExample, Task]]:
        return [(self.examples[i], self.tasks[i]) for i in ids if i in self.tasks]

    @property
    def train(self) -> list[tuple[RWGExample, Task]]:
        return self.pairs(self.train_ids)

    @property
    def evaluation(self) -> list[tuple[RWGExample, Task]]:
        return self.pairs(self.eval_ids)

    def report(self) -> str:
        removed = sum(len(p.removed) for p in self.pools.values())
        return (f"{len(self.tasks)} tasks ({len(self.train)} train, {len(self.evaluation)} evaluation); pool filter "
                f">= {self.min_connections} connections removed {removed} references and excluded "
                f"{len(self.excluded)} targets {list(self.excluded)}; graph: {self.graph.report}")


def build_tasks(params: Params, examples: Sequence[RWGExample] | None = None, *,
                eval_ids: Iterable[str] | None = None, min_connections: int | None = None) -> TaskSet:
    """The tasks of a run: graph, pool filter, relevance and centrality, all from ``params``.

    ``examples`` default to the corpus ``params.data`` names, split by ``params.split``;
    given explicitly, they are the corpus and all of them are evaluation targets unless
    ``eval_ids`` names which are. ``min_connections`` overrides ``graph.min_connections``.
    """
    from crewlib.data.split import split_examples

    if examples is None:
        from crewlib.data.loaders import DatasetUnavailableError, load_task_data

        examples, report = load_task_data(params, "oarelatedwork")
        if not examples:
            raise DatasetUnavailableError(f"no related-work examples to run on ({report})")
        s = params.split
        train, evaluation, _ = split_examples(examples, s.train_fraction, s.eval_fraction, s.seed)
        train_ids = [e.target_id for e in train]
        evaluation_ids = [e.target_id for e in evaluation] or train_ids  # a corpus too small to split
        picked = [str(i) for i in params.data.target_ids or []]
        if picked:  # data.target_ids: these are the run's targets, in that order; no training on them
            held = {e.target_id for e in examples}
            missing = [i for i in picked if i not in held]
            if missing:
                raise DatasetUnavailableError(f"data.target_ids names targets the data does not hold: {missing[:10]} "
                                              f"({report})")
            evaluation_ids = list(dict.fromkeys(picked))
            train_ids = [i for i in train_ids if i not in evaluation_ids]
    else:
        chosen = None if eval_ids is None else set(eval_ids)
        evaluation_ids = [e.target_id for e in examples if chosen is None or e.target_id in chosen]
        train_ids = [e.target_id for e in examples if e.target_id not in set(evaluation_ids)]
    k = int(params.graph.min_connections if min_connections is None else min_connections)
    return corpus_tasks(examples, train_ids, evaluation_ids, min_connections=k, relevance=params.env.relevance,
                        target_words=params.env.target_words, cache_dir=_features_dir(params))


def corpus_tasks(examples: Sequence[RWGExample], train_ids: Sequence[str], evaluation_ids: Sequence[str], *,
                 min_connections: int, relevance: str, target_words: int, cache_dir=None) -> TaskSet:
    """The tasks of ``examples`` (the corpus): its citation graph, each target's pool filtered to works with at
    least ``min_connections`` links, ordered by ``relevance`` (``env.relevance``); ``cache_dir``: where reference
    features are cached (None: not cached)."""
    by_id: dict[str, RWGExample] = {}
    for ex in examples:
        if ex.target_id in by_id:
            raise ValueError(f"two examples share the target id {ex.target_id!r}")
        by_id[ex.target_id] = ex
    graph = CitationGraph(list(by_id.values()), training_targets=list(train_ids))
    pools, tasks = {}, {}
    run_ids = list(dict.fromkeys([*train_ids, *evaluation_ids]))  # the rest of the corpus only shapes the graph
    for target_id in run_ids:
        ex = by_id[target_id]
        if not ex.references:
            raise EmptyPoolError(f"target {target_id}: the reference pool is empty")
        pools[target_id] = pool = graph.target_pool(ex, min_connections)
        if pool.excluded:
            continue
        from crewlib.relevance import reference_features

        features = reference_features(ex, graph, cache_dir=cache_dir)
        tasks[target_id] = Task.from_features(ex, features, relevance=relevance, target_words=int(target_words),
                                              pool_ids=pool.pool)
    return TaskSet({i: by_id[i] for i in run_ids}, tasks, tuple(train_ids), tuple(evaluation_ids), graph, pools,
                   min_connections)


def _features_dir(params: Params):
    value = params.features.cache_dir
    if not value:
        return None
    from crewlib.config import resolve_path

    return resolve_path(value)


_CORPUS: dict[str, TaskSet] = {}  # fingerprint of the corpus settings → its tasks


def task_for(params: Params, example: RWGExample) -> Task:
    """The task of ``example`` as the run of ``params`` builds it.

    A target of the configured corpus gets its task from that corpus's :func:`build_tasks`
    (memoised per data/split/graph/env/features settings). An example outside the corpus — a
    user's own paper — forms a corpus of its own: its graph is its references' citations of one
    another, and the connection filter is not applied (a single paper's graph has too few links
    for it; docs/method.md).
    """
    fingerprint = params_fingerprint(params, ("data", "split", "graph", "env", "features"))
    if fingerprint not in _CORPUS:
        _CORPUS[fingerprint] = build_tasks(params)
    corpus = _CORPUS[fingerprint]
    if corpus.examples.get(example.target_id) == example:
        if example.target_id not in corpus.tasks:
            raise EmptyPoolError(f"target {example.target_id}: the pool filter (graph.min_connections = "
                                 f"{corpus.min_connections}) removed every reference")
        return corpus.tasks[example.target_id]
    return build_tasks(params, [example], min_connections=0).tasks[example.target_id]


def evaluation_pairs(params: Params, targets: int | None = None) -> list[tuple[RWGExample, Task]]:
    """The first ``targets`` (all when None) (example, task) pairs of the run's evaluation split.

    Raises ValueError when no evaluation target kept a reference pool.
    """
    pairs = build_tasks(params).evaluation
    pairs = pairs[:targets] if targets else pairs
    if not pairs:
        raise ValueError("the evaluation split has no target with a reference pool (see graph.min_connections)")
    return pairs
