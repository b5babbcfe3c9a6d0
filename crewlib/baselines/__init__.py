"""Every system of the main results behind one interface and a registry (docs/method.md, "Baselines").

>>> from crewlib.baselines import make_system
>>> system = make_system("srw", params, client)
>>> generation = system.generate(example)      # Generation: text, citations, ledger slice, wall time

Names: crew, orchestrator, naive_orchestrator, srw, long_context, rag, primera, extractive, marwg.
Modules are imported when a system is made, so PRIMERA's transformers import costs nothing
to the others.
"""

from __future__ import annotations

import importlib

from crewlib.baselines.base import Generation, System, SystemUnavailableError, approx_tokens
from crewlib.llm import LLMClient
from crewlib.schema import Params

SYSTEMS: dict[str, str] = {
    "crew": "crewlib.baselines.env_systems:Crew",
    "orchestrator": "crewlib.baselines.env_systems:Orchestrator",
    "extractive": "crewlib.baselines.env_systems:Extractive",
    "naive_orchestrator": "crewlib.baselines.naive_orchestrator:NaiveOrchestrator",
    "srw": "crewlib.baselines.srw:SRW",
    "long_context": "crewlib.baselines.single:LongContext",
    "rag": "crewlib.baselines.single:RAG",
    "primera": "crewlib.baselines.primera:Primera",
    "marwg": "crewlib.baselines.marwg:MARWG",
}

__all__ = ["SYSTEMS", "Generation", "System", "SystemUnavailableError", "approx_tokens", "make_system",
           "system_class"]


def system_class(name: str) -> type[System]:
    """The class registered as ``name`` in :data:`SYSTEMS` (imported on first use: a system's heavy dependencies
    load only when it runs); an unknown name is a ValueError listing the known ones."""
    if name not in SYSTEMS:
        raise ValueError(f"unknown system {name!r}; known: {sorted(SYSTEMS)}")
    module, cls = SYSTEMS[name].split(":")
    return getattr(importlib.import_module(module), cls)


def make_system(name: str, params: Params, client: LLMClient | None = None) -> System:
    """The system registered as ``name``, built from ``params`` (its ``baselines.<name>`` block)."""
    return system_class(name)(params, client)
