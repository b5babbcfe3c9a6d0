"""The ledger: one record per LLM call, so tokens, time, cache hits and faults count once.

Cache hits are recorded with the tokens the answer originally cost but ``billed`` False:
a system's token figure stays comparable whether it ran live or from the cache, while
``billed_tokens`` says what this run actually paid for.
"""

from __future__ import annotations

import csv
import dataclasses
import threading
import time
from dataclasses import dataclass
from pathlib import Path

import pandas as pd


@dataclass(frozen=True)
class Caller:
    """Who made a call: the system (crew, srw, judge ...), the role and the agent index."""

    system: str = "unknown"
    role: str = "unknown"
    agent: int | None = None
    round: int | None = None  # the episode's round (CREW), or None
    parts: str = ""  # the prompt's estimated tokens by part (crewlib.prompts.parts.parts_text), "" when unmeasured


@dataclass(frozen=True)
class CallRecord:
    started_at: float  # unix seconds
    system: str
    role: str
    agent: int | None
    model: str
    prompt_tokens: int
    completion_tokens: int
    latency_s: float  # wall time of this call in this run (a cache hit: the lookup)
    retries: int
    cache_hit: bool
    error: str | None  # exception class and message when the call failed
    request_key: str
    # prompt tokens the endpoint reused from its prompt cache (OpenAI's usage.prompt_tokens_details.cached_tokens,
    # llama.cpp's timings.cache_n); 0 when it does not say, and for cache hits
    prompt_tokens_cached: int = 0
    # how long the answer took when it was produced: latency_s for a live call, the recorded call's for a cache hit
    recorded_latency_s: float = 0.0
    # why this call was made again: "" (a first ask), "invalid" (the answer was not valid JSON for its schema),
    # "cut" (the answer stopped at max_tokens), "schema_refused" (the endpoint refused a json_schema request)
    reask: str = ""
    round: int | None = None  # the caller's round
    prompt_parts: str = ""  # the caller's prompt parts: "fixed=310;target=120;notes=80;..." (estimates)
    cut: bool = False  # the answer stopped at max_tokens (finish_reason "length"): free text may end mid-section

    @property
    def billed(self) -> bool:
        return not self.cache_hit and self.error is None


def _parse_parts(cell: str) -> dict[str, int]:
    """A ``prompt_parts`` cell (``fixed=310;target=120``) read back; {} when empty."""
    out = {}
    for item in (cell or "").split(";"):
        name, _, tokens = item.partition("=")
        if tokens:
            out[name] = int(tokens)
    return out


class Ledger:
    """Thread-safe list of :class:`CallRecord`; ``mark``/``since`` slice it per system run."""

    def __init__(self) -> None:
        self._records: list[CallRecord] = []
        self._lock = threading.Lock()

    def add(self, record: CallRecord) -> None:
        with self._lock:
            self._records.append(record)

    def record(self, caller: Caller, model: str, request_key: str, *, started_at: float | None = None,
               prompt_tokens: int = 0, completion_tokens: int = 0, latency_s: float = 0.0,
               retries: int = 0, cache_hit: bool = False, error: BaseException | None = None,
               prompt_tokens_cached: int = 0, recorded_latency_s: float | None = None, reask: str = "",
               cut: bool = False) -> CallRecord:
        rec = CallRecord(
            started_at=time.time() if started_at is None else started_at,
            system=caller.system, role=caller.role, agent=caller.agent, model=model,
            prompt_tokens=prompt_tokens, completion_tokens=completion_tokens, latency_s=latency_s,
            retries=retries, cache_hit=cache_hit,
            error=None if error is None else f"{type(error).__name__}: {error}"[:500],
            request_key=request_key, prompt_tokens_cached=prompt_tokens_cached,
            recorded_latency_s=latency_s if recorded_latency_s is None else recorded_latency_s, reask=reask,
            round=caller.round, prompt_parts=caller.parts, cut=cut,
        )
        self.add(rec)
        return rec

    @property
    def records(self) -> list[CallRecord]:
        with self._lock:
            return list(self._records)

    def mark(self) -> int:
        """Position to pass to :meth:`since` to get the calls made after this point."""
        with self._lock:
            return len(self._records)

    def since(self, mark: int) -> list[CallRecord]:
        with self._lock:
            return list(self._records[mark:])

    def totals(self, records: list[CallRecord] | None = None) -> dict[str, float]:
        """Calls, tokens (all / billed), cache hits, errors, retries and summed latency."""
        recs = self.records if records is None else records
        return {
            "calls": len(recs),
            "prompt_tokens": sum(r.prompt_tokens for r in recs),
            "prompt_tokens_cached": sum(r.prompt_tokens_cached for r in recs),
            "completion_tokens": sum(r.completion_tokens for r in recs),
            "tokens": sum(r.prompt_tokens + r.completion_tokens for r in recs),
            "billed_tokens": sum(r.prompt_tokens + r.completion_tokens for r in recs if r.billed),
            "cache_hits": sum(r.cache_hit for r in recs),
            "errors": sum(r.error is not None for r in recs),
            "retries": sum(r.retries for r in recs),
            "latency_s": sum(r.latency_s for r in recs),
            "recorded_latency_s": sum(r.recorded_latency_s for r in recs),
        }

    def breakdown(self, records: list[CallRecord] | None = None) -> dict[str, dict]:
        """Where the cost went: calls, prompt tokens (and those the endpoint reused), completion tokens and model
        seconds by action (the caller's role) and by round, and prompt tokens by prompt part (fixed instructions,
        target, references, notes, draft: each call's measured prompt tokens shared out in proportion to its
        parts' estimates, :mod:`crewlib.prompts.parts`; ``unmeasured`` for a call whose parts were not recorded)."""
        recs = self.records if records is None else records

        def add(table: dict, key, r: CallRecord) -> None:
            row = table.setdefault(key, {"calls": 0, "prompt_tokens": 0, "prompt_tokens_cached": 0,
                                         "completion_tokens": 0, "model_s": 0.0})
            row["calls"] += 1
            row["prompt_tokens"] += r.prompt_tokens
            row["prompt_tokens_cached"] += r.prompt_tokens_cached
            row["completion_tokens"] += r.completion_tokens
            row["model_s"] = round(row["model_s"] + r.recorded_latency_s, 3)

        by_action: dict = {}
        by_round: dict = {}
        by_part: dict[str, float] = {}
        for r in recs:
            add(by_action, r.role, r)
            if r.round is not None:
                add(by_round, r.round, r)
            parts = {k: v for k, v in _parse_parts(r.prompt_parts).items() if v > 0}
            total = sum(parts.values())
            if not total:
                by_part["unmeasured"] = by_part.get("unmeasured", 0) + r.prompt_tokens
            for name, estimate in parts.items():
                by_part[name] = by_part.get(name, 0) + r.prompt_tokens * estimate / total
        return {"by_action": by_action, "by_round": {str(k): v for k, v in sorted(by_round.items())},
                "by_part": {k: round(v) for k, v in by_part.items()}}

    def to_dataframe(self) -> pd.DataFrame:
        columns = [f.name for f in dataclasses.fields(CallRecord)]
        return pd.DataFrame([dataclasses.asdict(r) for r in self.records], columns=columns)

    def to_csv(self, path: str | Path) -> Path:
        path = Path(path)
        path.parent.mkdir(parents=True, exist_ok=True)
        columns = [f.name for f in dataclasses.fields(CallRecord)]
        with path.open("w", newline="") as fh:
            writer = csv.DictWriter(fh, fieldnames=columns)
            writer.writeheader()
            for r in self.records:
                writer.writerow(dataclasses.asdict(r))
        return path
