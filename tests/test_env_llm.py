"""The LLM executor against a scripted endpoint: valid answers, bad answers, failures, concurrency."""

from __future__ import annotations

import json
import time

import pytest
from fakes import Step

from crewlib.data import SAMPLE_FILES, load_oarelatedwork
from crewlib.env import Action, CrewEnv, EnvConfig
from crewlib.env.llm_executor import LLMExecutor

# One answer that satisfies every role's schema (extra fields are ignored by each schema).
VALID = json.dumps({"notes": ["The reference pretrains a hierarchical encoder [R1]."], "confidence": 0.7,
                    "text": "Hierarchical encoders were pretrained on unlabelled documents [R1].",
                    "segment_id": None, "resolves": [],
                    "feedback": [{"kind": "style", "segment_id": 0, "text": "too short"}]})


@pytest.fixture(scope="module")
def examples():
    return load_oarelatedwork(SAMPLE_FILES["oarelatedwork"])[0]


def make_env(examples, make_client, server, **cfg):
    client = make_client(server, cache_mode="off", max_retries=1, concurrency=3)
    return CrewEnv(examples, LLMExecutor(client), EnvConfig(**cfg)), client


def test_a_round_of_valid_answers_changes_the_workspace(examples, make_client, scripted_server):
    scripted_server.default = Step(200, VALID)
    env, client = make_env(examples, make_client, scripted_server)
    env.reset(seed=0, options={"example_index": 0})
    env.step({a: Action.RETRIEVE for a in env.agents})
    assert all(len(n) == 1 for n in env.ws.local_notes)
    env.step({a: Action.DISSEMINATE for a in env.agents})
    assert len(env.ws.global_notes) == 1  # three identical notes merged
    env.step({a: Action.COMPOSE for a in env.agents})
    env.step({a: Action.CRITIQUE for a in env.agents})
    assert env.ws.draft and env.ws.feedback
    round_llm = env.trace.rounds[0]["llm"]
    assert round_llm["calls"] == 3 and round_llm["tokens"] == 3 * 18 and round_llm["fallbacks"] == 0
    assert {r["role"] for r in env.trace.rounds[2]["llm"]["records"]} == {"compose"}


def test_invalid_json_becomes_a_counted_noop(examples, make_client, scripted_server):
    scripted_server.default = Step(200, "I cannot answer in JSON, sorry.")
    env, client = make_env(examples, make_client, scripted_server)
    env.reset(seed=0, options={"example_index": 0})
    _, rewards, _, _, infos = env.step({a: Action.RETRIEVE for a in env.agents})
    round_llm = env.trace.rounds[0]["llm"]
    assert round_llm["fallbacks"] == 3 and round_llm["calls"] == 6  # each agent: answer + one re-ask
    assert all("OutputValidationError" in r for r in round_llm["fallback_reasons"])
    assert not any(env.ws.local_notes) and set(rewards) == set(env.agents)


def test_schema_violations_and_endpoint_failures_are_counted(examples, make_client, scripted_server):
    scripted_server.default = Step(500)
    env, _ = make_env(examples, make_client, scripted_server)
    env.reset(seed=0, options={"example_index": 1})
    env.step({a: Action.RETRIEVE for a in env.agents})
    assert all("RetryExhaustedError" in r for r in env.trace.rounds[0]["llm"]["fallback_reasons"])
    scripted_server.default = Step(200, json.dumps({"notes": [], "confidence": 3}))
    env.step({a: Action.RETRIEVE for a in env.agents})
    assert env.trace.rounds[1]["llm"]["fallbacks"] == 3


def test_agents_call_the_model_concurrently(examples, make_client, scripted_server):
    scripted_server.default = Step(200, VALID, delay_s=0.4)
    env, _ = make_env(examples, make_client, scripted_server)
    env.reset(seed=0, options={"example_index": 2})
    t0 = time.perf_counter()
    env.step({a: Action.RETRIEVE for a in env.agents})
    assert time.perf_counter() - t0 < 1.0  # three 0.4 s calls, not 1.2 s in a row


def test_prompts_never_contain_the_gold_section(examples, make_client, scripted_server):
    scripted_server.default = Step(200, VALID)
    env, _ = make_env(examples, make_client, scripted_server, horizon=4)
    env.reset(seed=0, options={"example_index": 3})
    for action in (Action.RETRIEVE, Action.DISSEMINATE, Action.COMPOSE, Action.CRITIQUE):
        env.step({a: action for a in env.agents})
    gold_sentence = examples[3].gold_related_work.split(". ")[1]
    sent = json.dumps(scripted_server.requests)
    assert scripted_server.requests and gold_sentence not in sent


def test_every_role_opens_with_the_same_prefix(examples, make_client, scripted_server):
    """The system prompt first, identical for every role, then the target's title line for all but
    Compose: a prompt cache reuses them."""
    scripted_server.default = Step(200, VALID)
    env, _ = make_env(examples, make_client, scripted_server, horizon=4)
    env.reset(seed=0, options={"example_index": 1})
    for action in (Action.RETRIEVE, Action.DISSEMINATE, Action.COMPOSE, Action.CRITIQUE):
        env.step({a: action for a in env.agents})
    task = env.current_task
    header = f"Target paper: {task.title}\n"
    bodies = [r["messages"] for r in scripted_server.requests]
    assert len({json.dumps(m[0]) for m in bodies}) == 1  # one system prompt
    titled = [m[1]["content"] for m in bodies if not m[1]["content"].startswith("You are writing")]
    assert len(titled) >= 3 and all(u.startswith(header) for u in titled)
