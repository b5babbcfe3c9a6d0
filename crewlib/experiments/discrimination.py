"""Can a judge tell good from bad? The gold section against controlled degradations of it.

For each evaluation example the gold related-work section is scored together with five damaged
copies of it; a judge that discriminates gives the gold a higher score than each copy, on each
dimension. ``judge_discrimination`` reports, per judge, degradation and dimension, the share of
(gold, degraded) pairs ranked correctly (gold strictly higher) and the share of ties, so a
judge's scores can be read with its measured discrimination beside them.

The degradations (``degrade``):

- ``paragraph_repeated`` — the first paragraph appended again at the end;
- ``citations_removed`` — every citation (``[R3]`` markers and author–year parentheses) deleted;
- ``sentences_shuffled`` — all sentences in a random order (never the original one), as one paragraph;
- ``cut_mid_sentence`` — the text stops halfway, in the middle of a sentence;
- ``wrong_paper_paragraph`` — the last paragraph replaced by one from another paper's section.
"""

from __future__ import annotations

import random
import re
from collections.abc import Sequence

import pandas as pd

from crewlib.eval import EvalExample, Evaluator
from crewlib.eval.llm_metrics import Judge
from crewlib.text import sentences, strip_markers

DEGRADATIONS = ("paragraph_repeated", "citations_removed", "sentences_shuffled", "cut_mid_sentence",
                "wrong_paper_paragraph")
DIMENSIONS = ("coverage", "logic", "relevance", "overall")
GOLD = "gold"
_YEAR_PARENTHESES = re.compile(r"[ \t]*\([^()]*\b(?:19|20)\d{2}[a-z]?\b[^()]*\)")  # (Smith et al., 2020; Doe 2019)


def paragraphs(text: str) -> list[str]:
    return [p.strip() for p in re.split(r"\n\s*\n", text.strip()) if p.strip()]


def degrade(gold: str, kind: str, *, other: str, seed: int = 0) -> str:
    """``gold`` damaged one way (``DEGRADATIONS``); ``other``: another paper's gold section."""
    parts = paragraphs(gold)
    if not parts:
        raise ValueError("the gold section is empty: nothing to degrade")
    if kind == "paragraph_repeated":
        return "\n\n".join([*parts, parts[0]])
    if kind == "citations_removed":
        text = _YEAR_PARENTHESES.sub("", strip_markers(gold))
        return re.sub(r"[ \t]+([.,;:])", r"\1", text)
    if kind == "sentences_shuffled":
        ordered = [s for p in parts for s in sentences(p)]
        if len(ordered) < 2:
            raise ValueError("the gold section has one sentence: there is no order to shuffle")
        shuffled = list(ordered)
        random.Random(seed).shuffle(shuffled)
        if shuffled == ordered:  # a shuffle may leave the order as it was: rotate instead
            shuffled = ordered[1:] + ordered[:1]
        return " ".join(shuffled)
    if kind == "cut_mid_sentence":
        words = gold.split(" ")
        cut = " ".join(words[: max(1, len(words) // 2)]).rstrip()
        return cut.rstrip(".!?") if cut[-1:] in ".!?" else cut
    if kind == "wrong_paper_paragraph":
        foreign = paragraphs(other)
        if not foreign:
            raise ValueError("the other paper's gold section is empty")
        return "\n\n".join([*parts[:-1], foreign[0]] if len(parts) > 1 else [parts[0], foreign[0]])
    raise ValueError(f"unknown degradation {kind!r}; known: {DEGRADATIONS}")


def degraded_outputs(examples: Sequence[EvalExample], *, seed: int = 0) -> pd.DataFrame:
    """Rows ``system, example, text, key_to_id`` for the evaluation suite: each gold and its degradations."""
    usable = [e for e in examples if e.gold.strip()]
    if len(usable) < 2:
        raise ValueError("judge discrimination needs at least two examples with a gold section "
                         "(a wrong-paper paragraph comes from another example)")
    rows = []
    for i, example in enumerate(usable):
        other = usable[(i + 1) % len(usable)].gold
        rows.append({"system": GOLD, "example": example.example_id, "text": example.gold,
                     "key_to_id": dict(example.default_keys)})
        for kind in DEGRADATIONS:
            rows.append({"system": kind, "example": example.example_id,
                         "text": degrade(example.gold, kind, other=other, seed=seed + i),
                         "key_to_id": dict(example.default_keys)})
    return pd.DataFrame(rows)


def discrimination_table(scores: pd.DataFrame) -> pd.DataFrame:
    """``degradation, dimension, pairs, correct, ties``: shares of (gold, degraded) pairs; from judge scores."""
    wide = scores[scores.metric.str.startswith("judge_")].assign(
        dimension=lambda f: f.metric.str.removeprefix("judge_")).pivot_table(
        index=["example", "dimension"], columns="system", values="value")
    rows = []
    for kind in DEGRADATIONS:
        for dimension in DIMENSIONS:
            if GOLD not in wide or kind not in wide:
                pairs = pd.DataFrame(columns=[GOLD, kind])
            else:
                part = wide.xs(dimension, level="dimension") if dimension in wide.index.get_level_values(1) else None
                pairs = part[[GOLD, kind]].dropna() if part is not None else pd.DataFrame(columns=[GOLD, kind])
            n = len(pairs)
            rows.append({"degradation": kind, "dimension": dimension, "pairs": n,
                         "correct": float((pairs[GOLD] > pairs[kind]).mean()) if n else float("nan"),
                         "ties": float((pairs[GOLD] == pairs[kind]).mean()) if n else float("nan")})
    return pd.DataFrame(rows)


def judge_discrimination(params: dict, examples: Sequence[EvalExample], *, judges: Sequence[Judge] | None = None,
                         seed: int = 0, progress: bool = False) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Per configured judge: the discrimination table (with a ``judge`` column) and the raw scores."""
    outputs = degraded_outputs(examples, seed=seed)
    judges = list(judges) if judges is not None else Evaluator(params).judges
    tables, raw = [], []
    for judge in judges:
        scores = Evaluator(params, judges=[judge]).score(outputs, examples, metrics=["judge"], progress=progress)
        tables.append(discrimination_table(scores).assign(judge=judge.name))
        raw.append(scores.assign(judge=judge.name))
    return pd.concat(tables, ignore_index=True), pd.concat(raw, ignore_index=True)


def summary(table: pd.DataFrame) -> pd.DataFrame:
    """Per judge and dimension: the share of all pairs ranked correctly (over the five degradations)."""
    weighted = table.assign(right=table.correct * table.pairs)
    out = weighted.groupby(["judge", "dimension"], sort=False).agg(pairs=("pairs", "sum"), right=("right", "sum"))
    out["correct"] = out.right / out.pairs
    return out.drop(columns="right").reset_index()
