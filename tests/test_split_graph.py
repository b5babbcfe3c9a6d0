"""The split (disjoint, seeded, stable) and the citation graph (sentinel, pool filter, counts)."""

from __future__ import annotations

import random

import pytest

from crewlib.data.records import Reference, RWGExample
from crewlib.data.split import split_examples, split_ids
from crewlib.graph import SENTINEL, CitationGraph

IDS = [f"paper-{i}" for i in range(1000)]


def test_split_is_disjoint_sized_and_independent_of_order():
    split = split_ids(IDS, 0.02, 0.004, seed=7)
    assert len(split.train) == 20 and len(split.evaluation) == 4
    assert not set(split.train) & set(split.evaluation)
    shuffled = IDS[:]
    random.Random(1).shuffle(shuffled)
    assert split_ids(shuffled, 0.02, 0.004, seed=7) == split


def test_split_is_stable_across_machines():
    # Pinned, computed outside Python with coreutils:
    #   for i in $(seq 0 999); do printf '2025:paper-%s' $i | sha256sum ...; done | sort | head -8
    split = split_ids(IDS, 0.005, 0.003, seed=2025)
    assert split.train == ("paper-849", "paper-712", "paper-471", "paper-544", "paper-343")
    assert split.evaluation == ("paper-585", "paper-968", "paper-479")


def test_split_seed_changes_membership_and_bad_fractions_fail():
    assert split_ids(IDS, 0.1, 0.1, seed=1).train != split_ids(IDS, 0.1, 0.1, seed=2).train
    with pytest.raises(ValueError, match="cannot take"):
        split_ids(IDS[:10], 0.8, 0.5)
    with pytest.raises(ValueError, match="duplicate"):
        split_ids(["a", "a", "b"], 0.5, 0.5)
    with pytest.raises(ValueError, match=r"\[0, 1\]"):
        split_ids(IDS, 1.5, 0.0)


def ref(i, cites=()):
    return Reference(f"p{i}", f"Paper {i}", f"Abstract of paper {i}.", citations=tuple(f"p{c}" for c in cites))


def corpus():
    """Train target t1 cites p1..p4; eval target t2 cites p1, p2, p5. p1 is well connected, p5 is isolated."""
    refs = {
        1: ref(1), 2: ref(2, [1]), 3: ref(3, [1, 2, 2, 3, 99]), 4: ref(4, [1, 2, 3]), 5: ref(5),
    }
    t1 = RWGExample("t1", "T1", "A", (refs[1], refs[2], refs[3], refs[4]), "g", ("p1",))
    t2 = RWGExample("t2", "T2", "A", (refs[1], refs[2], refs[5]), "g", ("p1",))
    return [t1, t2]


def test_graph_counts_self_duplicate_and_missing_citations():
    graph = CitationGraph(corpus(), training_targets=["t1"])
    assert graph.report.self_citations == 1 and graph.report.duplicate_edges == 1
    assert graph.report.missing_references == 1
    assert graph.citation_adj_out["p3"] == {"p1", "p2"}
    assert graph.citation_adj_in["p1"] == {"t1", "p2", "p3", "p4"}
    assert "t2" not in graph.graph  # an evaluation target never enters under its own id


def test_evaluation_target_enters_as_sentinel_and_pool_is_filtered():
    examples = corpus()
    graph = CitationGraph(examples, training_targets=["t1"])
    with_target = graph.with_target(examples[1])
    assert set(with_target.successors(SENTINEL)) == {"p1", "p2", "p5"}
    assert SENTINEL not in graph.graph  # the shared graph is untouched
    # connections: p1 = 4 in, p2 = 3 in + 1 out, p5 = 0
    assert [graph.connections(p) for p in ("p1", "p2", "p5")] == [4, 4, 0]
    pool = graph.target_pool(examples[1], min_connections=4)
    assert pool.pool == ("p1", "p2") and pool.removed == ("p5",) and not pool.excluded
    assert graph.target_pool(examples[1], min_connections=5).excluded


def test_centrality_ranks_the_most_cited_paper_first():
    rank = CitationGraph(corpus(), training_targets=["t1"]).centrality()
    assert max(rank, key=rank.get) == "p1"


def test_split_examples_returns_records():
    train, evaluation, split = split_examples(corpus(), 0.5, 0.5, seed=3)
    assert {e.target_id for e in train + evaluation} == {"t1", "t2"} and len(train) == len(evaluation) == 1
