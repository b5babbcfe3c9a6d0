"""The instrument: which of two related-work sections of one paper is the better one (docs/method.md, "The instrument").

A small model cannot be trusted to grade a whole section on a 1–5 scale (notebook 05 measures how often it ranks
a damaged copy above the gold), but it can answer short questions. The instrument therefore rests on:

- **grounded measures** of each section (the evaluation suite's groups ``citation``, ``grounding`` and, with
  ``instrument.entailment``, ``claim_support``): coverage of the gold-cited works (``citation_recall``), lexical
  support of each cited sentence by its cited works (``support``), the LLM's entailment of each cited sentence
  by the cited abstract (``claim_support``), local coherence (``coherence``), and the rates of repeated,
  first-person and uncited-claim sentences and a cut last sentence (``truncated``);
- a **pairwise judge**: the LLM compares the two sections shown as A/B and again as B/A, per dimension of
  ``instrument.pairwise_dimensions``; a preference counts only when both orders agree (else a tie), and the
  share of pairs where they agree is the judge's position consistency;
- the **composite**: ``Σ_m w_m · (m(first) − m(second)) + w_pair · preference`` with the weights of
  ``instrument.weights`` and ``instrument.pairwise_weight``, fixed in params before it was measured (a measure
  missing on either side adds nothing). Positive: the first section is the better one; 0: a tie;
- beside it, a **calibrated composite** (:func:`cross_fitted`): non-negative weights fitted by logistic loss on
  the damage pairs of half the papers and applied to the other half, so no paper is ranked with weights fitted
  on its own pairs.

:func:`verdicts` turns the suite's scores and the pairwise preferences into one verdict per pair and instrument
(+1 the first is better, 0 a tie, −1 the second), which the discrimination test and the paired comparisons of
the notebooks read.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import ClassVar, Literal

import numpy as np
import pandas as pd
import pydantic

from crewlib import prompts
from crewlib.citations import KEY
from crewlib.eval.examples import EvalExample
from crewlib.eval.llm_metrics import Judge, ask, parallel
from crewlib.eval.suite import Evaluator
from crewlib.llm import Caller
from crewlib.schema import InstrumentBlock, Params

# Each measure and its direction: +1 when more is better, −1 when less is.
MEASURES = {"citation_recall": 1, "support": 1, "claim_support": 1, "number_support": 1, "coherence": 1,
            "paragraphing": 1, "repeated_sentences_rate": -1, "first_person_rate": -1, "uncited_claims_rate": -1,
            "copied_sentences_rate": -1, "truncated": -1, "positioning": 1, "positioning_any": 1, "synthesis": 1,
            "theme_coherence": 1, "citation_content": 1}
COMPOSITE = "composite"
OFFLINE_COMPOSITE = "composite without the LLM"  # the same sum without claim_support and the pairwise preference
LLM_MEASURES = frozenset({"claim_support"})
SET = "papers"  # the column naming a row's discrimination set (instrument.papers) when several were measured


def instrument_settings(params: Params) -> InstrumentBlock:
    """The ``instrument`` block of ``params``, its weights checked against :data:`MEASURES`."""
    unknown = [m for m in params.instrument.weights if m not in MEASURES]
    if unknown:
        raise ValueError(f"instrument.weights: unknown measures {unknown}; known: {sorted(MEASURES)}")
    return params.instrument


def measured_groups(settings: InstrumentBlock, *, llm: bool = True) -> tuple[str, ...]:
    """The evaluation suite's groups the measures come from; ``llm`` False: those that ask no LLM (the composite
    without the LLM's parts)."""
    return ("citation", "grounding", "relating", *(("claim_support",) if settings.entailment and llm else ()))


class PairwiseAnswer(pydantic.BaseModel):
    reason: str  # first: a small model chooses better after a one-sentence reason
    better: Literal["A", "B"]

    max_chars: ClassVar[dict[str, int]] = {"reason": 240}


