"""The LLM client against a scripted local HTTP server: retries, errors, JSON, ledger, batches."""

from __future__ import annotations

import time

import pydantic
import pytest
from fakes import Step

from crewlib.llm import (
    Caller,
    ChatRequest,
    EndpointError,
    FaultInjector,
    OutputValidationError,
    RetryExhaustedError,
)
from crewlib.llm.client import LLMClient, schema_format
from crewlib.llm.settings import llm_config

HELLO = [{"role": "user", "content": "hello"}]


class Verdict(pydantic.BaseModel):
    score: int = pydantic.Field(ge=1, le=5)
    rationale: str


def test_retries_429_and_500_then_succeeds(make_client, scripted_server):
    scripted_server.push(Step(429), Step(500), Step(503), Step(200, "fine"))
    client = make_client(scripted_server)
    result = client.chat(HELLO, caller=Caller("sys", "role", 2))
    assert result.content == "fine"
    assert result.record.retries == 3 and result.record.error is None
    assert len(scripted_server.requests) == 4
    # exponential backoff with jitter: each wait within [cap/2, cap], caps 1, 2, 4 s
    for wait, cap in zip(client.sleeps, [1.0, 2.0, 4.0], strict=True):
        assert cap / 2 <= wait <= cap


def test_retries_are_bounded_then_typed_error(make_client, scripted_server):
    scripted_server.push(*[Step(500)] * 10)
    client = make_client(scripted_server, max_retries=2)
    with pytest.raises(RetryExhaustedError) as err:
        client.chat(HELLO)
    assert err.value.attempts == 3 and len(scripted_server.requests) == 3
    (record,) = client.ledger.records
    assert record.error.startswith("RetryExhaustedError") and record.retries == 2


def test_timeout_is_retried(make_client, scripted_server):
    scripted_server.push(Step(200, "slow", delay_s=1.5), Step(200, "quick"))
    client = make_client(scripted_server, timeout_s=0.5)
    assert client.chat(HELLO).content == "quick"


def test_client_error_is_not_retried(make_client, scripted_server):
    scripted_server.push(Step(400, error_message="bad request"), Step(200, "never"))
    client = make_client(scripted_server)
    with pytest.raises(EndpointError, match="HTTP 400"):
        client.chat(HELLO)
    assert len(scripted_server.requests) == 1


def test_unreachable_endpoint_gives_a_clear_error(tmp_path):
    cfg = llm_config(provider="openai", base_url="http://127.0.0.1:9/v1", model="m", api_key_env="",
                    max_retries=1, timeout_s=1.0, cache_mode="off")
    client = LLMClient(cfg, sleep=lambda s: None)
    with pytest.raises(RetryExhaustedError, match="127.0.0.1:9.*all 2 attempts"):
        client.chat(HELLO)


def test_missing_api_key_names_the_variable(monkeypatch):
    monkeypatch.delenv("CREW_TEST_UNSET_KEY", raising=False)
    cfg = llm_config(provider="openai", base_url="http://127.0.0.1:9/v1", model="m", api_key_env="CREW_TEST_UNSET_KEY")
    with pytest.raises(EndpointError, match=r"\$CREW_TEST_UNSET_KEY"):
        LLMClient(cfg)


def test_json_mode_falls_back_when_the_endpoint_lacks_it(make_client, scripted_server):
    scripted_server.push(Step(400, error_message="response_format is not supported"), Step(200, '{"a": 1}'))
    client = make_client(scripted_server)
    assert client.chat(HELLO, json_mode=True).content == '{"a": 1}'
    assert "response_format" in scripted_server.requests[0] and "response_format" not in scripted_server.requests[1]


def test_chat_json_strips_fences_and_validates(make_client, scripted_server):
    scripted_server.push(Step(200, 'Sure!\n```json\n{"score": 4, "rationale": "clear"}\n```'))
    client = make_client(scripted_server)
    result = client.chat_json(HELLO, Verdict)
    assert result.parsed == Verdict(score=4, rationale="clear")
    assert scripted_server.requests[0]["response_format"]["type"] == "json_schema"
    assert "shaped like this example" in scripted_server.requests[0]["messages"][-1]["content"]


