"""Where the cost goes (issue 47): prompt parts measured at the template, the ledger's breakdown by action, round
and part, and CREW's calls carrying both."""

from __future__ import annotations

import json

import pytest
from fakes import Step
from quick_settings import env_config, quick_executor

from crewlib.data import SAMPLE_FILES, load_oarelatedwork
from crewlib.env import Action, CrewEnv
from crewlib.llm import Caller, Ledger
from crewlib.prompts.parts import PARTS, fill, parts_text
from crewlib.text import approx_tokens

VALID = json.dumps({"notes": ["The reference pretrains a hierarchical encoder [R1]."], "confidence": 0.7,
                    "text": "Hierarchical encoders were pretrained on unlabelled documents [R1].",
                    "segment_id": None, "resolves": [],
                    "feedback": [{"kind": "style", "segment_id": 0, "text": "too short"}]})


def test_a_filled_prompt_is_measured_by_the_fields_it_was_filled_from():
    template = "Target paper: {title}\n{abstract}\n\nNotes:\n{knowledge}\n\nDraft:\n{draft}\n\nKeys: {keys}. Write."
    filled = fill(template, title="T" * 40, abstract="a" * 400, knowledge="n" * 800, draft="d" * 200, keys="R1, R2")
    parts = dict(filled.parts)
    assert tuple(parts) == PARTS
    assert parts["target"] == 10 + 100 and parts["notes"] == 200 and parts["draft"] == 50 and parts["references"] == 0
    assert parts["fixed"] > 0 and sum(parts.values()) == approx_tokens(filled.text)
    with_system = dict(filled.with_system("s" * 80))
    assert with_system["fixed"] == parts["fixed"] + 20 and with_system["notes"] == parts["notes"]
    assert dict(fill("No fields at all.").parts)["fixed"] == approx_tokens("No fields at all.")


def test_the_ledger_breaks_the_cost_down_by_action_round_and_part():
    ledger = Ledger()
    ledger.record(Caller("crew", "retrieve", 0, 0, parts_text((("fixed", 30), ("references", 70)))), "m", "k1",
                  prompt_tokens=200, completion_tokens=20, prompt_tokens_cached=50)
    ledger.record(Caller("crew", "compose", 1, 1, parts_text((("fixed", 10), ("notes", 10)))), "m", "k2",
                  prompt_tokens=100, completion_tokens=40)
    ledger.record(Caller("crew", "compose", 2, 1), "m", "k3", prompt_tokens=60, completion_tokens=5)
    cost = ledger.breakdown()
    assert cost["by_action"]["retrieve"]["calls"] == 1 and cost["by_action"]["compose"]["calls"] == 2
    assert cost["by_action"]["compose"]["prompt_tokens"] == 160
    assert cost["by_action"]["retrieve"]["prompt_tokens_cached"] == 50
    assert cost["by_round"] == {"0": cost["by_action"]["retrieve"], "1": cost["by_action"]["compose"]}
    # each call's measured prompt tokens shared by its parts' estimates; a call without parts is unmeasured
    assert cost["by_part"] == {"fixed": 60 + 50, "references": 140, "notes": 50, "unmeasured": 60}
    assert sum(cost["by_part"].values()) == 360


@pytest.fixture(scope="module")
def examples():
    return load_oarelatedwork(SAMPLE_FILES["oarelatedwork"])[0]


def test_crew_calls_carry_their_round_and_prompt_parts(examples, make_client, scripted_server):
    scripted_server.default = Step(200, VALID)
    client = make_client(scripted_server, cache_mode="off", max_retries=1, concurrency=3)
    env = CrewEnv(examples, quick_executor(client, compose_form="paragraph", check_notes=False), env_config())
    env.reset(seed=0, options={"example_index": 0})
    for action in (Action.RETRIEVE, Action.DISSEMINATE, Action.COMPOSE):
        env.step({a: action for a in env.agents})
    records = client.ledger.records
    assert records and all(r.round is not None and r.prompt_parts for r in records)
    cost = client.ledger.breakdown()
    assert "unmeasured" not in cost["by_part"]
    assert cost["by_part"]["references"] > 0 and cost["by_part"]["target"] > 0 and cost["by_part"]["fixed"] > 0
    retrieve_round = min(int(k) for k in cost["by_round"])
    assert cost["by_round"][str(retrieve_round)]["calls"] == sum(r.role == "retrieve" for r in records)
    assert sum(cost["by_part"].values()) == pytest.approx(sum(r.prompt_tokens for r in records), abs=len(PARTS))


# ------------------------------------------------------------------ what a run will spend, planned before it starts
@pytest.fixture(scope="module")
def sample_task():
    from quick_settings import QUICK

    from crewlib.tasks import build_tasks

    examples = load_oarelatedwork(SAMPLE_FILES["oarelatedwork"])[0][:1]
    return build_tasks(QUICK, examples, min_connections=0).tasks[examples[0].target_id]


def planner(name: str, **settings):
    """The system ``name`` of the quick params with ``baselines.<name>`` changed; a client that is never called."""
    import types

    from quick_settings import quick_with

    from crewlib.baselines import make_system

    return make_system(name, quick_with(baselines={name: settings}) if settings else quick_with(),
                       types.SimpleNamespace(model="never called"))


def test_crew_plans_a_read_per_work_with_an_abstract_a_compose_per_group_and_a_review_per_two(sample_task):
    import dataclasses
    import math

    from crewlib.baselines.planned import planned_cost
    from crewlib.data.records import Reference

    readable = len(sample_task.readable_ids)
    paragraphs = math.ceil(readable / 4)  # executor.compose_sources
    condensing = sum(len(range(a, readable, 3)) * 3 > 9 for a in range(3))  # agents holding more than share_as_is
    plan = planned_cost(planner("crew", rounds="auto"), sample_task)
    assert plan.calls == readable + condensing + (paragraphs + 1) + math.ceil(paragraphs / 2)
    assert plan.prompt_tokens > 300 * readable and plan.ceiling_tokens > plan.tokens
    # a work known by its title only costs no call; a fixed number of rounds reads what its Retrieves can
    extra = Reference(id="title-only", title="A work known by its title only", abstract="")
    wider = dataclasses.replace(sample_task, references=(*sample_task.references, extra),
                                relevance={**sample_task.relevance, extra.id: 0.0},
                                centrality={**sample_task.centrality, extra.id: 0.0})
    assert planned_cost(planner("crew", rounds="auto"), wider).calls == plan.calls
    assert planned_cost(planner("crew", rounds=2), sample_task).calls < plan.calls


def test_srw_plans_its_reads_with_the_memory_growing_then_the_write(sample_task):
    from crewlib.baselines.planned import planned_cost

    few = planned_cost(planner("srw", rounds=3), sample_task)
    all_ = planned_cost(planner("srw", rounds=15), sample_task)
    readable = len(sample_task.readable_ids)
    assert few.calls == 3 + 1 and all_.calls == readable + 1
    # each later read shows a longer memory: more than proportionally more prompt tokens
    assert (all_.prompt_tokens / all_.calls) > (few.prompt_tokens / few.calls)
    assert planned_cost(planner("long_context"), sample_task) is None
