"""The one LLM client every agent, baseline and judge goes through.

It speaks the OpenAI chat-completions protocol (``openai`` package), so the same code talks
to the embedded llama.cpp server, OpenRouter, vLLM or Ollama. On top of the raw call it adds,
in this order: the answer cache, a bound on concurrent live calls, retries with exponential
backoff and jitter, the ledger, and (for :meth:`LLMClient.chat_json`) schema validation with
one re-ask.

Failure handling (docs/reliability.md): a 200 whose body is not a chat completion, or whose
content is empty, is a :class:`MalformedResponseError`, retried and never cached; a 429's
``Retry-After`` is waited for (at most ``llm.retry_after_max_s``); every call has a total
deadline ``llm.deadline_s`` over all its attempts; the API key is removed from any error text
before it is raised, logged or written to the ledger.
"""

from __future__ import annotations

import email.utils
import os
import random
import re
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any, TypeVar

import openai
import pydantic

from crewlib.llm.cache import CachedAnswer, ResponseCache, canonical_request, request_key
from crewlib.llm.errors import (
    BudgetExhaustedError,
    CacheMissError,
    EndpointError,
    LLMError,
    MalformedResponseError,
    OutputValidationError,
    RetryExhaustedError,
)
from crewlib.llm.faults import FaultInjector
from crewlib.llm.jsonout import JSONAnswerError, parse_json_answer, schema_instruction
from crewlib.llm.ledger import Caller, CallRecord, Ledger
from crewlib.llm.settings import cache_path
from crewlib.schema import LLMBlock

T = TypeVar("T", bound=pydantic.BaseModel)

# Statuses worth retrying: the request was fine, the endpoint was busy or broken.
_RETRY_STATUS = {408, 409, 429}


_BEARER = re.compile(r"(?i)(bearer\s+)[^\s'\"]+")
_URL_CREDENTIALS = re.compile(r"(?<=//)[^/@\s'\"]+@")  # http://user:pass@host/v1: the user and password


def _is_retryable(exc: BaseException) -> bool:
    if isinstance(exc, (openai.APIConnectionError, MalformedResponseError)):  # includes APITimeoutError
        return True
    if isinstance(exc, openai.APIStatusError):
        return exc.status_code in _RETRY_STATUS or exc.status_code >= 500
    return False


def retry_after_s(exc: BaseException) -> float | None:
    """Seconds a 429/503 asks the client to wait (``Retry-After``: seconds or an HTTP date;
    ``retry-after-ms``), None when it does not say."""
    response = getattr(exc, "response", None)
    headers = getattr(response, "headers", None) or {}
    if headers.get("retry-after-ms"):
        try:
            return max(0.0, float(headers["retry-after-ms"]) / 1000)
        except ValueError:
            pass
    value = headers.get("retry-after")
    if not value:
        return None
    try:
        return max(0.0, float(value))
    except ValueError:
        pass
    try:
        when = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    return max(0.0, when.timestamp() - time.time())


def checked_completion(response: Any) -> tuple[Any, str]:
    """The response and its text, or :class:`MalformedResponseError` when it is not a chat
    completion with non-empty content (the ``openai`` package returns a plain string for a body
    that is not JSON)."""
    choices = getattr(response, "choices", None)
    if not isinstance(choices, list) or not choices:
        shown = response if isinstance(response, str) else type(response).__name__
        raise MalformedResponseError(f"the endpoint answered with no chat completion: {str(shown)[:120]!r}")
    message = getattr(choices[0], "message", None)
    content = getattr(message, "content", None) or ""
    if not content.strip():
        raise MalformedResponseError("the endpoint answered with empty content")
    return response, content


def cached_prompt_tokens(response: Any) -> int:
    """Prompt tokens the endpoint took from its prompt cache, where it says (0 otherwise)."""
    details = getattr(getattr(response, "usage", None), "prompt_tokens_details", None)
    cached = getattr(details, "cached_tokens", None)
    if cached is None:  # llama.cpp's server: timings.cache_n
        timings = (getattr(response, "model_extra", None) or {}).get("timings") or {}
        cached = timings.get("cache_n") if isinstance(timings, dict) else None
    try:
        return max(int(cached or 0), 0)
    except (TypeError, ValueError):
        return 0


