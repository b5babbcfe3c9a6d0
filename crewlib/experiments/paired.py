"""CREW against each system, paper by paper, on the instrument (docs/method.md, "The instrument").

For every paper both systems wrote, the instrument's composite difference CREW − system (its verdict: CREW
better, a tie, or worse); per system the wins, ties and losses, the mean difference with a bootstrap CI over
papers, and the exact two-sided sign test of wins against losses. The absolute judge's Overall difference and the
paper's stand beside. :func:`conclusion` writes the sentence a table ends with, from the paired result and the
instrument's measured discrimination.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path

import numpy as np
import pandas as pd
from scipy import stats

from crewlib.eval import EvalExample
from crewlib.eval.instrument import (
    COMPOSITE,
    LLM_MEASURES,
    OFFLINE_COMPOSITE,
    SET,
    instrument_settings,
    measured_groups,
    pairwise_table,
    rekey,
    verdicts,
)
from crewlib.eval.llm_metrics import Judge
from crewlib.experiments.tables import bootstrap_ci
from crewlib.schema import InstrumentBlock, Params

REFERENCE = "crew"
WITHOUT_LLM = "its part without the LLM, the only part measured there"
REAL = "real: "  # the label's opening of a real discrimination set (crewlib.experiments.real_discrimination)


def instrument_verdicts(frame: pd.DataFrame, scores: pd.DataFrame, examples: Sequence[EvalExample],
                        judge: Judge, settings: InstrumentBlock, *, systems: Sequence[str],
                        reference: str = REFERENCE, retries: int = 1, workers: int = 1) -> pd.DataFrame:
    """The instrument's verdicts on (reference, system) for every paper both wrote; asks the pairwise judge.

    ``frame``: generations (``system, example, text, key_to_id``); ``scores``: the suite's scores of them,
    with the instrument's groups."""
    by_id = {e.example_id: e for e in examples}
    written = frame[frame.text.notna() & (frame.text.astype(str).str.strip() != "")]
    texts = {(r.system, str(r.example)): rekey(r.text, r.key_to_id or {}, by_id[str(r.example)])
             for r in written.itertuples() if str(r.example) in by_id}
    pairs = [(e, reference, s) for s in systems if s != reference for e in by_id
             if (reference, e) in texts and (s, e) in texts]
    prefs = pairwise_table(judge, [(by_id[e], a, texts[(a, e)], b, texts[(b, e)]) for e, a, b in pairs],
                           settings.pairwise_dimensions, max_tokens=settings.max_tokens, retries=retries,
                           workers=workers)
    return verdicts(scores, prefs, pairs, settings)


def paired_table(found: pd.DataFrame, *, paper_differences: Mapping[str, float] | None = None,
                 seed: int = 0) -> pd.DataFrame:
    """Per system: papers, CREW better / tie / worse on the composite, mean composite difference [95% CI], the
    sign test, the absolute judge's mean Overall difference and the paper's Overall difference, and which
    composite it was (``instrument``: :data:`OFFLINE_COMPOSITE` when the verdicts hold no answer of the LLM, i.e.
    ``instrument.entailment`` off and no pairwise dimension)."""
    llm = found.instrument.str.startswith("pairwise:").any() or found[
        found.instrument.isin(LLM_MEASURES)].delta.notna().any()
    rows = []
    for system, part in found.groupby("second", sort=False):
        composite = part[part.instrument == COMPOSITE].dropna(subset=["delta"])
        judge = part[part.instrument == "judge:overall"].dropna(subset=["delta"])
        wins, ties, losses = (int((composite.verdict > 0).sum()), int((composite.verdict == 0).sum()),
                              int((composite.verdict < 0).sum()))
        low, high = bootstrap_ci(composite.delta.tolist(), seed=seed)
        rows.append({"system": system, "papers": len(composite), "CREW better": wins, "tie": ties,
                     "CREW worse": losses, "composite Δ": composite.delta.mean() if len(composite) else np.nan,
                     "ci_low": low, "ci_high": high,
                     "sign test p": stats.binomtest(wins, wins + losses, 0.5).pvalue if wins + losses else np.nan,
                     "judge Overall Δ": judge.delta.mean() if len(judge) else np.nan,
                     "paper Overall Δ": (paper_differences or {}).get(system, np.nan),
                     "instrument": COMPOSITE if llm else OFFLINE_COMPOSITE})
    return pd.DataFrame(rows).set_index("system")


