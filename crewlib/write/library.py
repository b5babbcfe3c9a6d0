"""``crew write --select K``: the user's whole library as the pool, the K references most relevant kept.

A ``.bib`` of hundreds of entries is a researcher's library, not the paper's references. Each entry
(title and abstract) is scored against the paper (title, abstract and introduction) two ways:
lexical **BM25** (Robertson and Zaragoza 2009; k1 = 1.2, b = 0.75, the library as the collection)
and the cosine of the **MiniLM** sentence embeddings the environment's features use
(:mod:`crewlib.relevance`). Each score is scaled to [0, 1] by its maximum over the library and the
two are averaged with equal weight (``docs/method.md``, "Choosing references from a library"); the
K highest are kept, ties broken by the file's order.
"""

from __future__ import annotations

import math
import re
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from crewlib.data.records import Reference

_TOKEN = re.compile(r"[a-z0-9]+")
_STOP = frozenset({"a", "an", "and", "are", "as", "at", "be", "by", "can", "for", "from", "has", "have", "in", "is",
                   "it", "its", "not", "of", "on", "or", "our", "that", "the", "their", "these", "this", "those",
                   "to", "was", "we", "were", "which", "with"})


@dataclass(frozen=True)
class Selected:
    reference: Reference
    score: float  # the combined score in [0, 1]
    bm25: float  # scaled to [0, 1]
    embedding: float  # cosine, scaled to [0, 1]


def tokens(text: str) -> list[str]:
    return [t for t in _TOKEN.findall(text.lower()) if t not in _STOP and len(t) > 1]


def bm25_scores(query: str, documents: Sequence[str], k1: float = 1.2, b: float = 0.75) -> np.ndarray:
    """Okapi BM25 of ``query`` against each document, the documents as the collection (idf with +1 inside the
    log, so a term in every document still counts a little)."""
    docs = [Counter(tokens(d)) for d in documents]
    lengths = np.array([sum(d.values()) for d in docs], dtype=float)
    mean_length = lengths.mean() if len(docs) and lengths.mean() > 0 else 1.0
    frequency = Counter(term for d in docs for term in d)
    scores = np.zeros(len(docs))
    for term in set(tokens(query)):
        if term not in frequency:
            continue
        idf = math.log(1 + (len(docs) - frequency[term] + 0.5) / (frequency[term] + 0.5))
        tf = np.array([d[term] for d in docs], dtype=float)
        scores += idf * tf * (k1 + 1) / (tf + k1 * (1 - b + b * lengths / mean_length))
    return scores


def embedding_scores(query: str, documents: Sequence[str], progress: bool = False, batch: int = 64) -> np.ndarray:
    """MiniLM cosine of each document to ``query``, embedded in batches (a progress bar over them if asked)."""
    from crewlib.relevance import embed

    starts = range(0, len(documents), batch)
    if progress:
        from tqdm import tqdm

        starts = tqdm(starts, desc="embedding the library", unit="batch")
    vectors = np.concatenate([embed(list(documents[i:i + batch])) for i in starts]) if documents else np.zeros((0, 1))
    return vectors @ embed([query])[0]


def select_references(query: str, references: Sequence[Reference], k: int, *,
                      progress: bool = False) -> list[Selected]:
    """The ``k`` references most relevant to ``query`` (module docstring), best first."""
    if k < 1:
        raise ValueError(f"--select needs a number of references >= 1, not {k}")
    combined, lexical, semantic = relevance_scores(query, [r.text for r in references], progress=progress)
    order = sorted(range(len(references)), key=lambda i: (-combined[i], i))[:k]
    return [Selected(references[i], round(float(combined[i]), 4), round(float(lexical[i]), 4),
                     round(float(semantic[i]), 4)) for i in order]


def relevance_scores(query: str, texts: Sequence[str], *,
                     progress: bool = False) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(combined, BM25, MiniLM) scores of each text for ``query``, each half scaled to [0, 1] by its maximum and the
    combined score their equal-weight mean (module docstring)."""
    lexical = _scaled(bm25_scores(query, texts))
    semantic = _scaled(np.clip(embedding_scores(query, texts, progress=progress), 0.0, None))
    return 0.5 * lexical + 0.5 * semantic, lexical, semantic


def _scaled(scores: np.ndarray) -> np.ndarray:
    top = float(scores.max()) if len(scores) else 0.0
    return scores / top if top > 0 else np.zeros_like(scores)
