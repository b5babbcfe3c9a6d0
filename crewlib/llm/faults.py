"""Seeded fault injection for the paper's API-failure experiment (5% failed calls).

:class:`FaultInjector` sits between the client and the endpoint: before a live request it
draws from a seeded generator and, at ``rate``, raises one of the exceptions a real
OpenAI-compatible endpoint raises (timeout, dropped connection, 429, 500/503). The client's
retry logic then handles it exactly as it would a real fault. Cache hits never reach it.
"""

from __future__ import annotations

import random
import threading
import time
from collections import Counter
from collections.abc import Callable
from typing import Any

import httpx
import openai

FAULT_KINDS = ("timeout", "connection", "rate_limit", "server_error")


def make_fault(kind: str) -> openai.OpenAIError:
    """An exception of the type and shape the ``openai`` package raises for that fault."""
    request = httpx.Request("POST", "http://fault.invalid/v1/chat/completions")
    if kind == "timeout":
        return openai.APITimeoutError(request=request)
    if kind == "connection":
        return openai.APIConnectionError(message="injected: connection reset", request=request)
    if kind == "rate_limit":
        response = httpx.Response(429, request=request, json={"error": {"message": "injected: rate limited"}})
        return openai.RateLimitError("injected: rate limited", response=response, body=None)
    if kind == "server_error":
        response = httpx.Response(503, request=request, json={"error": {"message": "injected: unavailable"}})
        return openai.InternalServerError("injected: service unavailable", response=response, body=None)
    raise ValueError(f"unknown fault kind {kind!r}; choose from {FAULT_KINDS}")


class FaultInjector:
    """Fail a seeded fraction ``rate`` of calls; optionally add latency to every call."""

    def __init__(self, rate: float, seed: int = 0, kinds: tuple[str, ...] = FAULT_KINDS,
                 latency_s: float = 0.0) -> None:
        if not 0.0 <= rate <= 1.0:
            raise ValueError(f"fault rate must be in [0, 1], got {rate}")
        for kind in kinds:
            make_fault(kind)  # validates the name
        self.rate = rate
        self.kinds = tuple(kinds)
        self.latency_s = latency_s
        self._rng = random.Random(seed)
        self._lock = threading.Lock()
        self.calls = 0
        self.injected: Counter[str] = Counter()

    def wrap(self, send: Callable[..., Any]) -> Callable[..., Any]:
        def faulty_send(**kwargs: Any) -> Any:
            with self._lock:
                self.calls += 1
                fail = self._rng.random() < self.rate
                kind = self._rng.choice(self.kinds) if fail else None
                if kind:
                    self.injected[kind] += 1
            if self.latency_s:
                time.sleep(self.latency_s)
            if kind:
                raise make_fault(kind)
            return send(**kwargs)

        return faulty_send

    @property
    def observed_rate(self) -> float:
        return sum(self.injected.values()) / self.calls if self.calls else 0.0
