"""Figures files written by the notebooks (crewlib/experiments/results.py): the same numbers give the same bytes,
whatever order a sum was taken in."""

from __future__ import annotations

import pandas as pd

from crewlib.experiments.results import load, record, save_table


def test_a_sum_taken_in_another_order_writes_the_same_table(tmp_path):
    values = [69.66556666666666, 0.1, 0.2, 267.1534, 1e-9, 3.3333333333333335]
    forward, backward = sum(values), sum(reversed(values))
    assert forward != backward  # the float noise a replay in another order gives
    paths = [save_table(pd.DataFrame({"LLM s": [total], "n": [3]}), tmp_path / f"{i}.csv", index=False)
             for i, total in enumerate((forward, backward))]
    assert paths[0].read_bytes() == paths[1].read_bytes()
    assert paths[0].read_text().splitlines() == ["LLM s,n", f"{forward:.10g},3"]


def test_recorded_results_hold_rounded_floats_and_no_nan(tmp_path):
    path = record(tmp_path / "r.json", share=2 / 3, missing=float("nan"), table=pd.DataFrame({"x": [0.1 + 0.2]}))
    assert load(path) == {"share": 0.6666666667, "missing": None, "table": [{"x": 0.3}]}
