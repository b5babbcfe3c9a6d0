"""Instrument version 5 (issue 46; docs/method.md, "Version 5"): coherence against the section's own sentence pairs,
and STRoGeNS's papers split into the design half and the held-out half."""

import random

import pytest

from crewlib.eval.section_measures import local_coherence
from crewlib.experiments.real_discrimination import halves

# Two themes, each paragraph's sentences chained by shared words (summarisation; reinforcement learning).
ORDERED = ("Extractive summarisation selects salient sentences [R1]. Salient sentences are ranked by graph "
           "centrality in LexRank [R2]. Graph centrality favours sentences similar to many others [R3].\n\n"
           "Policy gradient methods train agents from rewards [R4]. Clipped objectives keep each policy gradient "
           "step small [R5]. Small steps let cooperating agents share one policy [R6].")


def _sentences(text: str) -> list[str]:
    return [s.strip() + "." for p in text.split("\n\n") for s in p.split(". ") if s.strip(". ")]


def test_coherence_ranks_adjacent_pairs_among_the_sections_own_pairs():
    ordered = local_coherence(ORDERED)
    assert ordered is not None and ordered > 0.5
    flat = _sentences(ORDERED)
    shuffled = [local_coherence(" ".join(random.Random(seed).sample(flat, len(flat)))) for seed in range(20)]
    assert sum(shuffled) / len(shuffled) < ordered  # a random order loses what the order said
    first, second = ORDERED.split("\n\n")
    a, b = _sentences(first), _sentences(second)
    dealt = " ".join([a[0], b[0], a[1]]) + "\n\n" + " ".join([b[1], a[2], b[2]])
    assert local_coherence(dealt) < ordered  # themes dealt across the paragraphs


def test_coherence_does_not_pay_for_vocabulary_repeated_everywhere():
    repetitive = ("Summarisation models summarise documents [R1]. Summarisation models summarise documents well [R2]. "
                  "Summarisation models summarise long documents [R3]. Summarisation models summarise many documents "
                  "[R4].")
    assert local_coherence(repetitive) == pytest.approx(0.5, abs=0.2)  # every pair alike: no order to reward
    assert local_coherence("One sentence [R1]. Two sentences [R2].") is None  # fewer than three sentences


def test_halves_split_by_position_in_the_file():
    design, held_out = halves(["p0", "p1", "p2", "p3", "p4"])
    assert design == ["p0", "p2", "p4"] and held_out == ["p1", "p3"]
