"""The statistics of human pairwise judgements (read by :func:`crewlib.eval.human.read_annotations`).

Win/tie/loss shares of system_a with pair-clustered bootstrap CIs and sign tests
(:func:`win_tie_loss`), Fleiss' kappa among annotators (:func:`fleiss_kappa_by_dimension`), the
human majority per pair (:func:`human_majority`) and the LLM judge's agreement with it
(:func:`judge_agreement`). Preferences are relative to ``system_a``: "a", "b" or "tie".
"""

from __future__ import annotations

import inspect

import numpy as np
import pandas as pd
from scipy import stats

from crewlib.eval.human import DIMENSIONS, OUTCOMES

# --------------------------------------------------------------------------- win rates


def _check_annotations(annotations: pd.DataFrame) -> pd.DataFrame:
    missing = {"annotator", "pair_id", "dimension", "preference"} - set(annotations.columns)
    if missing:
        raise ValueError(f"annotations lack column(s) {sorted(missing)}; pass the result of read_annotations")
    bad = ~annotations["preference"].isin(OUTCOMES)
    if bad.any():
        got = sorted(map(str, annotations["preference"][bad].unique()))
        raise ValueError(f"preference must be one of {OUTCOMES}; got {got}")
    dup = annotations.duplicated(["annotator", "pair_id", "dimension"])
    if dup.any():
        raise ValueError(f"{int(dup.sum())} repeated (annotator, pair_id, dimension) judgement(s); keep one each")
    if annotations.empty:
        raise ValueError("annotations are empty")
    return annotations


def _dimensions(annotations: pd.DataFrame) -> list[str]:
    present = set(annotations["dimension"])
    return [d for d in DIMENSIONS if d in present] + sorted(present - set(DIMENSIONS))


def _bootstrap_rng_kwarg(seed: int) -> dict:
    # scipy >= 1.15 takes `rng`; older releases only `random_state`.
    name = "rng" if "rng" in inspect.signature(stats.bootstrap).parameters else "random_state"
    return {name: np.random.default_rng(seed)}


def _win_share(wins: np.ndarray, totals: np.ndarray, axis: int = -1) -> np.ndarray:
    # Ratio estimator over resampled pairs: pooled wins / pooled judgements.
    return wins.sum(axis=axis) / totals.sum(axis=axis)


def _win_share_ci(per_pair: pd.DataFrame, confidence: float, n_resamples: int, seed: int) -> tuple[float, float]:
    """Percentile bootstrap CI of the win share over pairs (columns ``sum`` wins and ``size`` judgements per pair);
    NaN with fewer than 2 pairs."""
    if len(per_pair) < 2:
        return np.nan, np.nan
    ci = stats.bootstrap(
        (per_pair["sum"].to_numpy(float), per_pair["size"].to_numpy(float)),
        _win_share,
        paired=True,  # resample pair indices, keeping each pair's wins and total together
        vectorized=True,
        n_resamples=n_resamples,
        confidence_level=confidence,
        method="percentile",
        **_bootstrap_rng_kwarg(seed),
    ).confidence_interval
    return float(ci.low), float(ci.high)


