"""Runs under injected API failures against recorded answers (notebook 08, benchmarks/reliability.py).

The systems run against an OpenAI-compatible endpoint on 127.0.0.1 that answers every request
from recorded answers (an answer cache folder, or a live run's ledger), instantly, with the
client's seeded fault injector (timeouts, dropped connections, 429, 503) in front of it and the
client's real retry and backoff settings. So the figures measure what failures cost a system —
retries, calls lost after every retry, counted fallbacks, waiting — not the model. A request
that was never recorded is answered 404 and counted (``unrecorded``), never guessed.

*Model time* of a run is the recorded seconds of the calls it made (what the model took when the
answers were produced) plus the seconds spent waiting between retries: the wall time the run
would have taken against the model, calls one after another.
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path

import pandas as pd

from crewlib.experiments.run import run_generations
from crewlib.llm import FaultInjector, LLMClient
from crewlib.llm.client import sent_seed
from crewlib.llm.http_endpoint import ChatEndpoint, Reply, completion, error_body
from crewlib.llm.settings import llm_settings
from crewlib.schema import LLMBlock, Params

NOT_RECORDED = "this request was not recorded"


def visible(body: Mapping) -> str:
    """What an endpoint sees of a request that decides its answer (a sample index reaches it as the seed)."""
    return json.dumps([body.get("model"), body.get("messages"), body.get("max_tokens"), body.get("response_format"),
                       body.get("seed")], sort_keys=True)


def answers_from_files(paths: Iterable[Path]) -> dict[str, dict]:
    """Visible request → recorded answer, from answer-cache files (``{"request": ..., "response": ...}``)."""
    answers = {}
    for path in paths:
        entry = json.loads(Path(path).read_text(encoding="utf-8"))
        request = entry["request"]
        answers[visible({**request, "seed": sent_seed(request)})] = entry["response"]
    return answers


def answers_from_cache(cache_dir: str | Path) -> dict[str, dict]:
    """Every recorded answer of an answer-cache folder (``llm.cache_dir``)."""
    return answers_from_files(sorted(Path(cache_dir).glob("*/*.json")))


class Replay:
    """An endpoint's reply function that answers from ``answers`` and 404s anything else.

    ``served_s`` sums the recorded seconds of the answers served since the last :meth:`reset`
    (what the model took to produce them).
    """

    def __init__(self, answers: Mapping[str, dict]) -> None:
        self.answers = answers
        self.served_s = 0.0
        self._lock = threading.Lock()

    def reset(self) -> None:
        with self._lock:
            self.served_s = 0.0

    def __call__(self, body: dict) -> Reply:
        answer = self.answers.get(visible(body))
        if answer is None:
            return Reply(404, error_body(NOT_RECORDED))
        with self._lock:
            self.served_s += float(answer.get("latency_s") or 0.0)
        return Reply(200, completion(answer["content"], model=answer["model"], prompt_tokens=answer["prompt_tokens"],
                                     completion_tokens=answer["completion_tokens"]))


def run_with_faults(rate: float, seed: int, endpoint: ChatEndpoint, replayer: Replay, config: LLMBlock,
                    names: Sequence[str],
                    examples, params: Params, tasks, out_dir: Path, *, api_key: str = "not-needed",
                    real_sleep: bool = True) -> tuple[dict, pd.DataFrame]:
    """The systems against the ``endpoint`` serving ``replayer`` with ``rate`` of the calls failing (seeded).

    Returns the run's figures (completed sections, calls, retries, calls failed after every
    retry, CREW's fallbacks for them, unrecorded requests, injected faults, waiting seconds, model
    seconds, wall seconds) and its generations. ``real_sleep`` False records the backoff waits
    without sleeping them (same figures, faster).
    """
    waits: list[float] = []

    def sleep(seconds: float) -> None:
        waits.append(seconds)
        if real_sleep:
            time.sleep(seconds)

    cfg = config.model_copy(update={"provider": "openai", "base_url": endpoint.base_url, "api_key_env": "",
                                    "cache_mode": "off"})
    client = LLMClient(cfg, api_key=api_key, faults=FaultInjector(rate, seed) if rate else None, sleep=sleep)
    replayer.reset()
    t0 = time.perf_counter()
    frame = run_generations(list(names), examples, params, client, tasks=tasks, out_dir=out_dir,
                            progress=False).frame()
    wall = time.perf_counter() - t0
    client.ledger.to_csv(out_dir / "ledger.csv")
    records = client.ledger.records
    reasons = [r for r in frame.get("fallback_reasons", pd.Series(dtype=object)) if isinstance(r, dict)]
    # actions whose call failed after every retry (not a system's no-ops, nor the model's invalid JSON)
    fallbacks = sum(n for r in reasons for why, n in r.items() if why.startswith("RetryExhaustedError"))
    unrecorded = sum(NOT_RECORDED in (r.error or "") for r in records)
    figures = {"rate": rate, "completed": int(frame.text.notna().sum()), "generations": len(frame),
               "calls": sum(r.error is None for r in records), "retries": sum(r.retries for r in records),
               "failed_calls": sum(r.error is not None for r in records) - unrecorded, "fallbacks": fallbacks,
               "unrecorded": unrecorded, "injected": sum(client.faults.injected.values()) if client.faults else 0,
               "waits_s": round(sum(waits), 1), "model_s": round(replayer.served_s + sum(waits), 1),
               "wall_s": round(wall, 1)}
    return figures, frame


def api_failure_runs(params: Params, *, cache_dir: str | Path, systems: Sequence[str], rates: Sequence[float],
                     seed: int, targets: int | None = None) -> pd.DataFrame:
    """Each system alone at each failure rate, against the answers recorded in ``cache_dir`` (the paper's 5% run).

    One row per system × rate with :func:`run_with_faults`'s figures; the client's retry settings
    are the params' (``llm.max_retries``, backoff, deadline), the waits are recorded, not slept. Each
    run writes to a fresh temporary folder, so nothing is resumed: every call is made.
    """
    import tempfile

    from crewlib.llm import connect
    from crewlib.tasks import evaluation_pairs

    pairs = evaluation_pairs(params, targets)
    examples, tasks = [e for e, _ in pairs], {t.target_id: t for _, t in pairs}
    model = connect(params).model  # the recorded answers' model name: part of every request
    config = llm_settings(params).model_copy(update={"model": model})
    replayer = Replay(answers_from_cache(cache_dir))
    rows = []
    with ChatEndpoint(replayer) as endpoint, tempfile.TemporaryDirectory() as tmp:
        for system in systems:
            for rate in rates:
                folder = Path(tmp) / f"{system}-rate{rate:g}"
                figures, _ = run_with_faults(rate, seed, endpoint, replayer, config, [system], examples, params,
                                             tasks, folder, real_sleep=False)
                rows.append({"system": system, **figures})
    return pd.DataFrame(rows)
