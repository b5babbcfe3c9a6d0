"""The Ray backend gives the local backend's generations, tables and cache (local Ray, a scripted endpoint)."""

from __future__ import annotations

import json

import pytest
from fakes import ScriptedOpenAIServer, Step

from crewlib.config import load_params
from crewlib.data.records import Reference, RWGExample
from crewlib.experiments import read_generations, results_table, run_generations, score
from crewlib.experiments.run import settings_folder
from crewlib.llm import connect

ray = pytest.importorskip("ray")
SECTION = "Graph attention is studied [R1] and its variants extend it [R2].\n\nLater work compares them [R3]."


def _examples() -> list[RWGExample]:
    refs = tuple(Reference(f"p{i}", f"Paper {i} on graphs", f"Paper {i} studies graph attention variant {i}. " * 3)
                 for i in range(4))
    return [RWGExample(t, f"Graph attention {t}", f"We study attention on graphs ({t}).", refs,
                       gold_related_work="Graph attention [R1]. Variants [R2].", gold_cited_ids=("p0", "p1"))
            for t in ("a", "b", "c")]


def _params(server, cache, backend):
    return load_params("quick", {
        "llm": {"provider": "openai", "base_url": server.base_url, "model": "scripted", "api_key_env": "",
                "cache_dir": str(cache), "max_retries": 0},
        "experiments": {"backend": backend, "ray_num_cpus": 2},
        "baselines": {"long_context": {"context_tokens": 4096}}})


def _rounded(value, digits: int = 9):
    """Floats rounded: a Ray worker runs numpy on one BLAS thread (OMP_NUM_THREADS=1), this process on all,
    so a sum can differ in its last bits (the extractive system's team return)."""
    if isinstance(value, float):
        return round(value, digits)
    if isinstance(value, dict):
        return {k: _rounded(v, digits) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_rounded(v, digits) for v in value]
    return value


def _comparable(generations):
    frame = generations.frame().drop(columns=["wall_s", "llm_s"])
    return frame.map(_rounded)


def _cache_entries(folder) -> dict[str, str]:
    return {p.name: json.loads(p.read_text())["response"]["content"] for p in folder.rglob("*.json")}


def test_ray_backend_matches_the_local_backend(tmp_path):
    systems, examples = ["long_context", "extractive"], _examples()
    with ScriptedOpenAIServer(default=Step(content=SECTION)) as server:
        local_params = _params(server, tmp_path / "cache_local", "local")
        local = run_generations(systems, examples, local_params, connect(local_params), out_dir=tmp_path / "local",
                                progress=False)
        asked_locally = len(server.requests)
        ray_params = _params(server, tmp_path / "cache_ray", "ray")
        try:
            remote = run_generations(systems, examples, ray_params, None, out_dir=tmp_path / "ray", progress=False)
        finally:
            ray.shutdown()
        assert len(server.requests) == 2 * asked_locally == 6  # one call per long-context section, from the workers
    ours, theirs = _comparable(local), _comparable(remote)
    differing = [c for c in ours.columns if not ours[c].equals(theirs[c])]
    assert not differing, {c: (ours[c].tolist(), theirs[c].tolist()) for c in differing}
    assert set(read_generations(settings_folder(tmp_path / "local", local_params) / "generations.jsonl")) == set(
        read_generations(settings_folder(tmp_path / "ray", ray_params) / "generations.jsonl"))
    assert _cache_entries(tmp_path / "cache_local") == _cache_entries(tmp_path / "cache_ray")  # same keys, answers
    labels = {"citation_verification": "CV", "citation_recall": "recall"}
    tables = [results_table(score(g, examples, local_params, metrics=["citation"]), g.frame(), labels)
              .drop(columns=["LLM s"]) for g in (local, remote)]
    assert tables[0].equals(tables[1])
    assert tables[0].loc["long_context", "drafts"] == "3/3"


def test_a_rerun_on_ray_resumes_and_sends_no_task(tmp_path, monkeypatch):
    examples = _examples()[:1]
    params = load_params("quick", {"experiments": {"backend": "ray", "ray_num_cpus": 1}})
    first = run_generations(["extractive"], examples, params, out_dir=tmp_path, backend="local", progress=False)
    monkeypatch.setattr(ray, "init", lambda *a, **k: pytest.fail("a finished run must not start Ray"))
    again = run_generations(["extractive"], examples, params, out_dir=tmp_path, progress=False)
    assert [g.text for g in again] == [g.text for g in first]
