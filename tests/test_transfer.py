"""Notebook 06's experiment: the same systems with each backbone of transfer.backbones, one judge set for all."""

from __future__ import annotations

import pytest
from fakes import ScriptedOpenAIServer, Step
from quick_settings import ippo_config

from crewlib.config import as_dict, load_params
from crewlib.experiments.transfer import run_transfer

SECTION = "Prior work on summarisation metrics [R1] and pretraining [R2] shapes this paper."


def _params(tmp_path, servers: dict[str, ScriptedOpenAIServer]) -> dict:
    backbones = [{"name": name, "llm": {"provider": "openai", "base_url": s.base_url, "model": f"model-{name}",
                                        "api_key_env": ""}} for name, s in servers.items()]
    # scripted toy sections: the sentence repairs are tested on their own (test_section_guarantees.py)
    return load_params("quick", {"llm": {"cache_dir": str(tmp_path / "cache"), "max_retries": 0},
                                 "baselines": {"long_context": {"context_tokens": 4096}},
                                 "transfer": {"backbones": backbones, "systems": ["long_context"]},
                                 "output": {"repairs": []}})


def test_each_backbone_writes_through_its_own_endpoint_into_its_own_folder(tmp_path):
    with ScriptedOpenAIServer(default=Step(content=SECTION)) as a, ScriptedOpenAIServer(
            default=Step(content=SECTION)) as b:
        params = _params(tmp_path, {"small": a, "large": b})
        run = run_transfer(params, targets=2, metrics=["citation"], out_dir=tmp_path / "out")
        assert len(a.requests) == 2 and len(b.requests) == 2  # one long-context prompt per paper, per backbone
    assert run.models == {"small": "model-small", "large": "model-large"}
    assert set(run.generations.backbone) == {"small", "large"} and run.generations.text.notna().all()
    assert list((tmp_path / "out" / "small").glob("settings-*/generations.jsonl"))
    table = run.table()
    assert table.loc[("small", "long_context"), "drafts"] == "2/2"
    assert table.loc[("large", "long_context"), "Overall"] == "unavailable"  # the judge group was not run
    paper_rows = run.crew_minus().loc["LLaMA 8B (paper)"]
    assert paper_rows["crew − long_context"] == pytest.approx(0.53)


def test_two_backbones_that_resolve_to_one_model_are_refused(tmp_path, monkeypatch):
    with ScriptedOpenAIServer(default=Step(content=SECTION)) as a, ScriptedOpenAIServer(
            default=Step(content=SECTION)) as b:
        params = _params(tmp_path, {"small": a, "large": b})
        monkeypatch.setenv("CREW_LLM_MODEL", "one-model")  # overrides every backbone's block
        with pytest.raises(ValueError, match="both resolve to model 'one-model'.*CREW_LLM_MODEL"):
            run_transfer(params, targets=1, metrics=["citation"], out_dir=tmp_path / "out")


def test_an_unknown_backbone_is_named():
    with pytest.raises(KeyError, match="unknown backbones \\['gpt-9'\\]"):
        run_transfer(load_params("quick"), backbones=["gpt-9"], out_dir="unused")


def test_the_shipped_controller_is_trained_further_with_the_llm_executor_and_shipped(tmp_path):
    import torch

    from crewlib.rl.controller import controller_path, read_checkpoint

    with ScriptedOpenAIServer(default=Step(content='{"notes": ["A finding."], "confidence": 0.9}')) as server:
        params = _params(tmp_path, {"scripted": server})
        settings = as_dict(params)
        params = load_params("quick", {**{k: v for k, v in settings.items() if k in ("llm", "baselines")},
                                       "transfer": {**settings["transfer"], "llm_training": {
                                           "backbone": "scripted", "updates": 1, "rounds": 2,
                                           "checkpoint": str(tmp_path / "shipped" / "llm.pt")}},
                                       "ippo": {"episodes_per_update": 2}})
        from crewlib.experiments.transfer import train_with_llm

        shipped = train_with_llm(params, out_dir=tmp_path / "train")
        assert server.requests  # the executor asked the backbone
    trained, start = read_checkpoint(shipped), read_checkpoint(controller_path(params))
    assert trained["updates"] == 1
    assert any(not torch.equal(trained["model"][k], start["model"][k]) for k in start["model"])  # it moved from there


def test_a_reproduced_llm_training_is_told_apart_from_a_changed_one(tmp_path):
    import torch

    from crewlib.experiments.transfer import _reproduced
    from crewlib.rl.controller import build_network, save_checkpoint

    cfg = ippo_config()
    torch.manual_seed(0)
    net = build_network(cfg, 3)
    save_checkpoint(tmp_path / "a.pt", net, cfg, 3)
    save_checkpoint(tmp_path / "b.pt", net, cfg, 3, state={"updates": 2})  # other bookkeeping, same weights
    assert _reproduced(tmp_path / "a.pt", tmp_path / "b.pt") and not _reproduced(tmp_path / "a.pt",
                                                                                      tmp_path / "none.pt")
    with torch.no_grad():
        next(net.parameters()).add_(1e-3)
    save_checkpoint(tmp_path / "c.pt", net, cfg, 3)
    assert not _reproduced(tmp_path / "a.pt", tmp_path / "c.pt")
