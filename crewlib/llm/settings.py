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

import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pydantic

from crewlib.config import ParamsError, as_dict, default_params, resolve_path
from crewlib.schema import LLMBlock, Params, validation_messages


def user_cache_dir(name: str, override_env: str) -> Path:
    """``$<override_env>``, else ``$XDG_CACHE_HOME/crewlib/<name>`` (default ``~/.cache``): the
    embedded model files and the native llama.cpp build live there, outside the repository."""
    if os.environ.get(override_env):
        return Path(os.environ[override_env]).expanduser()
    return Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "crewlib" / name


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


def llm_config(block: LLMBlock | None = None, **changes: Any) -> LLMBlock:
    """``block`` (default: ``params/quick.yaml``'s ``llm``) with ``changes`` applied (``embedded`` and ``faults``
    as dicts of the keys they change), validated and checked: the one way an ``llm`` block is built."""
    data = as_dict(block if block is not None else default_params().llm)
    for key, value in changes.items():
        data[key] = {**data.get(key, {}), **value} if key in ("embedded", "faults") and isinstance(value, dict) \
            else value
    return _checked(data)


def _checked(data: dict[str, Any]) -> LLMBlock:
    try:
        config = LLMBlock.model_validate(data)
    except pydantic.ValidationError as exc:
        raise ParamsError("llm settings: " + "; ".join(validation_messages(exc))) from None
    if config.provider == "openai" and not (config.base_url and config.model):
        raise ParamsError("llm.provider 'openai' needs llm.base_url and llm.model "
                          "(or CREW_LLM_BASE_URL and CREW_LLM_MODEL)")
    return config


def llm_settings(params: Params, env: Mapping[str, str] | None = None, override: Mapping[str, Any] | None = None
                 ) -> LLMBlock:
    """The ``llm`` block of ``params``, its keys replaced by ``override`` (a judge's or MA-RWG's model: the
    whole ``embedded`` or ``faults`` dict when it names one), then the environment overrides of the module doc."""
    env = os.environ if env is None else env
    block = as_dict(params.llm) | dict(override or {})
    if env.get("CREW_LLM_BASE_URL"):
        block.update(provider="openai", base_url=env["CREW_LLM_BASE_URL"])
    for var, key in [("CREW_LLM_PROVIDER", "provider"), ("CREW_LLM_MODEL", "model"),
                     ("CREW_LLM_API_KEY_ENV", "api_key_env"), ("CREW_LLM_CACHE_MODE", "cache_mode"),
                     ("CREW_LLM_CACHE_DIR", "cache_dir")]:
        if env.get(var):
            block[key] = env[var]
    if "CREW_LLM_API_KEY_ENV" in env and not env["CREW_LLM_API_KEY_ENV"]:
        block["api_key_env"] = ""  # set but empty: a server that needs no key (the README's vLLM / Ollama lines)
    embedded = {key: env[var] for var, key in [("CREW_EMBEDDED_MODEL", "model"), ("CREW_EMBEDDED_RUNTIME", "runtime")]
                if env.get(var)}
    faults = parse_faults(env["CREW_LLM_FAULTS"]) if env.get("CREW_LLM_FAULTS") else {}
    return _checked({**block, "embedded": {**block["embedded"], **embedded}, "faults": {**block["faults"], **faults}})


def cache_path(config: LLMBlock) -> Path:
    """Where the answers of ``config`` are cached (``llm.cache_dir``, relative to the project root)."""
    return resolve_path(config.cache_dir)