def test_chat_json_reasks_once_with_the_validation_error(make_client, scripted_server):
    scripted_server.push(Step(200, '{"score": 9, "rationale": "x"}'), Step(200, '{"score": 3, "rationale": "x"}'))
    client = make_client(scripted_server)
    assert client.chat_json(HELLO, Verdict).parsed.score == 3
    reask = scripted_server.requests[1]["messages"]
    assert reask[-2] == {"role": "assistant", "content": '{"score": 9, "rationale": "x"}'}
    assert "score" in reask[-1]["content"] and "less than or equal to 5" in reask[-1]["content"]
    assert client.ledger.totals()["calls"] == 2


def test_chat_json_gives_a_typed_error_after_the_reask(make_client, scripted_server):
    scripted_server.push(Step(200, "no json here"), Step(200, '{"score": "high"'))
    client = make_client(scripted_server)
    with pytest.raises(OutputValidationError) as err:
        client.chat_json(HELLO, Verdict)
    assert err.value.raw == '{"score": "high"' and "not valid JSON" in err.value.validation_error
    assert len(scripted_server.requests) == 2


@pytest.mark.parametrize(("reasks", "calls", "how"), [(0, 1, "without a re-ask"), (2, 3, "after 2 re-asks")])
def test_the_number_of_reasks_is_a_setting(make_client, scripted_server, reasks, calls, how):
    scripted_server.default = Step(200, "no json here")
    client = make_client(scripted_server, reasks=reasks)
    with pytest.raises(OutputValidationError, match=how):
        client.chat_json(HELLO, Verdict)
    assert len(scripted_server.requests) == calls
    if reasks == 2:  # each re-ask carries the whole exchange so far
        assert len(scripted_server.requests[2]["messages"]) == len(scripted_server.requests[0]["messages"]) + 4
    assert [r.reask for r in client.ledger.records] == ["", *["invalid"] * reasks]


def test_ledger_totals_and_cache_hits_cost_nothing(make_client, scripted_server, tmp_path):
    client = make_client(scripted_server)
    client.chat(HELLO, caller=Caller("crew", "compose", 0))
    client.chat(HELLO, caller=Caller("crew", "compose", 0))  # same request: a cache hit
    client.chat([{"role": "user", "content": "other"}], caller=Caller("srw", "reader"))
    totals = client.ledger.totals()
    assert len(scripted_server.requests) == 2
    assert totals == pytest.approx({**totals, "calls": 3, "prompt_tokens": 33, "completion_tokens": 21,
                                    "tokens": 54, "billed_tokens": 36, "cache_hits": 1, "errors": 0})
    frame = client.ledger.to_dataframe()
    assert list(frame.groupby("system").size().items()) == [("crew", 2), ("srw", 1)]
    assert frame["cache_hit"].tolist() == [False, True, False]


def test_a_repeated_sample_is_sent_with_its_own_seed_and_cached_apart(make_client, scripted_server):
    """Sample k of one prompt asks a seeded endpoint (vLLM, OpenAI) for a fresh answer: seed + k."""
    client = make_client(scripted_server, seed=7)
    client.chat(HELLO)
    client.chat(HELLO, sample_index=2)
    client.chat(HELLO, sample_index=2)  # a cache hit
    assert [r["seed"] for r in scripted_server.requests] == [7, 9]


def test_replay_mode_answers_without_the_endpoint(make_client, scripted_server, tmp_path):
    make_client(scripted_server).chat(HELLO)
    cfg = llm_config(provider="openai", base_url="http://127.0.0.1:9/v1", model="scripted-model", api_key_env="",
                    cache_mode="replay", cache_dir=str(tmp_path / "cache"))
    assert LLMClient(cfg).chat(HELLO).content == "ok"


