"""MA-RWG metrics (seed "MA-RWG"), as the suite computes them offline.

- *ClaP* (claim precision): share of citing sentences whose claim at least one cited paper
  entails (LLM NLI over the cited paper's title and abstract).
- *CitP* (citation precision): share of (sentence, cited paper) pairs labelled entailment.
- *RC* (reference coverage): share of the example's references the text cites.
- *CC* (citation correctness): share of citation markers that resolve to a given reference —
  the same parse as citation verification.
- *TQ* (text quality): the LLM judges' mean over Clarity, Structure, Relevance, Motivation, Critics (1–5).
- *SN-P / SN-R / SN-F1*: sentence matching with MiniLM embeddings: a generated sentence counts
  as matched if its best cosine with a gold sentence is ≥ ``threshold`` (precision), and vice
  versa (recall).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np


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


def reference_coverage(cited: Sequence[str], references: Sequence[str]) -> float:
    if not references:
        raise ValueError("reference coverage needs references")
    return len(set(cited) & set(references)) / len(set(references))


def sentence_matching(candidate: np.ndarray, gold: np.ndarray, threshold: float = 0.7) -> dict[str, float]:
    """SN-P, SN-R, SN-F1 from unit-length sentence embeddings (rows) of candidate and gold."""
    if len(candidate) == 0 or len(gold) == 0:
        return {"sn_p": 0.0, "sn_r": 0.0, "sn_f1": 0.0}
    cos = candidate @ gold.T
    precision = float(np.mean(cos.max(axis=1) >= threshold))
    recall = float(np.mean(cos.max(axis=0) >= threshold))
    f1 = 2 * precision * recall / (precision + recall) if precision + recall else 0.0
    return {"sn_p": precision, "sn_r": recall, "sn_f1": f1}
