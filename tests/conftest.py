from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent))  # tests/fakes.py

from fakes import ScriptedOpenAIServer  # noqa: E402

from crewlib.llm import LLMClient, ResponseCache  # noqa: E402
from crewlib.llm.settings import cache_path, llm_config  # noqa: E402
from crewlib.schema import EmbeddedBlock  # noqa: E402

TEST_MODEL = os.environ.get("CREW_EMBEDDED_MODEL", "qwen2.5-coder-0.5b")


@pytest.fixture
def scripted_server():
    with ScriptedOpenAIServer() as server:
        yield server


@pytest.fixture
def make_client(tmp_path):
    """Build a client against a scripted server, with a private cache and no real sleeping."""
    sleeps: list[float] = []

    def factory(server, *, cache_mode="read_write", **overrides) -> LLMClient:
        settings = {"api_key_env": "", "max_retries": 3, "timeout_s": 5.0, "model": "scripted-model", **overrides}
        cfg = llm_config(provider="openai", base_url=server.base_url,
                         cache_mode=cache_mode, cache_dir=str(tmp_path / "cache"), **settings)
        client = LLMClient(cfg, cache=ResponseCache(cache_path(cfg), cache_mode), sleep=sleeps.append)
        client.sleeps = sleeps
        return client

    return factory


@pytest.fixture(scope="session")
def embedded_config() -> EmbeddedBlock:
    return llm_config(embedded={"model": TEST_MODEL, "n_ctx_per_slot": 2048, "n_parallel": 4, "n_threads": 2}).embedded


@pytest.fixture(scope="session")
def embedded_server(embedded_config):
    """The real embedded model (0.5B in CI), one server for the whole test session."""
    if os.environ.get("CREW_SKIP_LLM_TESTS") == "1":
        pytest.skip("CREW_SKIP_LLM_TESTS=1")
    from crewlib.llm.local import LocalServer

    with LocalServer(embedded_config) as server:
        yield server
