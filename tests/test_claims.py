"""The README's and docs/results.md's numbers checked against figures/ (crewlib/experiments/claims.py, issue 49)."""

from __future__ import annotations

import re

from crewlib.config import PROJECT_ROOT
from crewlib.experiments.claims import check, main

MARK = "<!--f:08_llm_ablations.csv:w/o Critique:Overall-->"


def test_every_marked_number_of_the_readme_and_the_results_is_the_figures():
    mismatches, checked = check()
    assert not mismatches, "\n".join(map(str, mismatches))
    assert checked >= 100


def test_a_number_changed_in_the_results_is_found(tmp_path):
    results = (PROJECT_ROOT / "docs" / "results.md").read_text()  # the notebooks' results, moved from the README
    assert f"3.87{MARK}" in results  # the stale "w/o Critique 3.80" of issue 49, now checked
    changed = tmp_path / "results.md"
    changed.write_text(results.replace(f"3.87{MARK}", f"3.80{MARK}"))
    (mismatch,), _ = check([changed])
    assert mismatch.shown == "3.80" and "w/o Critique" in mismatch.source and mismatch.value.startswith("3.87")
    row = "| crew | 5/5 | 4.80 [4.40, 5.00] |"
    assert row in results
    changed.write_text(results.replace(row, "| crew | 5/5 | 4.70 [4.40, 5.00] |"))  # a cell of a marked table
    (mismatch,), _ = check([changed])
    assert mismatch.shown.startswith("4.70 (crew, Coverage)") and main([str(changed)]) == 1


def test_a_value_the_figure_file_rounded_allows_either_rounding_of_it(tmp_path):
    (tmp_path / "t.csv").write_text("system,score\nhera,0.395\n")
    for shown, ok in (("0.39", True), ("0.40", True), ("0.38", False), ("0.395", True), ("0.396", False)):
        (tmp_path / "doc.md").write_text(f"HERA {shown}<!--f:t.csv:hera:score--> ROUGE-1.\n")
        assert (not check([tmp_path / "doc.md"], figures=tmp_path)[0]) is ok, shown


def test_figures_readme_names_exactly_the_files_the_notebooks_write():
    figures = PROJECT_ROOT / "figures"
    named = set(re.findall(r"`(\d\d_[^`]+)`", (figures / "README.md").read_text()))
    present = {p.name for p in figures.iterdir() if p.name != "README.md"}
    assert named == present, {"named, not there": sorted(named - present), "there, not named": sorted(present - named)}
