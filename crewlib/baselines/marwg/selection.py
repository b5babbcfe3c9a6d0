"""MA-RWG stages 1-2: choosing the papers (relevance with diversity) and each paper's most relevant pages."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from crewlib.data.records import Reference


# ----------------------------------------------------------------------------------------- stages 1-2
def select_papers(relevance: np.ndarray, vectors: np.ndarray | None, k: int, lam: float) -> list[int]:
    """Indices of ``k`` papers in the order MA-RWG's greedy selection picks them.

    score_i = (1−λ)·relevance_i + λ·div_i with div_i = 1 − min_{j∈S} cos(e_i, e_j) over the papers
    ``S`` already picked (the paper's definition: a minimum, not a maximum). On an empty ``S`` the
    diversity term is the same for every paper. Ties — and so the first pick at λ = 1 — go to the
    more relevant paper, then to the lower index. ``vectors``: unit rows; unused (may be None) at λ = 0.
    """
    rel = np.asarray(relevance, dtype=float)
    sims = vectors @ vectors.T if vectors is not None and lam > 0 else None
    nearest = np.ones(len(rel))  # min cosine to S; div = 1 − nearest, 0 for every paper while S is empty
    remaining = list(range(len(rel)))
    chosen: list[int] = []
    while remaining and len(chosen) < k:
        score = (1 - lam) * rel + (lam * (1 - nearest) if sims is not None else 0.0)
        best = max(remaining, key=lambda i: (score[i], rel[i], -i))
        chosen.append(best)
        remaining.remove(best)
        if sims is not None:
            nearest = sims[best].copy() if len(chosen) == 1 else np.minimum(nearest, sims[best])
    return chosen


def paper_pages(reference: Reference, page_words: int) -> list[str]:
    """A paper's available text — title, abstract, then any full-text sections — as pages of ``page_words`` words."""
    parts = [reference.text, *(f"{heading}. {text}" for heading, text in reference.sections)]
    words = " ".join(parts).split()
    return [" ".join(words[i:i + page_words]) for i in range(0, len(words), page_words)]


def top_pages(pages: Sequence[str], page_vectors: np.ndarray, target_vector: np.ndarray, d: int) -> list[str]:
    """The ``d`` pages most similar to the target (cosine of unit rows; ties to the earlier page), in text order."""
    if len(pages) <= d:
        return list(pages)
    sims = np.asarray(page_vectors) @ np.asarray(target_vector)
    best = sorted(range(len(pages)), key=lambda i: (-sims[i], i))[:d]
    return [pages[i] for i in sorted(best)]