def conclusion(table: pd.DataFrame, discrimination: pd.DataFrame | None, *, alpha: float = 0.05,
               target: float = 0.9, unit: str = "paper") -> str:
    """The sentence the paired table ends with: what the paired result says, and how far the instrument that
    measured it can be trusted (its worst damage kind in the discrimination test)."""
    trust = ""
    instrument = table["instrument"].iloc[0] if len(table) and "instrument" in table else COMPOSITE
    if discrimination is not None and not discrimination.empty:
        part = discrimination[discrimination.instrument == instrument]
        if not part.empty:
            worst = part.loc[part.correct.idxmin()]
            overall = float((part.correct * part.pairs).sum() / part.pairs.sum())
            kinds = part.damage.nunique()
            where = ("human-written sections no one here wrote above their damaged copies"
                     if SET in part and part[SET].astype(str).str.startswith(REAL).all()
                     else "a gold section above its damaged copy")
            if "part" in part and part.part.notna().all():
                where += f" ({part.part.iloc[0]})"
            trust = (f" That instrument ranks {where} in {overall:.0%} of "
                     f"{int(part.pairs.sum())} pairs ({kinds} damages), "
                     + (f"{worst.correct:.0%} for its worst damage ({worst.damage.replace('_', ' ')}), below the "
                        f"{target:.0%} it should reach: read these verdicts with that in mind."
                        if worst.correct < target else f"at least {worst.correct:.0%} for every damage."))
    better = [s for s, r in table.iterrows() if r["sign test p"] < alpha and r["CREW better"] > r["CREW worse"]]
    worse = [s for s, r in table.iterrows() if r["sign test p"] < alpha and r["CREW better"] < r["CREW worse"]]
    undecided = [s for s in table.index if s not in better and s not in worse]
    parts = []
    if better:
        parts.append(f"CREW is better than {', '.join(better)} (sign test p < {alpha})")
    if worse:
        parts.append(f"worse than {', '.join(worse)} (p < {alpha})")
    if undecided:
        parts.append(f"the {unit}s give no evidence either way against {', '.join(undecided)}")
    papers = int(table.papers.max()) if len(table) else 0
    name = "the instrument" if instrument == COMPOSITE else "the instrument without its LLM parts"
    return f"On {name}, {unit} by {unit} ({papers} {unit}s): " + "; ".join(parts) + "." + trust


def compare_on_instrument(params: Params, frame: pd.DataFrame, scores: pd.DataFrame, examples: Sequence[EvalExample],
                          systems: Sequence[str], *, reference: str = REFERENCE, evaluator=None,
                          progress: bool = False) -> pd.DataFrame:
    """The instrument's verdicts on (reference, system) per paper for generations ``frame`` already scored in
    ``scores``: the instrument's groups the scores lack are scored here; the pairwise judge is the first judge."""
    from crewlib.eval import Evaluator

    settings = instrument_settings(params)
    evaluator = evaluator or Evaluator(params)
    have = set(scores.metric) if len(scores) else set()
    extra = [g for g in measured_groups(settings) if not _scored(g, have)]
    measured = pd.concat([scores, evaluator.score(frame, examples, metrics=extra, progress=progress)]) if extra \
        else scores
    return instrument_verdicts(frame, measured, examples, evaluator.judges[0], settings, systems=systems,
                               reference=reference, retries=int(params.eval.judge_retries),
                               workers=int(params.eval.workers))


def _scored(group: str, metrics: set[str]) -> bool:
    """Whether a suite group's metrics are among ``metrics`` (by one metric it always yields)."""
    return {"citation": "citation_markers", "grounding": "repeated_sentences_rate",
            "claim_support": "claim_support", "relating": "positioning_any"}.get(group, group) in metrics


def measured_discrimination(figures: Path) -> pd.DataFrame | None:
    """The instrument's discrimination as notebook 05 measured it (``05_judge_discrimination.csv``): the rows a
    conclusion reads (:func:`discrimination_basis`)."""
    path = Path(figures) / "05_judge_discrimination.csv"
    if not path.exists():
        return None
    table = pd.read_csv(path)
    return discrimination_basis(table) if "instrument" in table else None


def discrimination_basis(discrimination: pd.DataFrame | None) -> pd.DataFrame | None:
    """The discrimination rows a conclusion reads, or None: per instrument, its rows on the real human-written
    sections (sets named ``real: ...``, :mod:`crewlib.experiments.real_discrimination`) where they were measured —
    sections no one here wrote, the harder test; the composite with its LLM parts reads the real sets' composite
    without them (``part`` says so: no judge's answers were recorded for those papers) — else the first judge's
    (the judge the paired comparisons ask), on the held-out papers when several sets were measured and they are
    among them (papers the instrument was not designed on), else on the first set."""
    if discrimination is None or discrimination.empty:
        return None
    rows = discrimination[discrimination.judge == discrimination.judge.iloc[0]]
    if SET in rows:
        sets = list(dict.fromkeys(rows[SET]))
        rows = rows[rows[SET] == ("holdout" if "holdout" in sets else sets[0])]
        real = discrimination[discrimination[SET].astype(str).str.startswith(REAL)]
        offline = real[real.instrument == OFFLINE_COMPOSITE]
        if not offline.empty and not (real.instrument == COMPOSITE).any():
            real = pd.concat([real, offline.assign(instrument=COMPOSITE, part=WITHOUT_LLM)], ignore_index=True)
        rows = pd.concat([rows[~rows.instrument.isin(set(real.instrument))], real], ignore_index=True)
    return rows
