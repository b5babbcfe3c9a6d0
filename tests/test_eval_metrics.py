"""Evaluation metrics on hand-computed cases and on the properties they must have."""

import math

import numpy as np
import pytest

from crewlib.eval import marwg_metrics as marwg
from crewlib.eval import rwgbench
from crewlib.eval.text_metrics import bertscore, rouge


def test_rouge_identical_disjoint_and_stemmed():
    assert rouge("graph neural networks", "graph neural networks") == {"rouge1": 1.0, "rouge2": 1.0, "rougeL": 1.0}
    assert rouge("graph neural networks", "protein folding")["rouge1"] == 0.0
    # Porter stemming: "networks"/"network", "learning"/"learn" match.
    assert rouge("learning networks", "learn network")["rouge1"] == 1.0
    # Hand-computed: 2 of 4 candidate unigrams in a 2-word reference → P 0.5, R 1.0, F1 2/3.
    assert rouge("cats chase mice daily", "cats chase")["rouge1"] == pytest.approx(2 / 3)


def test_bertscore_minilm_identical_is_maximal_and_ranks_paraphrase_above_unrelated():
    gold = "Transformers use self-attention to model long-range dependencies in text."
    scores = bertscore([gold, "Self-attention lets transformers capture long-distance dependencies.",
                        "The recipe needs two eggs and a cup of flour."], [gold] * 3)
    assert scores[0]["bertscore_minilm_f1"] == pytest.approx(1.0, abs=1e-4)
    assert scores[1]["bertscore_minilm_f1"] > scores[2]["bertscore_minilm_f1"]
    with pytest.raises(ValueError, match="2 candidates but 1 references"):
        bertscore(["a", "b"], ["a"])


def test_citation_precision_recall_density_balance_hand_computed():
    assert rwgbench.citation_precision(["a", "b", "x"], ["a", "b", "c", "d"]) == pytest.approx(2 / 3)
    assert rwgbench.citation_recall(["a", "b", "x"], ["a", "b", "c", "d"]) == 0.5
    assert rwgbench.citation_precision([], ["a"]) == 0.0
    with pytest.raises(ValueError):
        rwgbench.citation_recall(["a"], [])
    assert rwgbench.citation_density(3, " ".join(["w"] * 60)) == 5.0
    assert rwgbench.citation_balance(["a", "a", "b", "c"]) == pytest.approx(2 / 3)


def test_soft_recall_cosine_gives_partial_credit_one_to_one_above_threshold():
    sims = {("b", "x"): 0.8, ("c", "x"): 0.9, ("c", "y"): 0.55}
    sim = lambda g, a: sims.get((g, a), 0.0)
    # c–x (0.9) is matched first; b can no longer use x; c–y is below the threshold anyway.
    assert rwgbench.soft_recall_cosine(["a", "x", "y"], ["a", "b", "c"], sim, 0.6) == pytest.approx((1 + 0.9) / 3)
    assert rwgbench.soft_recall_cosine(["a", "x", "y"], ["a", "b", "c"], sim, 0.95) == pytest.approx(1 / 3)
    # Soft ≥ hard, equal when complete.
    assert rwgbench.soft_recall_cosine(["a", "b", "c"], ["a", "b", "c"], sim, 0.6) == 1.0


def _exact(a, b):
    return np.array([[1.0 if x == y else 0.0 for y in b] for x in a])


def test_soft_lcs_and_pss():
    assert rwgbench.soft_lcs(np.eye(3)) == 3.0
    assert rwgbench.soft_lcs(np.array([[0.5, 0.0], [0.0, 0.5]])) == 1.0
    gold = ["methods", "datasets", "evaluation", "limits"]
    assert rwgbench.positioning_structure_similarity(gold, gold, _exact) == 1.0
    shuffled = ["limits", "evaluation", "datasets", "methods"]
    assert rwgbench.positioning_structure_similarity(shuffled, gold, _exact) == 0.25  # LCS of a reversal is 1
    assert rwgbench.positioning_structure_similarity(gold[:2], gold, _exact) == 0.5
    assert rwgbench.blocks("A.\n\nB.\n   \nC.\n\n\n") == ["A.", "B.", "C."]


def test_frame_alignment_hand_computed():
    assert rwgbench.frame_alignment(["uses", "background"], ["background", "uses"]) == pytest.approx(1.0)
    assert rwgbench.frame_alignment(["uses"], ["background"]) == pytest.approx(0.0)
    # p = (1, 0), q = (½, ½): JSD = ½·log2(4/3) + ¼·log2(2/3) + ¼·log2(2) = 0.3113 (base 2).
    expected = 1 - (0.5 * math.log2(4 / 3) + 0.25 * math.log2(2 / 3) + 0.25)
    assert rwgbench.frame_alignment(["uses"], ["uses", "motivation"]) == pytest.approx(expected)
    with pytest.raises(ValueError):
        rwgbench.frame_alignment([], ["uses"])


def test_citing_sentences_resolve_keys():
    text = "Graphs help [R1, R9]. No citation here. Trees too [R2]."
    assert rwgbench.citing_sentences(text, {"R1": "a", "R2": "b"}) == [("Graphs help [R1, R9].", ["a"]),
                                                                       ("Trees too [R2].", ["b"])]


def test_marwg_metrics_hand_computed():
    labels = [["entailment", "neutral"], ["neutral"], ["contradiction"], []]
    assert marwg.claim_precision(labels) == pytest.approx(1 / 3)
    assert marwg.citation_precision_nli(["entailment", "neutral", "entailment", "contradiction"]) == 0.5
    assert marwg.reference_coverage(["a", "b", "z"], ["a", "b", "c", "d"]) == 0.5  # gold list {a, b, c, d}
    e = np.eye(3)
    candidate = np.array([e[0], e[1], (e[0] + e[2]) / math.sqrt(2)])  # third: cosine 0.707 with gold 0 and 2
    gold = np.array([e[0], e[2]])
    assert marwg.sentence_matching(candidate, gold, 0.9) == {"sn_p": pytest.approx(1 / 3), "sn_r": 0.5,
                                                             "sn_f1": pytest.approx(0.4)}
    assert marwg.sentence_matching(candidate, gold, 0.7)["sn_r"] == 1.0
    assert marwg.sentence_matching(gold, gold)["sn_f1"] == 1.0