def test_batch_runs_concurrently_and_keeps_order(make_client, scripted_server):
    client = make_client(scripted_server, concurrency=4, cache_mode="off")
    scripted_server.default = Step(200, "same", delay_s=0.4)
    requests = [ChatRequest([{"role": "user", "content": f"agent {i}"}], caller=Caller("crew", "x", i))
                for i in range(4)]
    t0 = time.perf_counter()
    results = client.batch(requests)
    elapsed = time.perf_counter() - t0
    assert [r.record.agent for r in results] == [0, 1, 2, 3]
    assert elapsed < 1.2, f"4 calls of 0.4 s took {elapsed:.2f} s: not concurrent"
    t0 = time.perf_counter()
    client.batch(requests, max_concurrency=1)
    assert time.perf_counter() - t0 >= 1.6  # the bound is honoured


def test_batch_returns_or_raises_errors_in_order(make_client, scripted_server):
    client = make_client(scripted_server, max_retries=0, concurrency=1, cache_mode="off")
    scripted_server.push(Step(200, "a"), Step(500), Step(200, "c"))
    requests = [ChatRequest([{"role": "user", "content": c}]) for c in "abc"]
    outcomes = client.batch(requests, return_exceptions=True)
    assert outcomes[0].content == "a" and isinstance(outcomes[1], RetryExhaustedError) and outcomes[2].content == "c"
    scripted_server.push(Step(500))
    with pytest.raises(RetryExhaustedError):
        client.batch(requests)
    assert client.ledger.totals()["calls"] == 6  # nothing lost from the ledger


def test_fault_injection_rate_and_determinism():
    def draws(seed):
        faults = FaultInjector(rate=0.05, seed=seed)
        send = faults.wrap(lambda **kw: "ok")
        outcome = []
        for _ in range(4000):
            try:
                outcome.append(send())
            except Exception as exc:  # noqa: BLE001 - we count every injected fault
                outcome.append(type(exc).__name__)
        return faults, outcome

    faults, first = draws(seed=7)
    assert abs(faults.observed_rate - 0.05) < 0.012
    assert set(faults.injected) == {"timeout", "connection", "rate_limit", "server_error"}
    assert draws(seed=7)[1] == first and draws(seed=8)[1] != first


def test_injected_faults_are_absorbed_by_retries(make_client, scripted_server, tmp_path):
    faults = FaultInjector(rate=0.3, seed=1)
    cfg = llm_config(provider="openai", base_url=scripted_server.base_url, model="m", api_key_env="",
                    cache_mode="off", max_retries=6)
    client = LLMClient(cfg, faults=faults, sleep=lambda s: None)
    for i in range(30):
        client.chat([{"role": "user", "content": str(i)}])
    totals = client.ledger.totals()
    assert totals["errors"] == 0 and totals["retries"] == sum(faults.injected.values()) > 0


def test_prompt_tokens_the_endpoint_cached_are_read_from_either_dialect():
    from openai.types.chat import ChatCompletion

    from crewlib.llm.client import cached_prompt_tokens

    base = {"id": "x", "object": "chat.completion", "created": 0, "model": "m",
            "choices": [{"index": 0, "finish_reason": "stop", "message": {"role": "assistant", "content": "hi"}}]}
    openai_style = ChatCompletion.model_validate({**base, "usage": {
        "prompt_tokens": 50, "completion_tokens": 2, "total_tokens": 52,
        "prompt_tokens_details": {"cached_tokens": 32}}})
    llama_style = ChatCompletion.model_validate({**base, "timings": {"cache_n": 40, "prompt_n": 10},
                                                 "usage": {"prompt_tokens": 50, "completion_tokens": 2,
                                                           "total_tokens": 52}})
    silent = ChatCompletion.model_validate({**base, "usage": {"prompt_tokens": 50, "completion_tokens": 2,
                                                              "total_tokens": 52}})
    assert [cached_prompt_tokens(r) for r in (openai_style, llama_style, silent)] == [32, 40, 0]


