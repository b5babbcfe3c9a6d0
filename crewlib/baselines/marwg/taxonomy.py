"""MA-RWG stage 4: the taxonomy of the chosen papers along one dimension, built from their pseudo-labels."""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field

import numpy as np

EmbedFn = Callable[[list[str]], np.ndarray]


# ------------------------------------------------------------------------------------------ stage 4
@dataclass
class TaxonomyNode:
    """A node of a dimension's taxonomy: the root (level 0) is the dimension itself."""

    name: str
    level: int
    papers: list[str]
    children: list[TaxonomyNode] = field(default_factory=list)

    def walk(self) -> Iterator[TaxonomyNode]:
        yield self
        for child in self.children:
            yield from child.walk()

    @property
    def depth(self) -> int:
        return max(node.level for node in self.walk())

    @property
    def size(self) -> int:
        return sum(1 for _ in self.walk())

    def leaves(self) -> list[TaxonomyNode]:
        return [node for node in self.walk() if not node.children]

    def to_dict(self) -> dict:
        return {"name": self.name, "level": self.level, "papers": list(self.papers),
                "children": [child.to_dict() for child in self.children]}

    def render(self) -> str:
        """The tree as indented lines ``- name: R1, R3`` (for prompts)."""
        lines = [self.name]
        for node in self.walk():
            if node.level:
                lines.append(f"{'  ' * (node.level - 1)}- {node.name}: {', '.join(node.papers)}")
        return "\n".join(lines)


TIE = 1e-5  # cosines this close are a tie (MiniLM's last bits are not stable across runs)


def _first_best(scores: np.ndarray) -> int:
    """The first index whose score is within :data:`TIE` of the highest."""
    return int(np.flatnonzero(scores >= scores.max() - TIE)[0])


def unit_rows(vectors: np.ndarray) -> np.ndarray:
    """Each row of ``vectors`` scaled to unit length (a zero row stays near zero)."""
    vectors = np.atleast_2d(np.asarray(vectors, dtype=float))
    return vectors / np.maximum(np.linalg.norm(vectors, axis=1, keepdims=True), 1e-12)


def _threshold_clusters(papers: list[str], vector: Mapping[str, np.ndarray], threshold: float) -> list[list[str]]:
    """Greedy leader clustering in input order: join the nearest centroid if cosine ≥ threshold,
    else open a new cluster (width expansion). Deterministic."""
    groups: list[list[str]] = []
    sums: list[np.ndarray] = []
    for paper in papers:
        v = vector[paper]
        if groups:
            sims = unit_rows(np.stack(sums)) @ v
            best = _first_best(sims)
            if sims[best] >= threshold:
                groups[best].append(paper)
                sums[best] = sums[best] + v
                continue
        groups.append([paper])
        sums.append(v.copy())
    return groups


def _split_in_two(papers: list[str], vector: Mapping[str, np.ndarray]) -> list[list[str]]:
    """Split around the two least similar labels (a paper equally close to both joins the smaller
    group); one group if every label is the same."""
    if len(papers) < 2:
        return [list(papers)]
    matrix = np.stack([vector[p] for p in papers])
    sims = matrix @ matrix.T
    upper = [(i, j) for i in range(len(papers)) for j in range(i + 1, len(papers))]
    a, b = upper[_first_best(np.array([-sims[i, j] for i, j in upper]))]
    if sims[a, b] >= 1 - 1e-6:
        return [list(papers)]
    groups: list[list[str]] = [[], []]
    for i, paper in enumerate(papers):
        gap = sims[i, a] - sims[i, b]
        side = (0 if len(groups[0]) <= len(groups[1]) else 1) if abs(gap) < TIE else (0 if gap > 0 else 1)
        groups[side].append(paper)
    return groups