def rekey(text: str, key_to_id: Mapping[str, str], example: EvalExample) -> str:
    """``text``'s citations in the example's own keys (systems order references differently, so one paper can be
    [R3] in one section and [R7] in another); an unknown key stays as written."""
    key_of = {rid: key for key, rid in example.default_keys.items()}
    return re.sub(rf"\b{KEY}\b", lambda m: key_of.get(key_to_id.get(m.group(0), ""), m.group(0))
                  if m.group(0) in key_to_id else m.group(0), text)


def pairwise_messages(example: EvalExample, a: str, b: str, dimension: str) -> list[dict]:
    listing = "\n".join(f"[{key}] {example.reference_by_id[rid].title or '(no title)'}"
                        for key, rid in example.default_keys.items() if rid in example.reference_by_id)
    prompt = prompts.PAIRWISE.format(title=example.target_title or "(not given)", abstract=example.target_abstract,
                                     references=listing or "(not given)", a=a, b=b,
                                     criterion=prompts.PAIRWISE_CRITERIA[dimension])
    return [{"role": "system", "content": prompts.PAIRWISE_SYSTEM}, {"role": "user", "content": prompt}]


@dataclass(frozen=True)
class Preference:
    preference: float | None  # +1 the first section, −1 the second, 0 a tie (the orders disagree); None: missing
    consistent: bool | None  # both orders chose the same section; None: missing
    reason: str = ""  # why it is missing


def pairwise_preference(judge: Judge, example: EvalExample, first: str, second: str, dimension: str, *,
                        max_tokens: int, retries: int = 1) -> Preference:
    """The judge's preference between two sections (in the example's keys), asked as A/B and as B/A."""
    if dimension not in prompts.PAIRWISE_CRITERIA:
        raise ValueError(f"no pairwise criterion for {dimension!r}; known: {sorted(prompts.PAIRWISE_CRITERIA)}")
    answers = []
    for a, b in ((first, second), (second, first)):
        asked = ask(judge.client, pairwise_messages(example, a, b, dimension), PairwiseAnswer,
                    caller=Caller("judge", f"pairwise_{dimension}"), retries=retries, max_tokens=max_tokens)
        if asked.parsed is None:
            return Preference(None, None, asked.reason)
        answers.append(asked.parsed.better)
    first_in_ab, first_in_ba = answers[0] == "A", answers[1] == "B"
    if first_in_ab == first_in_ba:
        return Preference(1.0 if first_in_ab else -1.0, True)
    return Preference(0.0, False)


def pairwise_table(judge: Judge, pairs: Sequence[tuple[EvalExample, str, str, str, str]],
                   dimensions: Sequence[str], *, max_tokens: int, retries: int = 1, workers: int = 1) -> pd.DataFrame:
    """``pairs``: (example, first label, first text, second label, second text), texts in the example's keys.
    Rows ``judge, example, first, second, dimension, preference, consistent, reason``."""
    jobs = [(pair, dimension) for pair in pairs for dimension in dimensions]

    def run(job):
        (example, _, first, _, second), dimension = job
        return pairwise_preference(judge, example, first, second, dimension, max_tokens=max_tokens, retries=retries)

    rows = [{"judge": judge.name, "example": example.example_id, "first": a, "second": b, "dimension": dimension,
             "preference": p.preference, "consistent": p.consistent, "reason": p.reason}
            for ((example, a, _, b, _), dimension), p in zip(jobs, parallel(run, jobs, workers), strict=True)]
    return pd.DataFrame(rows, columns=["judge", "example", "first", "second", "dimension", "preference",
                                       "consistent", "reason"])


def position_consistency(preferences: pd.DataFrame) -> pd.DataFrame:
    """Per judge and dimension: pairs asked, pairs answered in both orders, and the share of those that agree."""
    answered = preferences.dropna(subset=["consistent"])
    out = preferences.groupby(["judge", "dimension"], sort=False).size().rename("pairs").to_frame()
    out["answered"] = answered.groupby(["judge", "dimension"], sort=False).size()
    out["consistent"] = answered.groupby(["judge", "dimension"], sort=False).consistent.mean()
    return out.fillna({"answered": 0}).reset_index()


