"""What the agents may see of an example: the target and its pool, never the gold section."""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import cached_property

from crewlib.citations import reference_keys
from crewlib.data.records import Reference, RWGExample
from crewlib.graph import CitationGraph


@dataclass(frozen=True)
class Task:
    target_id: str
    title: str
    abstract: str
    references: tuple[Reference, ...]  # ordered by relevance to the target, most relevant first
    relevance: dict[str, float] = field(repr=False)
    centrality: dict[str, float] = field(repr=False)
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

    @property
    def target_text(self) -> str:
        return f"{self.title}. {self.abstract}"

    @classmethod
    def from_example(cls, example: RWGExample, graph: CitationGraph | None = None, *, relevance: str = "tfidf",
                     target_words: int = 250, pool_ids: list[str] | None = None) -> Task:
        """Order the pool by relevance (TF-IDF, or MiniLM with ``relevance="embedding"``).

        ``pool_ids`` restricts the pool (e.g. to the graph-filtered pool of an evaluation target).
        Centrality is the paper's connection count in ``graph`` over the pool's maximum.
        """
        from crewlib.relevance import relevance_scores

        keep = None if pool_ids is None else set(pool_ids)
        refs = [r for r in example.references if keep is None or r.id in keep]
        if not refs:
            raise ValueError(f"target {example.target_id}: the reference pool is empty")
        target_text = f"{example.title}. {example.abstract}"
        scores = [float(s) for s in relevance_scores(target_text, [r.text for r in refs], relevance)]
        degree = {r.id: float(graph.connections(r.id)) if graph else 0.0 for r in refs}
        top = max(degree.values()) or 1.0
        order = sorted(range(len(refs)), key=lambda i: (-scores[i], -degree[refs[i].id], refs[i].id))
        return cls(example.target_id, example.title, example.abstract, tuple(refs[i] for i in order),
                   {refs[i].id: scores[i] for i in order}, {r.id: degree[r.id] / top for r in refs}, target_words)