def win_tie_loss(
    annotations: pd.DataFrame, *, confidence: float = 0.95, n_resamples: int = 9999, seed: int = 0
) -> pd.DataFrame:
    """Win/tie/loss shares of system_a per dimension and overall, with CIs and a sign test.

    Args:
        annotations: tidy table from ``read_annotations`` (annotator, pair_id, dimension, preference).
        confidence: confidence level of the bootstrap interval (0.95 = 95 %).
        n_resamples: bootstrap resamples.
        seed: bootstrap seed (the same for every row, so each row is reproducible on its own).

    Returns:
        One row per dimension, then ``overall`` (all dimensions pooled), columns
        ``dimension, n, n_pairs, win, tie, loss, win_ci_low, win_ci_high, sign_test_p, sign_test_pairs_p,
        win_excl_ties``.
        ``n`` counts judgements (annotator x pair [x dimension]); win/tie/loss are shares of
        them in [0, 1]. The CI is a percentile bootstrap of the win share that resamples pairs
        (all judgements of a pair together, since annotators of one pair are not independent);
        NaN with fewer than 2 pairs. ``sign_test_p`` is the two-sided exact binomial test of wins
        vs losses with ties dropped (NaN without any non-tie); it treats judgements as
        independent, so for ``overall`` and for several annotators it is optimistic.
        ``sign_test_pairs_p`` is the same test over pairs, the unit that was sampled: a pair
        counts as a win when its judgements hold more wins than losses, a loss when fewer, and
        is dropped when they balance. ``win_excl_ties`` = wins / (wins + losses).
    """
    annotations = _check_annotations(annotations)
    rows = []
    groups = [(d, annotations[annotations["dimension"] == d]) for d in _dimensions(annotations)]
    for dimension, group in [*groups, ("overall", annotations)]:
        counts = group["preference"].value_counts()
        wins, losses, ties = (int(counts.get(o, 0)) for o in OUTCOMES)
        n = wins + ties + losses
        per_pair = group.assign(win=group["preference"] == "a").groupby("pair_id")["win"].agg(["sum", "size"])
        net = (group["preference"].map({"a": 1, "b": -1}).fillna(0).groupby(group["pair_id"]).sum())
        pair_wins, pair_decided = int((net > 0).sum()), int((net != 0).sum())
        ci_low, ci_high = _win_share_ci(per_pair, confidence, n_resamples, seed)
        decided = wins + losses
        rows.append({
            "dimension": dimension,
            "n": n,
            "n_pairs": len(per_pair),
            "win": wins / n,
            "tie": ties / n,
            "loss": losses / n,
            "win_ci_low": ci_low,
            "win_ci_high": ci_high,
            "sign_test_p": stats.binomtest(wins, decided, 0.5).pvalue if decided else np.nan,
            "sign_test_pairs_p": stats.binomtest(pair_wins, pair_decided, 0.5).pvalue if pair_decided else np.nan,
            "win_excl_ties": wins / decided if decided else np.nan,
        })
    return pd.DataFrame(rows)


# --------------------------------------------------------------------------- agreement


def fleiss_kappa_by_dimension(annotations: pd.DataFrame) -> pd.DataFrame:
    """Fleiss' kappa among annotators per dimension, over the categories a / b / tie.

    Args:
        annotations: tidy table from ``read_annotations``; needs at least 2 annotators.

    Returns:
        Columns ``dimension, n_pairs, n_annotators, kappa``. Only pairs rated by every annotator
        count. kappa is NaN when no such pair exists, or when every judgement falls in one
        category (chance agreement is then 1 and kappa is undefined).
    """
    from statsmodels.stats.inter_rater import aggregate_raters, fleiss_kappa

    annotations = _check_annotations(annotations)
    annotators = sorted(annotations["annotator"].unique())
    if len(annotators) < 2:
        raise ValueError(
            f"Fleiss' kappa needs at least 2 annotators; the annotations have {len(annotators)} ({annotators})"
        )
    code = {o: i for i, o in enumerate(OUTCOMES)}
    rows = []
    for dimension in _dimensions(annotations):
        group = annotations[annotations["dimension"] == dimension]
        wide = group.pivot(index="pair_id", columns="annotator", values="preference").reindex(columns=annotators)
        complete = wide.dropna()
        kappa = np.nan
        if len(complete):
            table, _ = aggregate_raters(complete.apply(lambda col: col.map(code)).to_numpy(int), n_cat=len(OUTCOMES))
            with np.errstate(invalid="ignore", divide="ignore"):  # one category only: 0/0 -> NaN
                kappa = float(fleiss_kappa(table, method="fleiss"))
        rows.append({"dimension": dimension, "n_pairs": len(complete), "n_annotators": len(annotators),
                     "kappa": kappa})
    return pd.DataFrame(rows)