def test_chat_json_sends_the_schema_for_constrained_decoding_and_falls_back_once_when_refused(make_client,
                                                                                          scripted_server):
    client = make_client(scripted_server)
    scripted_server.push(Step(200, '{"score": 4, "rationale": "clear"}'))
    assert client.chat_json(HELLO, Verdict).parsed.score == 4
    sent = scripted_server.requests[0]["response_format"]
    assert sent["type"] == "json_schema" and sent["json_schema"]["schema"]["required"] == ["score", "rationale"]
    refusing = make_client(scripted_server)
    scripted_server.push(Step(400, error_message="json_schema is not supported"), Step(200, '{"score": 2, '
                                                                                            '"rationale": "ok"}'),
                         Step(200, '{"score": 3, "rationale": "ok"}'))
    assert refusing.chat_json(HELLO, Verdict, sample_index=5).parsed.score == 2
    assert refusing.chat_json(HELLO, Verdict, sample_index=6).parsed.score == 3  # asked once: json_object since
    formats = [r["response_format"]["type"] for r in scripted_server.requests[1:]]
    assert formats == ["json_schema", "json_object", "json_object"]
    assert [r.reask for r in refusing.ledger.records] == ["schema_refused", "", ""]


def test_a_cut_answer_is_asked_again_for_a_shorter_one_and_counted_apart(make_client, scripted_server):
    client = make_client(scripted_server)
    scripted_server.push(Step(200, '{"score": 4, "rationale": "a very long', finish_reason="length"),
                         Step(200, '{"score": 4, "rationale": "short"}'))
    assert client.chat_json(HELLO, Verdict, max_tokens=40).parsed.rationale == "short"
    assert "cut off at the length limit (40 tokens)" in scripted_server.requests[1]["messages"][-1]["content"]
    scripted_server.push(Step(200, '{"score": 9, "rationale": "x"}'), Step(200, '{"score": 9, "rationale": "y"}'))
    with pytest.raises(OutputValidationError, match="after one re-ask"):
        client.chat_json(HELLO, Verdict, sample_index=1)
    assert "not usable" in scripted_server.requests[3]["messages"][-1]["content"]
    assert [r.reask for r in client.ledger.records] == ["", "cut", "", "invalid"]
    scripted_server.push(*[Step(200, '{"score": 4, "rationale": "long', finish_reason="length")] * 2)
    with pytest.raises(OutputValidationError, match="cut at the token limit twice"):
        client.chat_json(HELLO, Verdict, sample_index=2)


def test_a_refused_key_is_not_taken_for_a_refused_schema(make_client, scripted_server):
    scripted_server.push(Step(401, error_message="invalid api key"))
    client = make_client(scripted_server)
    with pytest.raises(EndpointError, match="HTTP 401"):
        client.chat_json(HELLO, Verdict, sample_index=9)
    assert len(scripted_server.requests) == 1 and client._schema_supported


def test_a_schemas_max_chars_caps_its_text_fields_in_the_decoding_constraint_only(make_client, scripted_server):
    from crewlib.env.llm_executor import CritiqueOut, NotesOut, compose_schema
    from crewlib.llm.jsonout import schema_instruction

    paragraph = compose_schema(frozenset({"R1", "R2"}), max_words=120)
    spec = schema_format(paragraph)["json_schema"]["schema"]
    assert spec["properties"]["text"]["maxLength"] == 120 * 9 and spec["properties"]["text"]["minLength"] == 20
    assert schema_format(NotesOut)["json_schema"]["schema"]["properties"]["notes"]["items"]["maxLength"] == 320
    nested = schema_format(CritiqueOut)["json_schema"]["schema"]["$defs"]["FeedbackOut"]["properties"]["text"]
    assert nested["maxLength"] == 320
    # the prompt's example and the answer's validation know no cap: a long note is still accepted
    assert "maxLength" not in str(paragraph.model_json_schema()) and "maxLength" not in schema_instruction(NotesOut)
    assert NotesOut(notes=["x" * 1000]).notes[0] == "x" * 1000
    client = make_client(scripted_server)
    scripted_server.push(Step(200, '{"notes": ["a finding [R1]."]}'))
    client.chat_json(HELLO, NotesOut)
    assert scripted_server.requests[0]["response_format"]["json_schema"]["schema"]["properties"]["notes"][
        "items"]["maxLength"] == 320
