"""MA-RWG metrics (seed "MA-RWG"), as the paper defines them; docs/method.md §Metrics.

- *CC* (citation count): the mean number of citations per cited sentence — over the sentences
  that carry at least one citation marker, the number of **distinct resolved** references each
  cites. A repeated key in one sentence (``[R1] ... [R1]``) counts once; a marker that resolves to
  no reference counts zero, but its sentence still counts as cited. No cited sentence → no CC.
  E.g. "A [R1][R2]. B [R3]. C." → (2 + 1) / 2 = 1.5.
- *RC* (reference coverage): the share of the gold reference list (the references the gold
  section cites) that the generated citations cover, |cited ∩ gold| / |gold|. By definition this
  is the same number as RWGBench's citation recall. No gold list → no RC.
- *ClaP* (claim precision): share of citing sentences whose claim at least one cited paper
  entails (LLM NLI over the cited paper's title and abstract).
- *CitP* (citation precision): share of (sentence, cited paper) pairs labelled entailment.
- *TQ* (text quality): the LLM judges' mean over Clarity, Structure, Relevance, Motivation, Critics (1–5).
- *SN-P / SN-R / SN-F1*: sentence matching with MiniLM embeddings: a generated sentence counts
  as matched if its best cosine with a gold sentence is ≥ ``threshold`` (precision), and vice
  versa (recall).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np


def citation_count(cited_per_sentence: Sequence[Sequence[str]]) -> float:
    """CC: mean distinct resolved references per cited sentence.

    ``cited_per_sentence[i]`` = the resolved reference ids of the i-th sentence that carries a
    citation marker (possibly empty when none of its markers resolves).
    """
    if not cited_per_sentence:
        raise ValueError("citation count needs at least one sentence with a citation marker")
    return sum(len(set(ids)) for ids in cited_per_sentence) / len(cited_per_sentence)


def reference_coverage(cited: Sequence[str], gold: Sequence[str]) -> float:
    """RC: share of the gold reference list (ids the gold section cites) among the cited ids."""
    if not gold:
        raise ValueError("reference coverage needs the gold reference list")
    return len(set(cited) & set(gold)) / len(set(gold))


def claim_precision(sentence_labels: Sequence[Sequence[str]]) -> float:
    """``sentence_labels[i]`` = NLI labels of sentence i against each of its cited papers."""
    scored = [labels for labels in sentence_labels if labels]
    if not scored:
        raise ValueError("claim precision needs at least one citing sentence with a label")
    return sum("entailment" in labels for labels in scored) / len(scored)


def citation_precision_nli(labels: Sequence[str]) -> float:
    if not labels:
        raise ValueError("citation precision needs at least one labelled citation")
    return sum(label == "entailment" for label in labels) / len(labels)


def sentence_matching(candidate: np.ndarray, gold: np.ndarray, threshold: float = 0.7) -> dict[str, float]:
    """SN-P, SN-R, SN-F1 from unit-length sentence embeddings (rows) of candidate and gold."""
    if len(candidate) == 0 or len(gold) == 0:
        return {"sn_p": 0.0, "sn_r": 0.0, "sn_f1": 0.0}
    cos = candidate @ gold.T
    precision = float(np.mean(cos.max(axis=1) >= threshold))
    recall = float(np.mean(cos.max(axis=0) >= threshold))
    f1 = 2 * precision * recall / (precision + recall) if precision + recall else 0.0
    return {"sn_p": precision, "sn_r": recall, "sn_f1": f1}
