"""The main job on the real embedded model (0.5B in CI), and its bad-input paths."""

from __future__ import annotations

import json

import pytest

from crewlib.config import load_params
from crewlib.demo import ExampleError, load_example, main, run_demo


def test_bundled_example_is_well_formed():
    paper = load_example("example_paper")
    assert len(paper["references"]) >= 8
    assert len({r["id"] for r in paper["references"]}) == len(paper["references"])


@pytest.mark.parametrize("broken,message", [
    ({"title": "t", "abstract": "a", "references": [{"id": "x", "title": "y"}]}, "'id'"),
    ({"id": "p", "title": "t", "abstract": "", "references": [{"id": "x", "title": "y"}]}, "'abstract'"),
    ({"id": "p", "title": "t", "abstract": "a", "references": []}, "'references'"),
    ({"id": "p", "title": "t", "abstract": "a", "references": [{"title": "y"}]}, "reference #0"),
])
def test_malformed_examples_are_refused_with_the_field(tmp_path, broken, message):
    path = tmp_path / "paper.json"
    path.write_text(json.dumps(broken))
    with pytest.raises(ExampleError, match=message):
        load_example(str(path))


def test_cli_reports_a_bad_example_without_a_traceback(capsys, tmp_path):
    assert main(["--example", str(tmp_path / "missing.json")]) == 1
    assert "not found" in capsys.readouterr().err


@pytest.mark.llm
def test_demo_writes_a_paragraph_with_tokens_and_time(tmp_path, monkeypatch, embedded_config):
    monkeypatch.setenv("CREW_EMBEDDED_MODEL", embedded_config.model)
    params = load_params("quick", {"llm": {"cache_dir": str(tmp_path / "cache")}})
    demo = run_demo(params, output_dir=tmp_path / "out")
    assert len(demo.paragraph.split()) > 20
    assert demo.prompt_tokens > 500 and demo.completion_tokens > 0 and demo.wall_time_s > 0
    assert demo.citations.resolved <= demo.citations.markers
    summary = json.loads((tmp_path / "out" / "summary.json").read_text())
    assert summary["completion_tokens"] == demo.completion_tokens
    assert demo.paragraph in (tmp_path / "out" / "related_work.md").read_text()
    # A rerun is answered from the cache: same text, nothing billed.
    again = run_demo(params, output_dir=tmp_path / "out2")
    assert again.cache_hit and again.paragraph == demo.paragraph
