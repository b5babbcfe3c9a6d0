"""Tidy results tables: per system, the mean and a bootstrap 95% CI of each metric, cost, and what is missing.

``metric_summary(scores)`` is the long table (``system, metric, n, mean, ci_low, ci_high``) a
results JSON stores and a test reads; ``results_table`` is the wide table a notebook shows,
one row per system with ``mean [low, high]`` cells, the cost columns of the generations and the
counts of unavailable metrics and missing judgements; ``beside_paper`` adds the paper's number
of each cell it reports.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np
import pandas as pd

# "LLM s": the calls' seconds when their answers were produced (a replayed run shows the recording's), summed. This
# run's own wall time is not a result (a replay takes none of the model's time) and is not shown: a table must read
# the same on every rerun.
COST_COLUMNS = {"prompt_tokens": "tokens in", "completion_tokens": "tokens out", "calls": "LLM calls",
                "llm_s": "LLM s"}


def bootstrap_ci(values: Sequence[float], *, confidence: float = 0.95, n_resamples: int = 2000,
                 seed: int = 0) -> tuple[float, float]:
    """Percentile bootstrap CI of the mean (resampling examples); NaN for fewer than two values."""
    x = np.asarray([v for v in values if pd.notna(v)], dtype=float)
    if len(x) < 2:
        return float("nan"), float("nan")
    if np.all(x == x[0]):
        return float(x[0]), float(x[0])
    rng = np.random.default_rng(seed)
    means = x[rng.integers(0, len(x), size=(n_resamples, len(x)))].mean(axis=1)
    tail = (1 - confidence) / 2 * 100
    low, high = np.percentile(means, [tail, 100 - tail])
    return float(low), float(high)


def metric_summary(scores: pd.DataFrame, *, by: str = "system", seed: int = 0) -> pd.DataFrame:
    """``<by>, metric, n, mean, ci_low, ci_high`` over the rows scored (95% percentile bootstrap).

    ``scores``: long, with columns ``by``, ``metric`` and ``value`` (NaN values are left out).
    """
    rows = []
    for (key, metric), part in scores.groupby([by, "metric"], sort=False):
        values = part["value"].dropna().to_numpy(dtype=float)
        low, high = bootstrap_ci(values, seed=seed)
        rows.append({by: key, "metric": metric, "n": len(values),
                     "mean": float(values.mean()) if len(values) else float("nan"), "ci_low": low, "ci_high": high})
    return pd.DataFrame(rows, columns=[by, "metric", "n", "mean", "ci_low", "ci_high"])


def counts(scores: pd.DataFrame, key: str) -> pd.Series:
    """Per system, how many entries ``scores.attrs[key]`` lists (``unavailable`` or ``missing``)."""
    entries = scores.attrs.get(key) or []
    return pd.Series([e["system"] for e in entries], dtype=object).value_counts()


def results_table(scores: pd.DataFrame, generations: pd.DataFrame, metrics: Mapping[str, str], *,
                  systems: Sequence[str] | None = None, digits: int = 2, seed: int = 0) -> pd.DataFrame:
    """One row per system: ``mean [ci_low, ci_high]`` per metric (``metrics``: name → column label).

    ``generations``: the run's table (``system, text`` and cost columns); cost columns are means
    over the examples that have a text; ``drafts`` counts them. A metric with no value for a
    system shows "unavailable"; ``unavailable`` and ``missing judgements`` count what the
    evaluator could not compute or the judges did not answer.
    """
    summary = metric_summary(scores, seed=seed).set_index(["system", "metric"])
    systems = list(systems or dict.fromkeys(generations["system"]))
    written = generations[generations["text"].fillna("").astype(str).str.strip().astype(bool)]
    rows = []
    for system in systems:
        row: dict = {"system": system, "drafts": f"{int((written.system == system).sum())}/"
                                                  f"{int((generations.system == system).sum())}"}
        for metric, label in metrics.items():
            row[label] = ci_cell(summary, system, metric, digits)
        mine = written[written.system == system]
        for column, label in COST_COLUMNS.items():
            row[label] = round(float(mine[column].mean()), 1) if len(mine) and column in mine else float("nan")
        rows.append(row)
    table = pd.DataFrame(rows).set_index("system")
    table["unavailable"] = counts(scores, "unavailable").reindex(table.index, fill_value=0).astype(int)
    table["missing judgements"] = counts(scores, "missing").reindex(table.index, fill_value=0).astype(int)
    return table


def ci_cell(summary: pd.DataFrame, system: str, metric: str, digits: int) -> str:
    """``mean [ci_low, ci_high]`` of one (row, metric) of an indexed summary; "unavailable" when absent."""
    if (system, metric) not in summary.index:
        return "unavailable"
    s = summary.loc[(system, metric)]
    if pd.isna(s["ci_low"]):
        return f"{s['mean']:.{digits}f} (n={int(s['n'])})"
    return f"{s['mean']:.{digits}f} [{s['ci_low']:.{digits}f}, {s['ci_high']:.{digits}f}]"


def beside_paper(table: pd.DataFrame, paper: Mapping[tuple[str, str], float], *, digits: int = 2,
                 percent: Sequence[str] = ()) -> pd.DataFrame:
    """``table`` with a "<label> (paper)" column after each column the paper reports for some system.

    ``paper``: (system, column label) → the paper's number; "—" where it reports none.
    ``percent``: labels whose paper numbers are shares, shown as percentages.
    """
    out = table.copy()
    labelled = list(dict.fromkeys(label for _, label in paper))
    for label in labelled:
        if label not in out.columns:
            raise KeyError(f"the paper reports {label!r}, which the table has no column for: {list(out.columns)}")
        values = []
        for system in out.index:
            v = paper.get((system, label))
            values.append("—" if v is None else (f"{v:.{digits}%}" if label in percent else f"{v:.{digits}f}"))
        out.insert(out.columns.get_loc(label) + 1, f"{label} (paper)", values)
    return out
