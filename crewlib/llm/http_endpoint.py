"""A minimal OpenAI-compatible chat endpoint on 127.0.0.1, answering from a Python function.

It serves ``POST /v1/chat/completions`` over real HTTP, so whatever talks to it goes through the
``openai`` package and :class:`~crewlib.llm.client.LLMClient` exactly as it would with a remote
endpoint. Two users: the reliability benchmark (``benchmarks/reliability.py``), which replays
recorded answers through it with injected faults, and the failure-matrix tests, which script
broken replies (bodies that are not JSON, HTML pages, ``Retry-After``, hung calls).

``respond(request) -> Reply`` gets the request's JSON body; the :class:`Reply` says the status,
the body (a dict is sent as JSON, ``str``/``bytes`` as they are), headers and a delay.
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any


@dataclass
class Reply:
    status: int = 200
    body: dict | str | bytes = b""
    headers: dict[str, str] = field(default_factory=dict)
    delay_s: float = 0.0


def completion(content: str, *, model: str = "endpoint", prompt_tokens: int = 0, completion_tokens: int = 0,
               finish_reason: str = "stop") -> dict[str, Any]:
    """A chat-completions response body with one choice."""
    return {"id": "chatcmpl-local", "object": "chat.completion", "created": int(time.time()), "model": model,
            "choices": [{"index": 0, "finish_reason": finish_reason,
                         "message": {"role": "assistant", "content": content}}],
            "usage": {"prompt_tokens": prompt_tokens, "completion_tokens": completion_tokens,
                      "total_tokens": prompt_tokens + completion_tokens}}


def error_body(message: str, kind: str = "invalid_request_error") -> dict[str, Any]:
    return {"error": {"message": message, "type": kind}}


class ChatEndpoint:
    """``with ChatEndpoint(respond) as endpoint: ... endpoint.base_url ...``; ``requests`` lists the
    JSON bodies received, ``headers`` their HTTP headers."""

    def __init__(self, respond: Callable[[dict[str, Any]], Reply]) -> None:
        self.respond = respond
        self.requests: list[dict[str, Any]] = []
        self.headers: list[dict[str, str]] = []
        self._lock = threading.Lock()
        self._server: ThreadingHTTPServer | None = None

    @property
    def base_url(self) -> str:
        if self._server is None:
            raise RuntimeError("the endpoint is not started")
        return f"http://127.0.0.1:{self._server.server_address[1]}/v1"

    def start(self) -> ChatEndpoint:
        endpoint = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:  # noqa: N802 - the name http.server calls
                length = int(self.headers.get("Content-Length") or 0)
                raw = self.rfile.read(length)
                try:
                    request = json.loads(raw or b"{}")
                except ValueError:
                    request = {}
                with endpoint._lock:
                    endpoint.requests.append(request)
                    endpoint.headers.append(dict(self.headers))
                if not self.path.rstrip("/").endswith("/chat/completions"):
                    reply = Reply(404, error_body(f"no route {self.path}"))
                else:
                    reply = endpoint.respond(request)
                if reply.delay_s:
                    time.sleep(reply.delay_s)
                body = reply.body
                if isinstance(body, dict):
                    payload, kind = json.dumps(body).encode(), "application/json"
                else:
                    payload = body.encode() if isinstance(body, str) else body
                    kind = "text/plain"
                headers = {"Content-Type": kind, **reply.headers}
                try:
                    self.send_response(reply.status)
                    for name, value in headers.items():
                        self.send_header(name, value)
                    self.send_header("Content-Length", str(len(payload)))
                    self.end_headers()
                    self.wfile.write(payload)
                except (BrokenPipeError, ConnectionResetError):  # the client gave up (its timeout)
                    pass

            def log_message(self, *args: Any) -> None:  # quiet
                pass

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._server.daemon_threads = True
        threading.Thread(target=self._server.serve_forever, name="chat-endpoint", daemon=True).start()
        return self

    def stop(self) -> None:
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
            self._server = None

    def __enter__(self) -> ChatEndpoint:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()
