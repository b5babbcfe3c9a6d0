"""Themes: the works of a pool grouped so that one paragraph of the section is one theme (docs/method.md, "Themes").

A related-work paragraph discusses works that belong together; putting GPT-2, ROUGE and a summariser side by
side is a list, not a paragraph. Before composing, the pool's works are grouped by what they are about:

- similarity of two works = the TF-IDF cosine of their titles and abstracts (grouped once an episode, so that a
  theme keeps its one paragraph from one Compose to the next), plus ``link_bonus`` when one cites the other or
  both cite a common paper (the citation graph, ``Reference.citations``);
- average-linkage agglomerative clustering, merging the closest pair of groups while the merged group holds at
  most ``size + 1`` works, until there are ceil(works / ``size``) groups (``size``: ``executor.compose_sources``,
  the works one paragraph is written from);
- a work left alone joins the group it is closest to (a paragraph needs ``env.compose_min_sources`` works).

The grouping is deterministic (ties: relevance order) and inspectable: each CREW paragraph records its theme —
the works and the name the composing LLM gave it — in ``trace.json`` and ``summary.json``.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np

LINK_BONUS = 0.1  # added to the cosine of two works joined in the citation graph (one cites the other, or a third)


@dataclass(frozen=True)
class Theme:
    """One group of works (keys, in the pool's relevance order)."""

    id: int
    keys: tuple[str, ...]


def similarity_matrix(texts: Sequence[str], citations: Sequence[frozenset[str]], ids: Sequence[str],
                      link_bonus: float = LINK_BONUS) -> np.ndarray:
    """Works × works similarity: TF-IDF cosine of ``texts`` plus ``link_bonus`` where the citation graph joins two
    works (``citations[i]``: ids work ``i`` cites; ``ids[i]``: its id). The diagonal is 1."""
    from sklearn.feature_extraction.text import TfidfVectorizer

    n = len(texts)
    if n == 0:
        return np.zeros((0, 0))
    try:
        matrix = TfidfVectorizer(stop_words="english", sublinear_tf=True).fit_transform(texts)
        sim = (matrix @ matrix.T).toarray()
    except ValueError:  # no word left in any text (titles of stop words only)
        sim = np.zeros((n, n))
    for i in range(n):
        for j in range(i + 1, n):
            if ids[j] in citations[i] or ids[i] in citations[j] or citations[i] & citations[j]:
                sim[i, j] += link_bonus
                sim[j, i] += link_bonus
    np.fill_diagonal(sim, 1.0)
    return sim


def cluster(sim: np.ndarray, size: int) -> list[list[int]]:
    """Groups of indices: average linkage, merged groups of at most ``size + 1``, ceil(n / ``size``) groups; a
    singleton left over joins its closest group. Each group sorted, groups ordered by their first index."""
    n = len(sim)
    groups = [[i] for i in range(n)]
    goal = max(1, math.ceil(n / max(1, size)))

    def linkage(a: list[int], b: list[int]) -> float:
        return float(sim[np.ix_(a, b)].mean())

    while len(groups) > goal:
        pairs = [(linkage(a, b), -i, -j) for i, a in enumerate(groups) for j, b in enumerate(groups)
                 if i < j and len(a) + len(b) <= size + 1]
        if not pairs:
            break
        _, i, j = max(pairs)
        groups[-i] = sorted(groups[-i] + groups[-j])
        del groups[-j]
    singles = [g for g in groups if len(g) == 1]
    for single in singles:
        if len(groups) == 1:
            break
        others = [g for g in groups if g is not single]
        host = max(others, key=lambda g: (linkage(single, g), -g[0]))
        host.extend(single)
        host.sort()
        groups.remove(single)
    return sorted(groups, key=lambda g: g[0])


def group_themes(keys: Sequence[str], texts: Mapping[str, str], citations: Mapping[str, frozenset[str]],
                 ids: Mapping[str, str], size: int) -> list[Theme]:
    """The themes of the works ``keys`` (relevance order): ``texts`` key → title, abstract and notes;
    ``citations`` key → the ids the work cites; ``ids`` key → its id; ``size``: works a paragraph is written from."""
    keys = list(keys)
    sim = similarity_matrix([texts[k] for k in keys], [citations.get(k, frozenset()) for k in keys],
                            [ids[k] for k in keys])
    return [Theme(i, tuple(keys[j] for j in group)) for i, group in enumerate(cluster(sim, size))]


def theme_of(themes: Sequence[Theme], key: str) -> Theme | None:
    return next((t for t in themes if key in t.keys), None)
