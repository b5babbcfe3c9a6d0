"""Typed settings of the LLM layer, read from the ``llm`` block of a params file.

Environment overrides (so one params file serves every endpoint):

==========================  =============================================================
``CREW_LLM_PROVIDER``       ``embedded`` (the project's local Qwen server) or ``openai``
                            (any OpenAI-compatible endpoint: OpenRouter, vLLM, Ollama ...)
``CREW_LLM_BASE_URL``       endpoint URL; setting it implies ``provider=openai``
``CREW_LLM_MODEL``          model name at that endpoint
``CREW_LLM_API_KEY_ENV``    *name* of the variable that holds the key (never the key)
``CREW_LLM_CACHE_MODE``     ``off`` / ``read_write`` / ``replay``
``CREW_LLM_CACHE_DIR``      where cached answers live
``CREW_EMBEDDED_MODEL``     registry name of the embedded model (tests use the 0.5B)
==========================  =============================================================
"""

from __future__ import annotations

import dataclasses
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from crewlib.config import ParamsError, resolve_path

CacheMode = Literal["off", "read_write", "replay"]
CACHE_MODES = ("off", "read_write", "replay")


@dataclass(frozen=True)
class EmbeddedConfig:
    """The local llama.cpp server (DESIGN.md §8)."""

    model: str = "qwen2.5-coder-1.5b"
    n_ctx_per_slot: int = 4096  # llama.cpp splits n_ctx across slots; this is each slot's share
    n_parallel: int = 4  # concurrent request slots (continuous batching)
    n_threads: int = 2  # CPU threads for generation
    startup_timeout_s: float = 180.0


@dataclass(frozen=True)
class LLMConfig:
    """Where and how to call an LLM. The API key is read from ``api_key_env`` at call time."""

    provider: Literal["embedded", "openai"] = "embedded"
    base_url: str | None = None
    model: str | None = None
    api_key_env: str = "OPENAI_API_KEY"
    temperature: float = 0.2
    top_p: float = 1.0
    max_tokens: int = 512
    frequency_penalty: float = 0.0  # small local models loop on lists without a little
    seed: int | None = 0
    timeout_s: float = 120.0
    concurrency: int = 4
    max_retries: int = 4
    backoff_base_s: float = 1.0
    backoff_max_s: float = 30.0
    json_mode: bool = True
    cache_mode: CacheMode = "read_write"
    cache_dir: str = "llm_cache"
    embedded: EmbeddedConfig = field(default_factory=EmbeddedConfig)

    def __post_init__(self) -> None:
        if self.provider not in ("embedded", "openai"):
            raise ParamsError(f"llm.provider must be 'embedded' or 'openai', not {self.provider!r}")
        if self.cache_mode not in CACHE_MODES:
            raise ParamsError(f"llm.cache_mode must be one of {CACHE_MODES}, not {self.cache_mode!r}")
        if self.provider == "openai" and not (self.base_url and self.model):
            raise ParamsError(
                "llm.provider 'openai' needs llm.base_url and llm.model "
                "(or CREW_LLM_BASE_URL and CREW_LLM_MODEL)"
            )
        if self.concurrency < 1 or self.max_retries < 0:
            raise ParamsError("llm.concurrency must be >= 1 and llm.max_retries >= 0")

    @property
    def cache_path(self) -> Path:
        return resolve_path(self.cache_dir)

    @classmethod
    def from_params(cls, params: dict[str, Any] | None = None, env: dict[str, str] | None = None) -> LLMConfig:
        """Build from ``params['llm']`` and the environment overrides listed in the module doc."""
        env = os.environ if env is None else env
        block = dict((params or {}).get("llm", {}))
        embedded = dict(block.pop("embedded", {}) or {})
        known = {f.name for f in dataclasses.fields(cls)}
        unknown = set(block) - known
        if unknown:
            raise ParamsError(f"unknown llm settings: {sorted(unknown)}; known: {sorted(known)}")
        if env.get("CREW_LLM_BASE_URL"):
            block["provider"] = "openai"
            block["base_url"] = env["CREW_LLM_BASE_URL"]
        for var, key in [
            ("CREW_LLM_PROVIDER", "provider"),
            ("CREW_LLM_MODEL", "model"),
            ("CREW_LLM_API_KEY_ENV", "api_key_env"),
            ("CREW_LLM_CACHE_MODE", "cache_mode"),
            ("CREW_LLM_CACHE_DIR", "cache_dir"),
        ]:
            if env.get(var):
                block[key] = env[var]
        if env.get("CREW_EMBEDDED_MODEL"):
            embedded["model"] = env["CREW_EMBEDDED_MODEL"]
        return cls(**block, embedded=EmbeddedConfig(**embedded))