def composite_delta(first: Mapping[str, float], second: Mapping[str, float], preference: float | None,
                    settings: InstrumentBlock, *, llm: bool = True) -> float:
    """The composite's difference first − second: weighted measure differences plus the weighted preference;
    ``llm`` False: without the LLM's parts (:data:`OFFLINE_COMPOSITE`)."""
    if not llm:
        preference = None
    delta = sum(w * MEASURES[m] * (first[m] - second[m]) for m, w in settings.weights.items()
                if (llm or m not in LLM_MEASURES) and pd.notna(first.get(m)) and pd.notna(second.get(m)))
    return float(delta + settings.pairwise_weight * (preference if preference is not None and pd.notna(preference)
                                                     else 0.0))


def verdicts(scores: pd.DataFrame, preferences: pd.DataFrame | None, pairs: Sequence[tuple[str, str, str]],
             settings: InstrumentBlock, *, judge_dimension: str = "overall") -> pd.DataFrame:
    """One verdict per (example, first, second) and instrument: each measure (by its direction), the absolute
    judge's dimensions (``judge:<dimension>``, from ``judge_<dimension>`` scores), the pairwise judge
    (``pairwise:<dimension>``), the composite (with the pairwise preference on ``judge_dimension``) and the
    composite without the LLM's parts.

    Rows ``example, first, second, instrument, verdict, delta``; verdict +1 / 0 / −1, NaN when a side has no value.
    """
    wide = scores.pivot_table(index=["example", "system"], columns="metric", values="value")
    prefs = {} if preferences is None else {
        (r.example, r.first, r.second, r.dimension): r.preference for r in preferences.itertuples()}
    rows = []
    for example, first, second in pairs:
        a = wide.loc[(example, first)].to_dict() if (example, first) in wide.index else {}
        b = wide.loc[(example, second)].to_dict() if (example, second) in wide.index else {}
        differences = {m: d * (a.get(m, np.nan) - b.get(m, np.nan)) for m, d in MEASURES.items()}
        differences |= {f"judge:{m.removeprefix('judge_')}": a.get(m, np.nan) - b.get(m, np.nan)
                        for m in sorted(set(a) | set(b)) if m.startswith("judge_")}
        for dimension in settings.pairwise_dimensions:
            differences[f"pairwise:{dimension}"] = prefs.get((example, first, second, dimension), np.nan)
        preference = prefs.get((example, first, second, judge_dimension))
        differences[COMPOSITE] = composite_delta(a, b, preference, settings)
        differences[OFFLINE_COMPOSITE] = composite_delta(a, b, None, settings, llm=False)
        for instrument, delta in differences.items():
            rows.append({"example": example, "first": first, "second": second, "instrument": instrument,
                         "verdict": float(np.sign(delta)) if pd.notna(delta) else np.nan, "delta": delta})
    return pd.DataFrame(rows, columns=["example", "first", "second", "instrument", "verdict", "delta"])


CALIBRATED = "composite, calibrated on the other half"


def _features(found: pd.DataFrame, names: Sequence[str]) -> pd.DataFrame:
    """One row per pair, one column per measure or pairwise dimension: its directed difference (``delta``)."""
    wide = found[found.instrument.isin(names)].pivot_table(index=["example", "first", "second"],
                                                           columns="instrument", values="delta")
    return wide.reindex(columns=list(names)).fillna(0.0)


def calibrate(found: pd.DataFrame, names: Sequence[str], *, l2: float = 1.0) -> dict[str, float]:
    """Non-negative weights of ``names`` (measures, ``pairwise:<dimension>``) under which the first section of each
    pair ranks above the second: the logistic loss of Σ w·x over the pairs' directed differences x, with an L2
    penalty, no intercept (swapping a pair flips x). For the issue's "calibrate on half, report the other half"."""
    from scipy.optimize import minimize

    x = _features(found, names).to_numpy(dtype=float) if len(found) else np.zeros((0, len(names)))
    if not len(x):
        raise ValueError("no pairs to calibrate on")

    def loss(w: np.ndarray) -> tuple[float, np.ndarray]:
        margin = x @ w
        p = 1.0 / (1.0 + np.exp(margin))  # the chance of the wrong order
        return float(np.logaddexp(0, -margin).sum() + l2 / 2 * w @ w), -(x * p[:, None]).sum(0) + l2 * w

    fit = minimize(loss, np.ones(len(names)), jac=True, bounds=[(0, None)] * len(names), method="L-BFGS-B")
    return {n: float(w) for n, w in zip(names, fit.x, strict=True)}