def _representative(papers: list[str], labels: Mapping[str, str], vector: Mapping[str, np.ndarray]) -> str:
    """The member label closest to the cluster's centroid (first on ties). Cosines are compared at
    :data:`TIE` of the closest are a tie: two members are always exactly as close to their centroid, and MiniLM's
    last bits vary between runs (memory alignment in the CPU kernels), so without it the name chosen for a
    two-paper node, and every prompt that shows the taxonomy, changed from run to run."""
    matrix = np.stack([vector[p] for p in papers])
    centroid = unit_rows(matrix.sum(axis=0))[0]
    return labels[papers[_first_best(matrix @ centroid)]]


def _shared(groups: list[list[str]], vector: Mapping[str, np.ndarray], threshold: float) -> list[list[str]]:
    """The DAG's extra parents: each paper also joins every other group whose final centroid is within
    ``threshold`` cosine of it (a paper may sit under several parents); the groups' own order is kept."""
    centroids = unit_rows(np.stack([np.sum([vector[p] for p in g], axis=0) for g in groups]))
    shared = [list(g) for g in groups]
    for i, group in enumerate(groups):
        for paper in group:
            for j in np.flatnonzero(centroids @ vector[paper] >= threshold):
                if j != i and paper not in shared[j]:
                    shared[j].append(paper)
    return shared


def build_taxonomy(labels: Mapping[str, str], dimension: str, delta: int, l_max: int, embed_fn: EmbedFn, *,
                   width_threshold: float, depth_step: float, shape: str = "tree") -> TaxonomyNode:
    """The taxonomy of one dimension from the papers' pseudo-labels.

    Args:
        labels: paper key → its label on this dimension (order = the order papers are placed).
        dimension: the root's name (e.g. "Methodology").
        delta: δ; a node with ρ ≥ δ papers is split (depth expansion) if its level < ``l_max``.
        l_max: the deepest level; the root is level 0, its children level 1.
        embed_fn: texts → embedding rows (MiniLM ``crewlib.relevance.embed`` in the pipeline).
        width_threshold: the cosine to a node's centroid needed to join it at level 1; at level ℓ
            the threshold is ``width_threshold + depth_step·(ℓ−1)`` (tighter deeper down).
        shape: ``tree`` (each paper under one node) or ``dag`` (MA-RWG's: a paper also sits under every
            other node of its level whose centroid is within the threshold, :func:`_shared`).

    A node that the tighter threshold leaves whole is split in two around its two least similar
    labels; only a node whose labels are all identical stays a leaf with δ or more papers
    above ``l_max`` (no similarity can split it).
    """
    if delta < 1 or l_max < 1:
        raise ValueError(f"build_taxonomy needs delta >= 1 and l_max >= 1 (got {delta}, {l_max})")
    if shape not in ("tree", "dag"):
        raise ValueError(f"the taxonomy's shape is 'tree' or 'dag', not {shape!r}")
    papers = list(labels)
    root = TaxonomyNode(dimension, 0, papers)
    if not papers:
        return root
    unique = list(dict.fromkeys(labels[p] for p in papers))
    rows = unit_rows(embed_fn(unique))
    vector = {p: rows[unique.index(labels[p])] for p in papers}

    def expand(members: list[str], level: int) -> list[TaxonomyNode]:
        threshold = min(width_threshold + depth_step * (level - 1), 0.99)
        groups = _threshold_clusters(members, vector, threshold)
        if len(groups) == 1 and level > 1:  # depth expansion the threshold could not split
            groups = _split_in_two(members, vector)
            if len(groups) == 1:
                return []
        if shape == "dag" and len(groups) > 1:
            groups = _shared(groups, vector, threshold)
        nodes = []
        for group in groups:
            node = TaxonomyNode(_representative(group, labels, vector), level, group)
            if len(group) >= delta and level < l_max:  # ρ ≥ δ (the paper)
                node.children = expand(group, level + 1)
            nodes.append(node)
        return nodes

    root.children = expand(papers, 1)
    return root
