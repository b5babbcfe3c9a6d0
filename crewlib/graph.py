"""The citation graph (networkx) and each target's reference pool.

Nodes are paper ids. The graph holds the training targets with their outgoing edges to the
papers they cite, and every paper of every pool with *its* outgoing edges (``Reference.citations``)
to papers that are in the corpus. An evaluation target never enters under its own id: it is
added as the sentinel node ``-1`` with its outgoing edges (paper §3), so nothing about it leaks
into the training graph. Its reference pool is its out-neighbours with at least
``min_connections`` valid connections (in-degree + out-degree in the graph without the
sentinel).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

import networkx as nx

from crewlib.data.records import RWGExample

SENTINEL = -1


@dataclass
class GraphReport:
    """What building the graph handled and counted."""

    nodes: int = 0
    edges: int = 0
    self_citations: int = 0
    duplicate_edges: int = 0
    missing_references: int = 0  # citations of ids that are not in the corpus (edges dropped)

    def __str__(self) -> str:
        return (f"{self.nodes} nodes, {self.edges} edges; dropped {self.self_citations} self-citations, "
                f"{self.duplicate_edges} duplicate edges, {self.missing_references} citations of papers "
                f"outside the corpus")


@dataclass(frozen=True)
class TargetPool:
    """An evaluation target's pool after the connection filter."""

    target_id: str
    candidates: tuple[str, ...]  # the target's references that are in the graph
    pool: tuple[str, ...]  # those with >= min_connections connections, in the target's order
    removed: tuple[str, ...] = field(default=())  # candidates the filter removed

    @property
    def excluded(self) -> bool:
        return not self.pool


class CitationGraph:
    """Directed citation graph of the corpus; ``citation_adj_out`` / ``citation_adj_in`` as dicts."""

    def __init__(self, examples: Sequence[RWGExample], training_targets: Iterable[str] = ()) -> None:
        self.report = GraphReport()
        graph = nx.DiGraph()
        papers = {ref.id: ref for ex in examples for ref in ex.references}
        graph.add_nodes_from(papers)
        train = set(training_targets)
        seen: set[tuple[str, str]] = set()

        def add(src: str, dst: str) -> None:
            if src == dst:
                self.report.self_citations += 1
            elif dst not in papers:
                self.report.missing_references += 1
            elif (src, dst) in seen:
                self.report.duplicate_edges += 1
            else:
                seen.add((src, dst))
                graph.add_edge(src, dst)

        for ex in examples:
            if ex.target_id in train:
                graph.add_node(ex.target_id)
                for ref in ex.references:
                    add(ex.target_id, ref.id)
        for ref in papers.values():
            for cited in ref.citations:
                add(ref.id, cited)
        self.graph = graph
        self.report.nodes, self.report.edges = graph.number_of_nodes(), graph.number_of_edges()

    @property
    def citation_adj_out(self) -> dict[str, set[str]]:
        return {n: set(self.graph.successors(n)) for n in self.graph.nodes}

    @property
    def citation_adj_in(self) -> dict[str, set[str]]:
        return {n: set(self.graph.predecessors(n)) for n in self.graph.nodes}

    def connections(self, paper_id: str) -> int:
        """Valid connections of a paper: in-degree + out-degree (0 for a paper not in the graph)."""
        if paper_id not in self.graph:
            return 0
        return self.graph.in_degree(paper_id) + self.graph.out_degree(paper_id)

    def with_target(self, example: RWGExample) -> nx.DiGraph:
        """A copy of the graph with the evaluation target added as the sentinel ``-1``."""
        graph = self.graph.copy()
        graph.add_node(SENTINEL)
        graph.add_edges_from((SENTINEL, ref.id) for ref in example.references if ref.id in self.graph)
        return graph

    def target_pool(self, example: RWGExample, min_connections: int = 5) -> TargetPool:
        """The out-neighbours of the sentinel with at least ``min_connections`` connections."""
        candidates = tuple(ref.id for ref in example.references if ref.id in self.graph)
        pool = tuple(r for r in candidates if self.connections(r) >= min_connections)
        removed = tuple(r for r in candidates if r not in pool)
        return TargetPool(example.target_id, candidates, pool, removed)

    def centrality(self) -> dict[str, float]:
        """PageRank of every paper (the sentinel excluded), for the environment's observations."""
        if not hasattr(self, "_pagerank"):
            self._pagerank = nx.pagerank(self.graph) if self.graph.number_of_nodes() else {}
        return self._pagerank