class _Secret:
    """Holds an API key so that no repr, log or pickle of the client shows it."""

    __slots__ = ("value",)

    def __init__(self, value: str) -> None:
        self.value = value

    def __repr__(self) -> str:
        return "_Secret(***)"

    def __reduce__(self):
        raise TypeError("an API key is not serialisable")


def _refuses_format(message: str) -> bool:
    """An endpoint's error that refuses the request's format (a 400/422, or one naming the format), not its key."""
    return bool(re.search(r"HTTP 4(?:00|22)\)|response_format|json_schema|schema", message))


def schema_format(schema: type[pydantic.BaseModel]) -> dict[str, Any]:
    """The ``response_format`` that constrains decoding to ``schema``'s JSON schema (OpenAI, vLLM, llama.cpp).

    A schema's ``max_chars`` (field name → characters; a class attribute, not a field) becomes ``maxLength`` of
    that string field (or of each string of that list) in the decoding constraint only: the decoder then closes
    the text in time instead of running into ``max_tokens`` mid-string, and the answer stays valid JSON. The
    model's prompt and the answer's validation do not see the cap.
    """
    spec = cap_strings(schema.model_json_schema(), getattr(schema, "max_chars", {}))
    return {"type": "json_schema", "json_schema": {"name": schema.__name__, "schema": spec, "strict": False}}


def cap_strings(spec: Any, caps: Mapping[str, int]) -> Any:
    """``spec`` (a JSON schema, changed in place) with ``maxLength`` on each string property named in ``caps``."""
    if isinstance(spec, dict):
        for name, prop in spec.get("properties", {}).items():
            target = prop.get("items", {}) if prop.get("type") == "array" else prop
            if name in caps and target.get("type") == "string":
                target["maxLength"] = caps[name]
        for value in spec.values():
            cap_strings(value, caps)
    elif isinstance(spec, list):
        for value in spec:
            cap_strings(value, caps)
    return spec


def sent_seed(request: dict[str, Any]) -> int | None:
    """The seed sent for a canonical request: the configured seed plus its sample index.

    Sample k of one prompt must be a fresh sample on an endpoint that honours seeds (vLLM, OpenAI),
    not the same answer again; the cache key keeps the configured seed and the index apart.
    """
    seed = request.get("seed")
    return None if seed is None else seed + int(request.get("sample_index") or 0)


@dataclass(frozen=True)
class ChatRequest:
    """One chat call: messages plus the knobs that change its answer.

    ``None`` means "use the client's configured value". ``sample_index`` distinguishes
    deliberate repeated samples of one prompt in the cache; ``prompt_version`` ties a cached
    answer to the version of the prompt template that produced it.
    """

    messages: Sequence[dict[str, str]]
    caller: Caller = field(default_factory=Caller)
    temperature: float | None = None
    max_tokens: int | None = None
    json_mode: bool = False
    schema: type[pydantic.BaseModel] | None = None
    sample_index: int = 0
    prompt_version: str = ""


@dataclass(frozen=True)
class ChatResult:
    content: str
    record: CallRecord
    parsed: pydantic.BaseModel | None = None  # set by chat_json
    finish_reason: str | None = None  # "length": the answer stopped at max_tokens

    @property
    def cached(self) -> bool:
        return self.record.cache_hit


