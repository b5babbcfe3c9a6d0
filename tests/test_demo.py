"""The main job: a CREW episode on a bundled target with the real embedded model (0.5B in CI)."""

from __future__ import annotations

import json

import pytest

from crewlib.config import load_params
from crewlib.demo import demo_target, main, run_demo


def test_demo_target_is_an_evaluation_target():
    params = load_params("quick")
    (first, task), (second, _) = demo_target(params, 0), demo_target(params, 1)
    assert first.target_id != second.target_id and first.gold_related_work
    assert task.target_id == first.target_id and len(task.references) <= len(first.references)


def test_cli_reports_bad_input_without_a_traceback(capsys, tmp_path):
    bad = tmp_path / "bad.yaml"
    bad.write_text("base: quick\ndata: {source: local}\n")
    assert main(["--params", str(bad)]) == 1
    assert "oarelatedwork_path is not set" in capsys.readouterr().err


@pytest.mark.llm
def test_demo_runs_crew_and_writes_draft_trace_and_costs(tmp_path, monkeypatch, embedded_config):
    monkeypatch.setenv("CREW_EMBEDDED_MODEL", embedded_config.model)
    params = load_params("quick", {"llm": {"cache_dir": str(tmp_path / "cache")}})
    demo = run_demo(params, rounds=2, output_dir=tmp_path / "out")
    s = demo.summary
    # Two rounds of 3 agents: at most 6 calls; an action that needs no model (a paper a teammate read, notes
    # shared as they are, a masked action) makes none.
    assert s["rounds"] == 2 and 3 <= s["calls"] <= 6 and s["prompt_tokens"] > 0 and s["wall_time_s"] > 0
    assert len(demo.trace.rounds) == 2 and demo.trace.rounds[0]["actions"]["agent_0"] == 0  # read first
    for name in ("related_work.md", "trace.json", "summary.json", "ledger.csv"):
        assert (tmp_path / "out" / name).exists()
    assert json.loads((tmp_path / "out" / "summary.json").read_text())["calls"] == s["calls"]
    # A rerun is answered from the cache: the same trace, nothing billed.
    again = run_demo(params, rounds=2, output_dir=tmp_path / "out2")
    assert again.summary["billed_tokens"] == 0 and again.trace.final_draft == demo.trace.final_draft