def cross_fitted(found: pd.DataFrame, names: Sequence[str], *, l2: float = 1.0) -> pd.DataFrame:
    """Verdicts of the calibrated composite where each paper's pairs are ranked with weights fitted on the other
    half of the papers only (papers split in sorted order, alternately); rows as :func:`verdicts`."""
    papers = sorted(found.example.unique())
    halves = [set(papers[0::2]), set(papers[1::2])]
    rows = []
    for own, other in (halves, halves[::-1]):
        if not own or not other:
            continue
        weights = calibrate(found[found.example.isin(other)], names, l2=l2)
        x = _features(found[found.example.isin(own)], names)
        delta = x.to_numpy(dtype=float) @ np.array([weights[n] for n in names])
        for (example, first, second), d in zip(x.index, delta, strict=True):
            rows.append({"example": example, "first": first, "second": second, "instrument": CALIBRATED,
                         "verdict": float(np.sign(d)), "delta": float(d)})
    return pd.DataFrame(rows, columns=["example", "first", "second", "instrument", "verdict", "delta"])


@dataclass(frozen=True)
class Ranking:
    """Which of two sections of one paper the instrument ranks first: ``verdict`` +1 the first, −1 the second, 0 a
    tie; ``delta`` the composite's difference first − second; ``measures`` each measure's directed difference
    (positive: the first is better on it; NaN where a side lacks it); ``preference`` the pairwise judge's, or None."""

    verdict: int
    delta: float
    measures: dict[str, float]
    preference: float | None


def rank_sections(params: Params, example: EvalExample, first: str, second: str, *,
                  first_keys: Mapping[str, str] | None = None, second_keys: Mapping[str, str] | None = None,
                  judge: Judge | None = None) -> Ranking:
    """Rank two related-work sections of ``example``'s paper on the instrument (docs/method.md, "The instrument"):
    the measures of :func:`measured_groups` (the LLM's entailment only with ``instrument.entailment``), the
    composite with ``instrument.weights``, and — with ``judge`` — the pairwise preference asked in both orders.
    Without a judge it is the composite without the LLM's parts. ``first_keys`` / ``second_keys``: each section's
    key → reference id (default: the example's keys). The same :func:`verdicts` every notebook's paired comparison
    and the discrimination test read."""
    settings = instrument_settings(params)
    groups = measured_groups(settings, llm=judge is not None)
    rows = [{"system": "first", "example": example.example_id, "text": first,
             "key_to_id": dict(first_keys or example.default_keys)},
            {"system": "second", "example": example.example_id, "text": second,
             "key_to_id": dict(second_keys or example.default_keys)}]
    scores = Evaluator(params, judges=[judge] if judge is not None else []).score(rows, [example], metrics=groups,
                                                                                   progress=False)
    prefs = None
    if judge is not None:
        texts = [rekey(r["text"], r["key_to_id"], example) for r in rows]
        prefs = pairwise_table(judge, [(example, "first", texts[0], "second", texts[1])],
                               settings.pairwise_dimensions, max_tokens=settings.max_tokens,
                               retries=int(params.eval.judge_retries))
    found = verdicts(scores, prefs, [(example.example_id, "first", "second")], settings).set_index("instrument")
    name = COMPOSITE if judge is not None else OFFLINE_COMPOSITE
    preference = None if prefs is None else prefs[prefs.dimension == "overall"].preference.dropna()
    return Ranking(int(found.loc[name, "verdict"]), float(found.loc[name, "delta"]),
                   {m: float(found.loc[m, "delta"]) for m in MEASURES if m in found.index},
                   None if preference is None or preference.empty else float(preference.iloc[0]))
