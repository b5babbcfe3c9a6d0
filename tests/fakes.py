"""Test doubles (tests only): a scripted OpenAI-compatible HTTP server on 127.0.0.1.

``ScriptedOpenAIServer`` answers ``POST /v1/chat/completions`` from a script of steps, each an
HTTP status, an answer text (or a raw body: not JSON, an HTML page ...), headers and a delay,
then falls back to a default answer. It runs on :class:`crewlib.llm.http_endpoint.ChatEndpoint`
and records every request body and header so tests can check what reached the endpoint.
"""

from __future__ import annotations

import threading
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field

from crewlib.llm.http_endpoint import ChatEndpoint, Reply, completion, error_body


@dataclass
class Step:
    status: int = 200
    content: str | Callable[[dict], str] = "ok"  # or a function of the request body (an answer that depends on it)
    delay_s: float = 0.0
    error_message: str = "scripted failure"
    body: str | bytes | None = None  # sent as it is instead of a completion (a broken answer)
    headers: dict[str, str] = field(default_factory=dict)
    finish_reason: str = "stop"  # "length": the answer stopped at max_tokens


class ScriptedOpenAIServer(ChatEndpoint):
    def __init__(self, default: Step | None = None, usage: tuple[int, int] = (11, 7)) -> None:
        super().__init__(self._reply)
        self.script: deque[Step] = deque()
        self.default = default or Step()
        self.usage = usage
        self._script_lock = threading.Lock()

    def _reply(self, request: dict) -> Reply:
        with self._script_lock:
            step = self.script.popleft() if self.script else self.default
        if step.body is not None:
            body = step.body
        elif step.status != 200:
            body = error_body(step.error_message, "scripted")
        else:
            content = step.content(request) if callable(step.content) else step.content
            body = completion(content, model=request.get("model", "scripted"),
                              prompt_tokens=self.usage[0], completion_tokens=self.usage[1],
                              finish_reason=step.finish_reason)
        headers = dict(step.headers)
        if step.body is not None and "Content-Type" not in headers:
            headers["Content-Type"] = "application/json"  # what a broken server claims
        return Reply(step.status, body, headers, step.delay_s)

    def push(self, *steps: Step) -> None:
        with self._script_lock:
            self.script.extend(steps)
