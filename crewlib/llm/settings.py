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
``CREW_EMBEDDED_RUNTIME``   ``auto`` / ``native`` / ``prebuilt`` (llama.cpp built here or the wheel)
``CREW_LLM_FAULTS``         inject failures into live calls: ``RATE`` or ``RATE:SEED``
                            (e.g. ``0.05:1``), as ``llm.faults`` does
==========================  =============================================================
"""

from __future__ import annotations

import dataclasses
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from crewlib.config import ParamsError, from_quick, resolve_path

CacheMode = Literal["off", "read_write", "replay"]
CACHE_MODES = ("off", "read_write", "replay")


def user_cache_dir(name: str, override_env: str) -> Path:
    """``$<override_env>``, else ``$XDG_CACHE_HOME/crewlib/<name>`` (default ``~/.cache``): the
    embedded model files and the native llama.cpp build live there, outside the repository."""
    if os.environ.get(override_env):
        return Path(os.environ[override_env]).expanduser()
    return Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "crewlib" / name


@dataclass(frozen=True)
class EmbeddedConfig:
    """The local llama.cpp server (docs/method.md, "LLM and offline defaults"); defaults: ``params/quick.yaml``."""

    model: str = from_quick("llm.embedded.model")
    n_ctx_per_slot: int = from_quick("llm.embedded.n_ctx_per_slot")  # llama.cpp splits n_ctx across slots
    n_parallel: int = from_quick("llm.embedded.n_parallel")  # concurrent request slots (continuous batching)
    n_threads: int = from_quick("llm.embedded.n_threads")  # CPU threads for generation
    startup_timeout_s: float = from_quick("llm.embedded.startup_timeout_s")
    runtime: str = from_quick("llm.embedded.runtime")  # auto | native | prebuilt (crewlib.llm.native)


@dataclass(frozen=True)
class FaultsConfig:
    """Seeded injected failures in front of the endpoint (the paper's API-failure experiment)."""

    rate: float = from_quick("llm.faults.rate")
    seed: int = from_quick("llm.faults.seed")


def parse_faults(value: str) -> dict[str, Any]:
    """``"0.05"`` or ``"0.05:1"`` (rate, seed) → the ``llm.faults`` block."""
    rate, _, seed = value.partition(":")
    try:
        block = {"rate": float(rate), **({"seed": int(seed)} if seed else {})}
    except ValueError:
        raise ParamsError(f"CREW_LLM_FAULTS must be RATE or RATE:SEED (e.g. 0.05:1), not {value!r}") from None
    if not 0.0 <= block["rate"] <= 1.0:
        raise ParamsError(f"CREW_LLM_FAULTS rate must be in [0, 1], not {block['rate']}")
    return block


@dataclass(frozen=True)
class LLMConfig:
    """Where and how to call an LLM (defaults: ``params/quick.yaml``); the key is read from ``api_key_env``."""

    provider: Literal["embedded", "openai"] = from_quick("llm.provider")
    base_url: str | None = from_quick("llm.base_url")
    model: str | None = from_quick("llm.model")
    api_key_env: str = from_quick("llm.api_key_env")
    temperature: float = from_quick("llm.temperature")
    top_p: float = from_quick("llm.top_p")
    max_tokens: int = from_quick("llm.max_tokens")
    frequency_penalty: float = from_quick("llm.frequency_penalty")
    seed: int | None = from_quick("llm.seed")
    timeout_s: float = from_quick("llm.timeout_s")
    deadline_s: float = from_quick("llm.deadline_s")  # one call, all its attempts and waits together
    concurrency: int = from_quick("llm.concurrency")
    max_retries: int = from_quick("llm.max_retries")
    backoff_base_s: float = from_quick("llm.backoff_base_s")
    backoff_max_s: float = from_quick("llm.backoff_max_s")
    retry_after_max_s: float = from_quick("llm.retry_after_max_s")  # cap on a 429's Retry-After
    json_mode: bool = from_quick("llm.json_mode")
    structured_output: str = from_quick("llm.structured_output")  # json_schema | json_object
    reask_cut: bool = from_quick("llm.reask_cut")  # an answer cut at max_tokens is re-asked for a shorter one
    reasks: int = from_quick("llm.reasks")  # re-asks of an invalid or cut JSON answer before it is a fallback
    cache_mode: CacheMode = from_quick("llm.cache_mode")
    cache_dir: str = from_quick("llm.cache_dir")
    task_wording: str = from_quick("llm.task_wording")  # a key of crewlib.prompts.WORDINGS: the task prompts describe
    embedded: EmbeddedConfig = field(default_factory=EmbeddedConfig)
    faults: FaultsConfig = field(default_factory=FaultsConfig)

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
        from crewlib.prompts import WORDINGS

        if self.task_wording not in WORDINGS:
            raise ParamsError(f"llm.task_wording must be one of {sorted(WORDINGS)}, not {self.task_wording!r}")
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
        faults = dict(block.pop("faults", {}) or {})
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
        if "CREW_LLM_API_KEY_ENV" in env and not env["CREW_LLM_API_KEY_ENV"]:
            block["api_key_env"] = ""  # set but empty: a server that needs no key (the README's vLLM / Ollama lines)
        if env.get("CREW_EMBEDDED_MODEL"):
            embedded["model"] = env["CREW_EMBEDDED_MODEL"]
        if env.get("CREW_EMBEDDED_RUNTIME"):
            embedded["runtime"] = env["CREW_EMBEDDED_RUNTIME"]
        if env.get("CREW_LLM_FAULTS"):
            faults.update(parse_faults(env["CREW_LLM_FAULTS"]))
        return cls(**block, embedded=EmbeddedConfig(**embedded), faults=FaultsConfig(**faults))
