"""Params files and the environment overrides of the LLM settings."""

from __future__ import annotations

import pytest

from crewlib.config import PROJECT_ROOT, ParamsError, default_params, load_params
from crewlib.llm.settings import cache_path, llm_config, llm_settings


def test_quick_and_full_load_and_full_extends_quick():
    quick, full = load_params("quick"), load_params("full")
    assert quick.llm.embedded.model == "qwen2.5-coder-1.5b"
    assert full.llm.embedded == quick.llm.embedded  # inherited
    assert full.llm.max_tokens > quick.llm.max_tokens  # overridden
    assert llm_settings(quick, env={}).provider == "embedded"


def test_overrides_and_errors(tmp_path):
    assert load_params("quick", {"llm": {"temperature": 0.9}}).llm.temperature == 0.9
    with pytest.raises(ParamsError, match="known modes"):
        load_params("no-such-mode")
    bad = tmp_path / "bad.yaml"
    bad.write_text("llm: [unclosed")
    with pytest.raises(ParamsError, match="not valid YAML"):
        load_params(bad)
    with pytest.raises(ParamsError, match="temprature: unknown setting"):
        load_params("quick", {"llm": {"temprature": 0.1}})
    with pytest.raises(ParamsError, match="temprature: unknown setting"):
        llm_config(temprature=0.1)


def test_environment_points_the_client_at_another_endpoint():
    env = {"CREW_LLM_BASE_URL": "https://openrouter.ai/api/v1", "CREW_LLM_MODEL": "openai/gpt-4o",
           "CREW_LLM_API_KEY_ENV": "OPENROUTER_API_KEY", "CREW_LLM_CACHE_MODE": "replay"}
    cfg = llm_settings(load_params("quick"), env=env)
    assert (cfg.provider, cfg.base_url, cfg.model, cfg.api_key_env, cfg.cache_mode) == (
        "openai", "https://openrouter.ai/api/v1", "openai/gpt-4o", "OPENROUTER_API_KEY", "replay")
    assert llm_settings(default_params(), env={"CREW_EMBEDDED_MODEL": "qwen2.5-coder-0.5b"}).embedded.model == \
        "qwen2.5-coder-0.5b"


def test_an_empty_api_key_env_variable_means_a_server_without_a_key():
    """The README's vLLM / Ollama lines export CREW_LLM_API_KEY_ENV= (set, empty)."""
    env = {"CREW_LLM_BASE_URL": "http://127.0.0.1:8000/v1", "CREW_LLM_MODEL": "m", "CREW_LLM_API_KEY_ENV": ""}
    assert llm_settings(load_params("quick"), env=env).api_key_env == ""
    assert llm_settings(load_params("quick"), env={}).api_key_env == "OPENAI_API_KEY"


def test_invalid_settings_are_refused():
    with pytest.raises(ParamsError, match="needs llm.base_url"):
        llm_config(provider="openai")
    with pytest.raises(ParamsError, match="cache_mode"):
        llm_config(cache_mode="sometimes")


def test_relative_cache_dir_is_under_the_project():
    assert cache_path(llm_config(cache_dir="llm_cache")) == PROJECT_ROOT / "llm_cache"


def test_a_notebook_in_full_mode_writes_apart_from_what_ships(tmp_path):
    from crewlib.config import PROJECT_ROOT, notebook_out, notebook_setup

    quick, figures = notebook_setup("quick", embedded_model="qwen2.5-coder-0.5b")
    assert figures == PROJECT_ROOT / "figures" and quick.llm.cache_dir == "notebooks/llm_cache"
    assert quick.llm.embedded.model == "qwen2.5-coder-0.5b"
    full, figures = notebook_setup("full", figures_dir=str(tmp_path / "figs"))  # the folder is created
    assert figures == tmp_path / "figs" and figures.is_dir()
    assert full.llm.cache_dir == "outputs/full/llm_cache"
    assert notebook_out(full, "05_main_results") == PROJECT_ROOT / "outputs/full/05_main_results"
    shipped = ("figures", "notebooks/llm_cache", "checkpoints")  # nothing a full run writes lands in these
    written = [full.notebooks.figures_dir, full.notebooks.llm_cache_dir, full.notebooks.out_dir,
               full.training.out_dir, full.transfer.out_dir, full.transfer.llm_training.checkpoint,
               full.multinews.out_dir, full.ablations.out_dir, full.ablations.llm.out_dir,
               full.sq2e.out_dir, full.features.cache_dir]
    assert all(f"{w}/".startswith("outputs/full/") and not w.startswith(shipped) for w in written), written
    assert full.llm.model == "qwen/qwen-2.5-72b-instruct"  # the paper's writer
