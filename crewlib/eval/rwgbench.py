"""RWGBench metrics (seed "RWGBench"): citation selection, placement, organisation, framing.

Pure functions over parsed texts; the suite (``crewlib.eval.suite``) feeds them embeddings
and LLM labels. Definitions (docs/method.md §Metrics), where the benchmark leaves a choice open
the choice is stated:

- *precision / recall*: distinct resolved cited ids against the gold cited ids; precision is
  0 for a text that cites nothing.
- *topical relevance*: how close the papers the text cites are to the target — the mean
  cosine between the MiniLM embedding of each distinct cited reference's title + abstract and
  that of the target's abstract (unit vectors; the mean is not clipped). Cited references
  without a title or abstract are left out; a text citing none with a text has no value.
- *soft recall*: recall where a cited gold paper scores 1 and a gold paper the text does not cite earns
  partial credit (``eval.soft_recall_credit``, ours: the benchmark gives partial credit without a weight we can
  cite) when a cited non-gold paper is judged a topically compatible alternative to it, on the two papers' titles
  and abstracts (one LLM judgement per pair). Which alternative is judged for which missed gold paper is ours: the
  pairs of :func:`alternative_pairs` (one-to-one, most similar by MiniLM cosine first), at most
  ``eval.soft_recall_max_pairs`` per text.
- *soft recall (cosine)*, ``soft_recall_cosine``, a second and different metric kept from earlier
  versions: a missed gold paper earns partial credit equal to its MiniLM cosine with a cited
  non-gold paper (the same pairs, only if cosine ≥ ``eval.soft_recall_threshold``).
- *citation density*: distinct cited papers per 100 words; reported relative to the gold section
  (generated / gold, so 1.0 = same density).
- *balance*: share of the distinct cited papers that are cited exactly once.
- *positioning structure similarity (PSS)*: soft LCS over the ordered paragraph blocks of the two
  texts, block similarity in [0, 1], normalised by the longer sequence (identical → 1).
- *citation frame alignment*: 1 − Jensen–Shannon divergence (base 2) between the distributions
  of citation functions (7 classes) of the generated and the gold citing sentences.
- *judge score*: RWGBench's own LLM judgement, four dimensions — coherence, organisation,
  fluency, academic style — each graded 1–5 with its own rubric; the score is their mean (1–5).
  It is not CREW's Coverage/Logic/Relevance judgement.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Callable, Mapping, Sequence

import numpy as np
from scipy.spatial.distance import jensenshannon

from crewlib.citations import find_citation_keys
from crewlib.eval.llm_metrics import CITATION_FUNCTIONS, RWGBENCH_DIMENSIONS
from crewlib.text import sentences, strip_markers, word_count


def citation_precision(cited: Sequence[str], gold: Sequence[str]) -> float:
    cited_set = set(cited)
    return len(cited_set & set(gold)) / len(cited_set) if cited_set else 0.0


def citation_recall(cited: Sequence[str], gold: Sequence[str]) -> float:
    """Share of the gold cited papers the text cites; ``gold`` must not be empty."""
    if not gold:
        raise ValueError("citation recall needs gold cited ids")
    return len(set(cited) & set(gold)) / len(set(gold))


def alternative_pairs(cited: Sequence[str], gold: Sequence[str], similarity: Callable[[str, str], float],
                      threshold: float = -1.0) -> list[tuple[str, str, float]]:
    """(missed gold paper, cited non-gold paper, similarity): each gold paper the text does not cite paired with at
    most one cited alternative and each alternative used once, the most similar pairs first (greedy), pairs below
    ``threshold`` left out."""
    gold_set, cited_set = list(dict.fromkeys(gold)), set(cited)
    missed = [g for g in gold_set if g not in cited_set]
    alternatives = [c for c in dict.fromkeys(cited) if c not in set(gold_set)]
    ranked = sorted(((similarity(g, a), g, a) for g in missed for a in alternatives), reverse=True)
    used: set[str] = set()
    pairs = []
    for score, g, a in ranked:
        if score < threshold:
            break
        if g not in used and a not in used:
            used.update((g, a))
            pairs.append((g, a, score))
    return pairs


def _gold_hits(cited: Sequence[str], gold: Sequence[str]) -> tuple[list[str], int]:
    gold_set = list(dict.fromkeys(gold))
    if not gold_set:
        raise ValueError("soft recall needs gold cited ids")
    return gold_set, len(set(gold_set) & set(cited))


def soft_recall_cosine(cited: Sequence[str], gold: Sequence[str], similarity: Callable[[str, str], float],
                       threshold: float) -> float:
    """Recall where a missed gold paper is partly covered by a topically close cited alternative (cosine)."""
    gold_set, hits = _gold_hits(cited, gold)
    credit = sum(min(1.0, score) for _, _, score in alternative_pairs(cited, gold, similarity, threshold))
    return (hits + credit) / len(gold_set)


def soft_recall(cited: Sequence[str], gold: Sequence[str], compatible: int, credit: float) -> float:
    """RWGBench soft recall: 1 per cited gold paper, ``credit`` per missed gold paper whose paired alternative was
    judged compatible (``compatible`` of them), over the gold papers."""
    gold_set, hits = _gold_hits(cited, gold)
    if not 0 <= compatible <= len(gold_set) - hits:
        raise ValueError(f"{compatible} compatible alternatives for {len(gold_set) - hits} missed gold papers")
    return (hits + credit * compatible) / len(gold_set)


def topical_relevance(cited_vectors: np.ndarray, target_vector: np.ndarray) -> float:
    """Mean cosine of the cited references' unit embeddings (rows) with the target abstract's."""
    if len(cited_vectors) == 0:
        raise ValueError("topical relevance needs at least one cited reference with a text")
    return float(np.mean(np.asarray(cited_vectors) @ np.asarray(target_vector)))


def judge_score(dimension_scores: Mapping[str, float]) -> float:
    """RWGBench judge score on its 0–1 scale: the mean of the four dimension scores (1–5) mapped linearly onto
    [0, 1], (mean − 1) / 4 (the mapping is ours: our reference gives the paper's scale, not its formula); all four
    are required."""
    missing = [d for d in RWGBENCH_DIMENSIONS if d not in dimension_scores]
    if missing:
        raise ValueError(f"the RWGBench judge score needs every dimension; missing {missing}")
    return (float(np.mean([dimension_scores[d] for d in RWGBENCH_DIMENSIONS])) - 1.0) / 4.0


def citation_density(n_cited: int, text: str) -> float:
    """Distinct cited papers per 100 words."""
    words = word_count(text)
    return 100.0 * n_cited / words if words else 0.0


def citation_balance(cited_ids_with_repeats: Sequence[str]) -> float:
    """Share of the distinct cited papers that are cited exactly once; needs at least one citation."""
    counts = Counter(cited_ids_with_repeats)
    if not counts:
        raise ValueError("citation balance needs at least one citation")
    return sum(1 for c in counts.values() if c == 1) / len(counts)


def blocks(text: str) -> list[str]:
    """Ordered blocks of a section: its paragraphs (blank-line separated), empty ones dropped."""
    return [b.strip() for b in re.split(r"\n\s*\n", text) if b.strip()]


def soft_lcs(similarity: np.ndarray) -> float:
    """Soft longest common subsequence of two sequences, given their pairwise similarity matrix in [0, 1]."""
    n, m = similarity.shape
    table = np.zeros((n + 1, m + 1))
    for i in range(1, n + 1):
        for j in range(1, m + 1):
            table[i, j] = max(table[i - 1, j], table[i, j - 1], table[i - 1, j - 1] + similarity[i - 1, j - 1])
    return float(table[n, m])


def positioning_structure_similarity(candidate_blocks: Sequence[str], gold_blocks: Sequence[str],
                                     block_similarity: Callable[[Sequence[str], Sequence[str]], np.ndarray]) -> float:
    """PSS in [0, 1]: soft LCS of the block sequences over the longer length (identical → 1)."""
    if not candidate_blocks or not gold_blocks:
        return 0.0
    matrix = np.clip(np.asarray(block_similarity(candidate_blocks, gold_blocks), dtype=float), 0.0, 1.0)
    return soft_lcs(matrix) / max(len(candidate_blocks), len(gold_blocks))


def citing_sentences(text: str, key_to_id: Mapping[str, str], style: str = "R") -> list[tuple[str, list[str]]]:
    """Sentences with at least one citation marker, each with its resolved ids (possibly none)."""
    out = []
    for sentence in sentences(text):
        keys = find_citation_keys(sentence, style)
        if keys:
            out.append((sentence, list(dict.fromkeys(key_to_id[k] for k in keys if k in key_to_id))))
    return out


def gold_claims(gold: str, key_to_id: Mapping[str, str], style: str = "R",
                author_year: Mapping[str, tuple[str, int]] | None = None) -> dict[str, str]:
    """The gold section's claim about each reference it cites: its citing sentences, markers removed.

    A sentence cites a reference through a marker that resolves to it or, for a gold section
    written with author–year citations, through the reference's first-author surname followed
    within 40 characters by its year (``author_year[ref_id] = (surname, year)``).
    """
    parts = sentences(gold)
    spans, pos = [], 0
    for part in parts:
        start = gold.index(part, pos)
        spans.append((start, start + len(part)))
        pos = start + len(part)
    cited: dict[str, list[int]] = {}
    for i, part in enumerate(parts):
        for rid in dict.fromkeys(key_to_id[k] for k in find_citation_keys(part, style) if k in key_to_id):
            cited.setdefault(rid, []).append(i)
    for rid, (surname, year) in (author_year or {}).items():
        if not (surname and year):
            continue
        # Over the whole text: the splitter may cut "Smith et al. (2019)" after "al.".
        for match in re.finditer(rf"\b{re.escape(surname)}\b.{{0,40}}?\b{year}", gold):
            overlapping = [i for i, (a, b) in enumerate(spans) if a < match.end() and b > match.start()]
            cited.setdefault(rid, []).extend(overlapping)
    return {rid: " ".join(strip_markers(parts[i]) for i in sorted(set(where))) for rid, where in cited.items()}


def function_distribution(labels: Sequence[str]) -> np.ndarray:
    counts = Counter(labels)
    vector = np.array([counts.get(f, 0) for f in CITATION_FUNCTIONS], dtype=float)
    if vector.sum() == 0:
        raise ValueError("no citation functions to compare")
    return vector / vector.sum()


def frame_alignment(candidate_labels: Sequence[str], gold_labels: Sequence[str]) -> float:
    """1 − JSD (base 2) between the two citation-function distributions, in [0, 1]."""
    divergence = jensenshannon(function_distribution(candidate_labels), function_distribution(gold_labels),
                               base=2) ** 2  # scipy returns the distance, the square root of the divergence
    return float(np.clip(1.0 - divergence, 0.0, 1.0))