def human_majority(annotations: pd.DataFrame) -> pd.DataFrame:
    """Majority preference over annotators per pair and dimension.

    Returns columns ``pair_id, example, dimension, preference``: the outcome chosen by more
    than half of the pair's annotators, else "tie".
    """
    annotations = _check_annotations(annotations)
    if "example" not in annotations.columns:
        raise ValueError("annotations lack the column 'example'; pass the result of read_annotations")
    counts = (annotations.groupby(["pair_id", "example", "dimension"])["preference"]
              .value_counts().unstack(fill_value=0).reindex(columns=list(OUTCOMES), fill_value=0))
    total = counts.sum(axis=1)
    top = counts.idxmax(axis=1)
    majority = top.where(counts.max(axis=1) * 2 > total, "tie")
    return majority.rename("preference").reset_index()


def _judge_score_table(judge_scores: pd.DataFrame, system_a: str, system_b: str) -> pd.DataFrame:
    """The judge's scores of the two systems, indexed by (example, metric), one column per system; a table that
    lacks a column or a system, or repeats a (system, example, metric), is a ValueError."""
    missing = {"system", "example", "metric", "value"} - set(judge_scores.columns)
    if missing:
        raise ValueError(f"judge_scores lack column(s) {sorted(missing)}; expected system, example, metric, value")
    for system in (system_a, system_b):
        if not (judge_scores["system"] == system).any():
            raise ValueError(f"system {system!r} has no rows in judge_scores")
    judged = judge_scores[judge_scores["system"].isin([system_a, system_b])
                          & judge_scores["metric"].isin([f"judge_{d}" for d in DIMENSIONS])].copy()
    judged["example"] = judged["example"].astype(str)
    dup = judged.duplicated(["system", "example", "metric"])
    if dup.any():
        raise ValueError(f"judge_scores have {int(dup.sum())} repeated (system, example, metric) row(s); "
                         "aggregate repeated judge runs first")
    return judged.pivot(index=["example", "metric"], columns="system", values="value")


def judge_agreement(
    annotations: pd.DataFrame, judge_scores: pd.DataFrame, *, system_a: str, system_b: str
) -> pd.DataFrame:
    """Agreement between the LLM judge and the human majority, per dimension.

    Args:
        annotations: tidy table from ``read_annotations`` made with the same ``system_a``.
        judge_scores: the evaluation suite's tidy scores, columns ``system, example, metric, value``
            with metrics ``judge_coverage``, ``judge_logic``, ``judge_relevance`` (1-5 scale).
        system_a, system_b: the compared systems; "a" in ``annotations`` is ``system_a``.

    Returns:
        Columns ``dimension, n, agreement, cohen_kappa, skipped``: n examples compared; agreement
        is the share where the judge's preference (a if system_a scores higher, b if lower, tie
        if equal) equals the human majority (see ``human_majority``); Cohen's kappa over the
        labels a / b / tie (NaN when undefined: no example, or both sides always give one same
        label); skipped counts annotated examples without a judge score for either system.
    """
    from sklearn.metrics import cohen_kappa_score

    recorded = annotations.attrs.get("system_a")
    if recorded is not None and recorded != system_a:
        raise ValueError(f"annotations were un-blinded with system_a={recorded!r}, not {system_a!r}")
    scores = _judge_score_table(judge_scores, system_a, system_b)
    majority = human_majority(annotations)
    rows = []
    for dimension in [d for d in DIMENSIONS if d in set(majority["dimension"])]:
        human = majority[majority["dimension"] == dimension]
        index = pd.MultiIndex.from_arrays([human["example"].astype(str), [f"judge_{dimension}"] * len(human)])
        pair = scores.reindex(index=index, columns=[system_a, system_b])
        ok = pair.notna().all(axis=1).to_numpy()
        diff = (pair[system_a] - pair[system_b]).to_numpy(float)[ok]
        judge = np.where(diff > 0, "a", np.where(diff < 0, "b", "tie"))
        people = human["preference"].to_numpy()[ok]
        n = int(ok.sum())
        kappa = np.nan
        # kappa is 0/0 when both raters use one same label throughout.
        if n and not (len(set(judge)) == 1 and set(judge) == set(people)):
            kappa = float(cohen_kappa_score(people, judge, labels=list(OUTCOMES)))
        rows.append({
            "dimension": dimension,
            "n": n,
            "agreement": float(np.mean(people == judge)) if n else np.nan,
            "cohen_kappa": kappa,
            "skipped": int((~ok).sum()),
        })
    return pd.DataFrame(rows)
