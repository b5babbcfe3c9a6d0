"""Content-addressed answer cache: one reviewable JSON file per request.

Key = sha256 of the canonical request (model, messages, temperature, top_p, max_tokens,
frequency penalty, seed, response format, sample index, prompt version). Endpoint URL,
headers and API keys are never part of the key or the file, so a cache recorded against one server replays
against another serving the same model, and a shipped cache carries no secrets.
Writes go to a temporary file and are renamed into place, which is atomic on POSIX, so
threads and processes can share a cache folder.
"""

from __future__ import annotations

import hashlib
import json
import os
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from crewlib.llm.errors import CacheMissError

CACHE_FORMAT = 1


def canonical_request(*, model: str, messages: list[dict[str, str]], temperature: float, top_p: float,
                      max_tokens: int, seed: int | None, response_format: dict | None,
                      frequency_penalty: float = 0.0, sample_index: int = 0,
                      prompt_version: str = "") -> dict[str, Any]:
    """The fields that determine an answer, and nothing else."""
    return {
        "model": model,
        "messages": [{"role": m["role"], "content": m["content"]} for m in messages],
        "temperature": round(float(temperature), 6),
        "top_p": round(float(top_p), 6),
        "max_tokens": int(max_tokens),
        "frequency_penalty": round(float(frequency_penalty), 6),
        "seed": seed,
        "response_format": response_format,
        "sample_index": int(sample_index),
        "prompt_version": prompt_version,
    }


def request_key(request: dict[str, Any]) -> str:
    blob = json.dumps(request, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return hashlib.sha256(blob.encode("utf-8")).hexdigest()


@dataclass(frozen=True)
class CachedAnswer:
    content: str
    model: str
    prompt_tokens: int
    completion_tokens: int
    finish_reason: str | None
    latency_s: float  # how long the original call took


class ResponseCache:
    """Folder of ``<key[:2]>/<key>.json`` entries; ``mode`` is off, read_write or replay."""

    def __init__(self, folder: str | os.PathLike, mode: str = "read_write") -> None:
        self.folder = Path(folder)
        self.mode = mode

    def path(self, key: str) -> Path:
        """The entry file of ``key`` (it may not exist)."""
        return self.folder / key[:2] / f"{key}.json"

    def get(self, request: dict[str, Any], key: str) -> CachedAnswer | None:
        """The stored answer, None on a miss; in replay mode a miss raises :class:`CacheMissError`."""
        if self.mode == "off":
            return None
        path = self.path(key)
        try:
            entry = json.loads(path.read_text(encoding="utf-8"))
            answer = CachedAnswer(**entry["response"])
        except FileNotFoundError:
            answer = None
        except (ValueError, KeyError, TypeError):
            answer = None  # a damaged entry is a miss; the live call will overwrite it
        if answer is not None and not answer.content.strip():
            answer = None  # an empty answer is a failed call, never a recording (older caches may hold one)
        if answer is None and self.mode == "replay":
            last = request["messages"][-1]["content"] if request.get("messages") else ""
            raise CacheMissError(
                f"replay-only cache has no answer for request {key[:12]} (model {request.get('model')!r}, "
                f"last message {last[:80]!r}) in {self.folder}; run with cache_mode read_write to record it"
            )
        return answer

    def put(self, request: dict[str, Any], key: str, answer: CachedAnswer) -> None:
        if self.mode != "read_write" or not answer.content.strip():
            return
        path = self.path(key)
        path.parent.mkdir(parents=True, exist_ok=True)
        entry = {
            "format": CACHE_FORMAT,
            "key": key,
            "created": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
            "request": request,
            "response": answer.__dict__,
        }
        fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=".tmp-", suffix=".json")
        try:
            with os.fdopen(fd, "w", encoding="utf-8") as fh:
                json.dump(entry, fh, indent=1, ensure_ascii=False, sort_keys=True)
                fh.write("\n")
            os.replace(tmp, path)
        except BaseException:
            Path(tmp).unlink(missing_ok=True)
            raise

    def __len__(self) -> int:
        return sum(1 for _ in self.folder.glob("??/*.json")) if self.folder.exists() else 0