class LLMClient:
    """Chat completions with cache, retries, a concurrency bound, JSON validation and a ledger.

    Args:
        config: endpoint-independent settings (temperature, retries, cache ...).
        base_url, model: the endpoint; default to ``config.base_url`` / ``config.model``.
            ``base_url`` may be a callable, called at the first live (non-cached) call: the
            embedded server is then started only when an answer is not in the cache.
        api_key: only for endpoints that need one; normally read from ``config.api_key_env``.
        ledger, cache: shared objects; fresh ones by default.
        faults: a :class:`FaultInjector` placed in front of the endpoint (experiments).
        sleep: how to wait between retries (tests pass a no-op).
    """

    def __init__(self, config: LLMBlock, *, base_url: str | Callable[[], str] | None = None,
                 model: str | None = None,
                 api_key: str | None = None, ledger: Ledger | None = None,
                 cache: ResponseCache | None = None, faults: FaultInjector | None = None,
                 sleep: Callable[[float], None] = time.sleep, seed: int = 0) -> None:
        self.config = config
        self.base_url = base_url or config.base_url
        self.model = model or config.model
        if not self.base_url or not self.model:
            raise LLMError("LLMClient needs an endpoint base_url and a model name")
        if api_key is None:
            api_key = self._key_from_environment(config.api_key_env)
        self._api_key = _Secret(api_key)
        self._send_fn: Callable[..., Any] | None = None
        self._send_lock = threading.Lock()
        self._resolved_url: str | None = None
        self.ledger = ledger if ledger is not None else Ledger()
        self.cache = cache if cache is not None else ResponseCache(cache_path(config), config.cache_mode)
        if faults is None and config.faults.rate > 0:
            faults = FaultInjector(config.faults.rate, config.faults.seed)
        self.faults = faults
        self._sleep = sleep
        self._rng = random.Random(seed)
        self._rng_lock = threading.Lock()
        self._live_slots = threading.BoundedSemaphore(config.concurrency)
        self.max_calls: int | None = None  # a budget of live calls (crew write --max-calls); None: unbounded
        self.calls_refused = 0  # calls not made because the budget was spent
        self._calls_made = 0
        self._budget_lock = threading.Lock()
        self._json_mode_supported = config.json_mode
        self._schema_supported = config.structured_output == "json_schema"  # until the endpoint refuses it

    def _send(self, **kwargs: Any) -> Any:
        """The raw endpoint call; the OpenAI client is built on first use."""
        if self._send_fn is None:
            with self._send_lock:
                if self._send_fn is None:
                    base_url = self.base_url() if callable(self.base_url) else self.base_url
                    self._resolved_url = base_url
                    raw = openai.OpenAI(base_url=base_url, api_key=self._api_key.value,
                                        timeout=self.config.timeout_s, max_retries=0)
                    send = raw.chat.completions.create
                    self._send_fn = self.faults.wrap(send) if self.faults else send
        return self._send_fn(**kwargs)

    @property
    def endpoint(self) -> str:
        """The endpoint's URL as shown (ledger, ``summary.json``, messages): credentials in it are ``***``."""
        if self._resolved_url:
            return _URL_CREDENTIALS.sub("***@", self._resolved_url)
        return "(started on first live call)" if callable(self.base_url) else \
            _URL_CREDENTIALS.sub("***@", str(self.base_url))

    @staticmethod
    def _key_from_environment(var: str) -> str:
        if not var:
            return "not-needed"  # local servers (vLLM, Ollama) that take no key
        key = os.environ.get(var)
        if not key:
            raise EndpointError(
                f"the endpoint's API key is read from ${var}, which is not set; export it "
                f"(or set llm.api_key_env to '' for a local server that needs no key)"
            )
        return key

    def redact(self, text: str) -> str:
        """``text`` with the API key, any bearer token and a URL's user and password replaced by ``***``."""
        key = self._api_key.value
        if key and key != "not-needed" and len(key) >= 4:
            text = text.replace(key, "***")
        return _URL_CREDENTIALS.sub("***@", _BEARER.sub(r"\1***", text))

    def __repr__(self) -> str:  # never shows the key
        return f"LLMClient(endpoint={self.endpoint!r}, model={self.model!r}, cache={self.cache.mode!r})"

    # ------------------------------------------------------------------ plain chat
    def chat(self, messages: Sequence[dict[str, str]], *, caller: Caller | None = None,
             temperature: float | None = None, max_tokens: int | None = None, json_mode: bool = False,
             sample_index: int = 0, prompt_version: str = "", schema: type[pydantic.BaseModel] | None = None,
             reask: str = "") -> ChatResult:
        """One chat completion. Returns the text and its ledger record.

        ``schema`` (with ``json_mode``): the answer's JSON schema, sent as a constrained-decoding request
        (``response_format: json_schema``) when ``llm.structured_output`` says so and the endpoint has not
        refused it; an endpoint that refuses it (HTTP 4xx naming the format) is asked with ``json_object`` from
        then on, the refusal recorded in the ledger. ``reask``: why this call repeats an earlier one (ledger).
        Raises :class:`RetryExhaustedError`, :class:`EndpointError` or :class:`CacheMissError`.
        """
        use_json = json_mode and self._json_mode_supported
        use_schema = use_json and schema is not None and self._schema_supported
        request = self._request(messages, temperature, max_tokens, sample_index, prompt_version,
                                schema_format(schema) if use_schema else {"type": "json_object"} if use_json else None)
        key = request_key(request)
        caller = caller or Caller()
        started, t0 = time.time(), time.perf_counter()
        cached = self._from_cache(request, key, caller, started, t0, reask)
        if cached is not None:
            return cached
        spent = self._spend_budget()
        if spent is not None:
            self.ledger.record(caller, self.model, key, started_at=started, error=spent, reask=reask)
            raise spent
        try:
            response, content, retries = self._send_with_retries(request)
        except EndpointError as exc:
            if use_schema and _refuses_format(str(exc)):
                # The endpoint refused constrained decoding: recorded once, then json_object with the schema in the
                # prompt (what chat_json always writes there).
                self._schema_supported = False
                self.ledger.record(caller, self.model, key, started_at=started, latency_s=time.perf_counter() - t0,
                                   error=exc, reask="schema_refused")
                return self.chat(messages, caller=caller, temperature=temperature, max_tokens=max_tokens,
                                 json_mode=json_mode, sample_index=sample_index, prompt_version=prompt_version,
                                 reask=reask)
            if use_json and "response_format" in str(exc):
                # The endpoint has no JSON mode: remember that and ask without it.
                self._json_mode_supported = False
                return self.chat(messages, caller=caller, temperature=temperature, max_tokens=max_tokens,
                                 json_mode=json_mode, sample_index=sample_index, prompt_version=prompt_version)
            self.ledger.record(caller, self.model, key, started_at=started,
                               latency_s=time.perf_counter() - t0, error=exc, reask=reask)
            raise
        except LLMError as exc:
            self.ledger.record(caller, self.model, key, started_at=started, latency_s=time.perf_counter() - t0,
                               retries=getattr(exc, "attempts", 1) - 1, error=exc, reask=reask)
            raise
        return self._store(request, key, response, content, retries, caller, started, t0, reask)

    def _request(self, messages, temperature, max_tokens, sample_index, prompt_version, response_format) -> dict:
        """The canonical request (what is sent, and what the cache key is computed from)."""
        cfg = self.config
        return canonical_request(
            model=self.model, messages=list(messages),
            temperature=cfg.temperature if temperature is None else temperature,
            top_p=cfg.top_p, max_tokens=cfg.max_tokens if max_tokens is None else max_tokens,
            frequency_penalty=cfg.frequency_penalty, seed=cfg.seed, response_format=response_format,
            sample_index=sample_index, prompt_version=prompt_version,
        )

    def _from_cache(self, request: dict, key: str, caller: Caller, started: float, t0: float,
                    reask: str) -> ChatResult | None:
        """The cached answer to ``request`` (recorded in the ledger as a hit), or None; a replay-only miss is
        recorded and raised."""
        try:
            hit = self.cache.get(request, key)
        except CacheMissError as exc:  # in the ledger too: a generation that met one is an error (experiments)
            self.ledger.record(caller, self.model, key, started_at=started, latency_s=time.perf_counter() - t0,
                               error=exc, reask=reask)
            raise
        if hit is None:
            return None
        record = self.ledger.record(caller, hit.model, key, started_at=started,
                                    prompt_tokens=hit.prompt_tokens, completion_tokens=hit.completion_tokens,
                                    latency_s=time.perf_counter() - t0, cache_hit=True,
                                    recorded_latency_s=hit.latency_s, reask=reask, cut=hit.finish_reason == "length")
        return ChatResult(hit.content, record, finish_reason=hit.finish_reason)

    def _store(self, request: dict, key: str, response, content: str, retries: int, caller: Caller, started: float,
               t0: float, reask: str) -> ChatResult:
        """A live answer cached and recorded in the ledger."""
        latency = time.perf_counter() - t0
        usage = getattr(response, "usage", None)
        answer = CachedAnswer(
            content=content, model=response.model or self.model,
            prompt_tokens=int(getattr(usage, "prompt_tokens", 0) or 0),
            completion_tokens=int(getattr(usage, "completion_tokens", 0) or 0),
            finish_reason=getattr(response.choices[0], "finish_reason", None),
            latency_s=round(latency, 4),
        )
        self.cache.put(request, key, answer)
        record = self.ledger.record(caller, answer.model, key, started_at=started,
                                    prompt_tokens=answer.prompt_tokens, completion_tokens=answer.completion_tokens,
                                    latency_s=latency, retries=retries, prompt_tokens_cached=cached_prompt_tokens(
                                        response), reask=reask, cut=answer.finish_reason == "length")
        return ChatResult(content, record, finish_reason=answer.finish_reason)

    def _send_with_retries(self, request: dict[str, Any]) -> tuple[Any, str, int]:
        """The checked response, its text and the number of retries it took."""
        cfg = self.config
        kwargs: dict[str, Any] = {
            "model": request["model"], "messages": request["messages"],
            "temperature": request["temperature"], "top_p": request["top_p"],
            "max_tokens": request["max_tokens"],
        }
        if request["frequency_penalty"]:
            kwargs["frequency_penalty"] = request["frequency_penalty"]
        if request["seed"] is not None:  # a deliberate repeated sample asks a seeded endpoint for a fresh one
            kwargs["seed"] = sent_seed(request)
        if request["response_format"]:
            kwargs["response_format"] = request["response_format"]
        last: BaseException | None = None
        attempts = cfg.max_retries + 1
        deadline = time.monotonic() + cfg.deadline_s
        made = 0
        for attempt in range(attempts):
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                break
            made += 1
            try:
                with self._live_slots:
                    response = self._send(**kwargs, timeout=min(cfg.timeout_s, remaining))
                response, content = checked_completion(response)
                return response, self.redact(content), attempt  # an endpoint that echoes the key keeps it
            except (openai.OpenAIError, MalformedResponseError) as exc:
                if not _is_retryable(exc):
                    status = getattr(exc, "status_code", "?")
                    raise EndpointError(self.redact(
                        f"{self.endpoint} refused the request (HTTP {status}): {exc}")) from None
                last = exc
            except ValueError as exc:  # the body claimed JSON and was not (truncated, an HTML page ...)
                last = MalformedResponseError(f"the endpoint's answer is not valid JSON: {exc}")
            if attempt + 1 < attempts:
                wait = self._backoff(attempt)
                asked = retry_after_s(last)
                if asked is not None:
                    wait = max(wait, min(asked, cfg.retry_after_max_s))
                if wait >= deadline - time.monotonic():
                    break
                self._sleep(wait)
        why = f"{type(last).__name__}: {last}" if last is not None else "no attempt made"
        stop = (f"all {attempts} attempts (llm.max_retries + 1) failed" if made == attempts else
                f"the call's deadline llm.deadline_s = {cfg.deadline_s:g} s ran out after {made} attempt(s)")
        raise RetryExhaustedError(self.redact(
            f"{self.endpoint}: {stop}; each attempt waits at most llm.timeout_s = {cfg.timeout_s:g} s "
            f"(last: {why}); check that the endpoint is up, or raise llm.max_retries / llm.deadline_s"),
            attempts=made, last_error=last,
        )

    def _spend_budget(self) -> BudgetExhaustedError | None:
        """One live call taken from the budget (``max_calls``), or the error that it is spent (the call not made;
        the answers so far are cached, so a rerun with a larger budget pays for none of them again)."""
        with self._budget_lock:
            if self.max_calls is not None and self._calls_made >= self.max_calls:
                self.calls_refused += 1
                return BudgetExhaustedError(f"the budget of {self.max_calls} LLM calls is spent; the call was not "
                                            "made")
            self._calls_made += 1
        return None

    def _backoff(self, attempt: int) -> float:
        """Exponential backoff with 'equal jitter': half fixed, half random."""
        cap = min(self.config.backoff_max_s, self.config.backoff_base_s * 2**attempt)
        with self._rng_lock:
            return cap / 2 + self._rng.uniform(0, cap / 2)

    # ------------------------------------------------------------------ JSON answers
    def chat_json(self, messages: Sequence[dict[str, str]], schema: type[T], *, caller: Caller | None = None,
                  temperature: float | None = None, max_tokens: int | None = None,
                  sample_index: int = 0, prompt_version: str = "", describe_schema: bool = True) -> ChatResult:
        """Ask for a JSON object valid for ``schema``; re-ask ``llm.reasks`` times (1) with what was wrong.

        Returns a :class:`ChatResult` whose ``parsed`` is the schema instance. Raises
        :class:`OutputValidationError` when the last re-asked answer is still invalid; callers turn
        that into a counted fallback.
        """
        msgs = [dict(m) for m in messages]
        if describe_schema:
            msgs[-1]["content"] = f"{msgs[-1]['content']}\n\n{schema_instruction(schema)}"
        opts = dict(caller=caller, temperature=temperature, max_tokens=max_tokens, json_mode=True,
                    sample_index=sample_index, prompt_version=prompt_version, schema=schema)
        answer = self.chat(msgs, **opts)
        conversation, first_cut = msgs, None
        for reasks in range(self.config.reasks + 1):  # reasks: the re-asks made so far
            try:
                return ChatResult(answer.content, answer.record, parse_json_answer(answer.content, schema),
                                  answer.finish_reason)
            except JSONAnswerError as exc:
                problem = exc
            if reasks == self.config.reasks:
                break  # every re-ask spent
            cut = answer.finish_reason == "length" and self.config.reask_cut
            first_cut = cut if first_cut is None else first_cut
            if cut:  # most invalid answers of a small model are cut ones: ask for less, not for a correction
                limit = max_tokens or self.config.max_tokens
                again = (f"That answer was cut off at the length limit ({limit} tokens) before the JSON object was "
                         "complete. Reply again with the complete JSON object, with shorter texts "
                         "(about half as long).")
            else:
                again = f"That answer was not usable: {problem}. Reply again with only the corrected JSON object."
            conversation = conversation + [{"role": "assistant", "content": answer.content},
                                           {"role": "user", "content": again}]
            answer = self.chat(conversation, **opts, reask="cut" if cut else "invalid")
        if first_cut and answer.finish_reason == "length":
            how = "cut at the token limit twice" if reasks == 1 else f"cut at the token limit {reasks + 1} times"
        else:
            how = {0: "without a re-ask", 1: "after one re-ask"}.get(reasks, f"after {reasks} re-asks")
        raise OutputValidationError(f"{self.model} gave no valid {schema.__name__} JSON {how}: {problem}",
                                    raw=answer.content, validation_error=str(problem)) from problem

    # ------------------------------------------------------------------ batches
    def run(self, request: ChatRequest) -> ChatResult:
        opts = dict(caller=request.caller, temperature=request.temperature, max_tokens=request.max_tokens,
                    sample_index=request.sample_index, prompt_version=request.prompt_version)
        if request.schema is not None:
            return self.chat_json(request.messages, request.schema, **opts)
        return self.chat(request.messages, json_mode=request.json_mode, **opts)

    def batch(self, requests: Sequence[ChatRequest], *, max_concurrency: int | None = None,
              return_exceptions: bool = False) -> list[ChatResult | LLMError]:
        """Run requests concurrently (at most ``max_concurrency``, default ``config.concurrency``).

        Results come back in request order. With ``return_exceptions`` an :class:`LLMError`
        takes its request's place; otherwise the first error (in order) is raised after every
        request has finished, so no completed answer is lost from the cache or ledger.
        """
        if not requests:
            return []
        bound = max(1, min(len(requests), max_concurrency or self.config.concurrency))
        with ThreadPoolExecutor(max_workers=bound, thread_name_prefix="llm") as pool:
            futures = [pool.submit(self.run, r) for r in requests]
            outcomes: list[ChatResult | LLMError] = []
            for fut in futures:
                try:
                    outcomes.append(fut.result())
                except LLMError as exc:
                    outcomes.append(exc)
        if not return_exceptions:
            for item in outcomes:
                if isinstance(item, LLMError):
                    raise item
        return outcomes
