"""Per-reference features: bounds, ranking sense, caching, and independence from the gold section."""

from __future__ import annotations

import dataclasses

import pytest

from crewlib import relevance
from crewlib.data import SAMPLE_FILES, load_oarelatedwork
from crewlib.graph import CitationGraph
from crewlib.relevance import reference_features, tfidf_relevance


@pytest.fixture(scope="module")
def sample():
    examples, _ = load_oarelatedwork(SAMPLE_FILES["oarelatedwork"])
    return examples, CitationGraph(examples, training_targets=[e.target_id for e in examples[:8]])


def test_tfidf_relevance_prefers_the_on_topic_text():
    scores = tfidf_relevance("abstractive summarisation of news articles",
                             ["neural abstractive summarisation for news", "protein folding with lattice models"])
    assert scores[0] > 0.2 and scores[1] == 0.0


def test_features_are_bounded_and_cached(sample, tmp_path, monkeypatch):
    examples, graph = sample
    target = examples[9]
    features = reference_features(target, graph, cache_dir=tmp_path)
    assert set(features) == {r.id for r in target.references}
    for f in features.values():
        assert 0 <= f.tfidf_relevance <= 1 and 0 <= f.embedding_relevance <= 1 and 0 <= f.centrality <= 1
    assert max(f.centrality for f in features.values()) == 1.0
    assert len(list(tmp_path.glob("*.json"))) == 1

    def no_model(texts):
        raise AssertionError("the cache should have answered")

    monkeypatch.setattr(relevance, "embed", no_model)
    assert reference_features(target, graph, cache_dir=tmp_path) == features


def test_gold_cited_papers_are_more_relevant_on_average(sample):
    """A sanity check on the sample: the papers a section cites are closer to the target than the rest."""
    examples, graph = sample
    gold, other = [], []
    for ex in examples:
        features = reference_features(ex, graph)
        for ref_id, f in features.items():
            (gold if ref_id in ex.gold_cited_ids else other).append(f.embedding_relevance)
    assert sum(gold) / len(gold) > sum(other) / len(other)


def test_features_never_read_the_gold_section(sample):
    examples, graph = sample
    target = examples[10]
    altered = dataclasses.replace(target, gold_related_work="Something else entirely.",
                                  gold_cited_ids=target.gold_cited_ids[:1])
    assert reference_features(altered, graph) == reference_features(target, graph)
