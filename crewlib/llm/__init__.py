"""LLM access: one client (cache, retries, concurrency, JSON, ledger) and the embedded model.

Typical use::

    from crewlib.config import load_params
    from crewlib.llm import connect, Caller
    llm = connect(load_params("quick"))
    answer = llm.chat([{"role": "user", "content": "Hello"}], caller=Caller("demo", "writer"))
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable

from crewlib.llm.cache import ResponseCache
from crewlib.llm.client import ChatRequest, ChatResult, LLMClient
from crewlib.llm.errors import (
    BudgetExhaustedError,
    CacheMissError,
    EndpointError,
    LLMError,
    ModelNotAvailableError,
    OutputValidationError,
    RetryExhaustedError,
    ServerStartError,
)
from crewlib.llm.faults import FaultInjector
from crewlib.llm.ledger import Caller, CallRecord, Ledger
from crewlib.llm.settings import llm_settings
from crewlib.schema import EmbeddedBlock, LLMBlock, Params

__all__ = [
    "BudgetExhaustedError", "CacheMissError", "CallRecord", "Caller", "ChatRequest", "ChatResult", "EndpointError",
    "FaultInjector", "LLMClient", "LLMError", "Ledger", "ModelNotAvailableError",
    "OutputValidationError", "ResponseCache", "RetryExhaustedError", "ServerStartError", "connect",
    "connect_override", "embedded_runtime", "embedded_server",
]

_servers: dict = {}
_servers_lock = threading.Lock()


def embedded_server(config: EmbeddedBlock):
    """The process-wide embedded server for ``config`` (started once, stopped at exit)."""
    from crewlib.llm.local import LocalServer

    with _servers_lock:
        server = _servers.get(config)
        if server is None or not server.running:
            server = LocalServer(config).start()
            _servers[config] = server
        return server


def embedded_runtime(config: EmbeddedBlock) -> str | None:
    """``native`` or ``prebuilt`` for the running embedded server of ``config``; None when none runs."""
    with _servers_lock:
        server = _servers.get(config)
        return server.runtime if server is not None and server.running else None


def connect(params: Params | None = None, *, ledger: Ledger | None = None, cache: ResponseCache | None = None,
            faults: FaultInjector | None = None, config: LLMBlock | None = None,
            sleep: Callable[[float], None] = time.sleep) -> LLMClient:
    """A client for the endpoint the params (and environment) name.

    With the embedded provider the local server is started lazily, at the first call whose
    answer is not in the cache, so a fully cached run never loads the model.
    """
    if config is None:
        if params is None:
            raise ValueError("connect needs params or an llm config")
        config = llm_settings(params)
    if config.provider == "embedded":
        from crewlib.llm.local import get_model

        model = get_model(config.embedded.model)
        return LLMClient(config, base_url=lambda: embedded_server(config.embedded).base_url, model=model.alias,
                         api_key="not-needed", ledger=ledger, cache=cache, faults=faults, sleep=sleep)
    return LLMClient(config, ledger=ledger, cache=cache, faults=faults, sleep=sleep)


def connect_override(params: Params, override: dict | None = None, *, ledger: Ledger | None = None) -> LLMClient:
    """A client for the params' ``llm`` block with the keys of ``override`` replaced.

    ``None`` or ``{}`` is the run's own LLM. Used where params name a second model: the judges
    (``eval.judges``), MA-RWG's generator and verifier.
    """
    return connect(config=llm_settings(params, override=override), ledger=ledger)
