"""Test doubles (tests only): a scripted OpenAI-compatible HTTP server on 127.0.0.1.

``ScriptedOpenAIServer`` answers ``POST /v1/chat/completions`` from a script of steps,
each an HTTP status, an answer text and a delay, then falls back to a default answer. It
records every request body and header so tests can check what reached the endpoint.
"""

from __future__ import annotations

import json
import threading
import time
from collections import deque
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer


@dataclass
class Step:
    status: int = 200
    content: str = "ok"
    delay_s: float = 0.0
    error_message: str = "scripted failure"


class ScriptedOpenAIServer:
    def __init__(self, default: Step | None = None, usage: tuple[int, int] = (11, 7)) -> None:
        self.script: deque[Step] = deque()
        self.default = default or Step()
        self.usage = usage
        self.requests: list[dict] = []
        self.headers: list[dict] = []
        self._lock = threading.Lock()
        outer = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args):  # keep test output quiet
                pass

            def do_POST(self):  # noqa: N802
                body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                with outer._lock:
                    outer.requests.append(body)
                    outer.headers.append(dict(self.headers))
                    step = outer.script.popleft() if outer.script else outer.default
                if step.delay_s:
                    time.sleep(step.delay_s)
                if step.status != 200:
                    payload = {"error": {"message": step.error_message, "type": "scripted"}}
                else:
                    payload = {
                        "id": "chatcmpl-test", "object": "chat.completion", "created": 0,
                        "model": body.get("model", "scripted"),
                        "choices": [{"index": 0, "finish_reason": "stop",
                                     "message": {"role": "assistant", "content": step.content}}],
                        "usage": {"prompt_tokens": outer.usage[0], "completion_tokens": outer.usage[1],
                                  "total_tokens": sum(outer.usage)},
                    }
                data = json.dumps(payload).encode()
                try:
                    self.send_response(step.status)
                    self.send_header("Content-Type", "application/json")
                    self.send_header("Content-Length", str(len(data)))
                    self.end_headers()
                    self.wfile.write(data)
                except (BrokenPipeError, ConnectionResetError):
                    pass  # the client gave up (timeout test)

        self._httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._httpd.daemon_threads = True
        self._thread = threading.Thread(target=self._httpd.serve_forever, daemon=True)

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self._httpd.server_address[1]}/v1"

    def push(self, *steps: Step) -> None:
        with self._lock:
            self.script.extend(steps)

    def __enter__(self) -> ScriptedOpenAIServer:
        self._thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self._httpd.shutdown()
        self._httpd.server_close()
