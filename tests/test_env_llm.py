"""The LLM executor against a scripted endpoint: valid answers, bad answers, failures, concurrency."""

from __future__ import annotations

import json
import re
import time

import pytest
from fakes import Step
from quick_settings import env_config, quick_executor

from crewlib.data import SAMPLE_FILES, load_oarelatedwork
from crewlib.env import Action, CrewEnv
from crewlib.text import sentences

# One answer that satisfies every role's schema (extra fields are ignored by each schema).
VALID = json.dumps({"notes": ["The reference pretrains a hierarchical encoder [R1]."], "confidence": 0.7,
                    "text": "Hierarchical encoders were pretrained on unlabelled documents [R1].",
                    "segment_id": None, "resolves": [],
                    "feedback": [{"kind": "style", "segment_id": 0, "text": "too short"}]})


@pytest.fixture(scope="module")
def examples():
    return load_oarelatedwork(SAMPLE_FILES["oarelatedwork"])[0]


def make_env(examples, make_client, server, compose_form="paragraph", **cfg):
    """VALID answers a new paragraph as one text (``executor.compose_form: paragraph``), and its one note, the
    same for every work read, is not checked against the target (``executor.check_notes``)."""
    client = make_client(server, cache_mode="off", max_retries=1, concurrency=3)
    executor = quick_executor(client, compose_form=compose_form, check_notes=False)
    return CrewEnv(examples, executor, env_config(**cfg)), client


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


def test_a_marker_after_the_full_stop_moves_in_but_one_opening_the_next_sentence_stays():
    from crewlib.env.llm_executor import one_paragraph

    text = "They differ in details. [R1] uses a linear cost, while [R2] pretrains. It scales. [R3]\n"
    kept = "They differ in details. [R1] uses a linear cost, while [R2] pretrains. It scales [R3]."
    assert one_paragraph(text) == kept
    assert one_paragraph("A holds. [R1]. B holds [R2].") == "A holds [R1]. . B holds [R2]."  # stray: finish_section
    assert one_paragraph(text, keep_opening_markers=False).startswith("They differ in details [R1]. uses")


def test_a_paragraph_citing_keys_it_was_not_given_loses_those_sentences_not_the_answer():
    """Demo, target 0: a new paragraph on [R1] and [R6] also wrote about [R3] and [R5]; it was re-asked, then lost."""
    import pydantic

    from crewlib.env.llm_executor import compose_schema

    text = "WebText trains decoders [R1]. PPO clips the ratio [R3]. Headlines are generated word by word [R6]."
    salvaged = compose_schema(frozenset({"R1", "R6"}), salvage=True)
    assert salvaged.model_validate({"text": text}).text == ("WebText trains decoders [R1]. Headlines are generated "
                                                              "word by word [R6].")
    assert salvaged.dropped == 1
    meta = "WebText trains decoders [R1]. This paragraph summarises the notes above."
    assert salvaged.model_validate({"text": meta}).text == "WebText trains decoders [R1]." and salvaged.dropped == 1
    with pytest.raises(pydantic.ValidationError, match="keys it was not given"):
        compose_schema(frozenset({"R1", "R6"})).model_validate({"text": text})  # salvage off: re-asked
    with pytest.raises(pydantic.ValidationError, match="keys it was not given"):
        salvaged.model_validate({"text": "PPO clips the ratio [R3]. Both are strong [R5]."})  # nothing of its own


@pytest.mark.parametrize("own_first", [True, False])
def test_the_only_reader_of_a_work_writes_it_up_before_taking_a_revision(examples, make_client, scripted_server,
                                                                        own_first):
    """Demo, target 0: agent 0 revised paragraph 0 twice while its unshared notes on two works were never written."""
    from crewlib.env.executors import ActionRequest
    from crewlib.env.workspace import Note

    env, client = make_env(examples, make_client, scripted_server)
    env.reset(seed=0, options={"example_index": 0})
    ws, task = env.ws, env.current_task
    refs = [r.id for r in task.references if r.abstract][:4]
    ws.write_segment(1, f"A first paragraph on two works [{task.id_to_key[refs[0]]}].", None, 1)
    ws.add_feedback("style", ws.draft[0].id, "too short", 2)
    ws.add_local(0, [Note(f"Finding of {r} [{task.id_to_key[r]}].", (r,), 0) for r in refs[1:3]])
    executor = quick_executor(client, own_notes_first=own_first)
    [job] = executor.plan(ws, task, [ActionRequest(0, Action.COMPOSE)])
    if own_first:
        assert job.segment_id is None and {s for n in job.notes for s in n.sources} == set(refs[1:3])
    else:
        assert job.segment_id == ws.draft[0].id


def test_a_new_paragraph_as_keyed_sentences_cites_each_work_by_construction(examples, make_client, scripted_server):
    """compose_form: sentences — the key is a field that only a given key fills; the paragraph is built from them."""
    env, client = make_env(examples, make_client, scripted_server, compose_form="sentences")
    env.reset(seed=0, options={"example_index": 0})
    def note(request):
        key = re.search(r"(?:findings of |The reference, )\[(R\d+)\]", request["messages"][-1]["content"]).group(1)
        topic = ["graph kernels", "protein folding", "speech codecs", "robot grasping", "ocean tides", "tax law"]
        return json.dumps({"notes": [f"It studies {topic[int(key[1:]) % 6]} [{key}]."], "confidence": 0.7})

    scripted_server.default = Step(200, note)
    env.step({a: Action.RETRIEVE for a in env.agents})
    env.step({a: Action.DISSEMINATE for a in env.agents})
    keys = []

    def answer(request):
        prompt = request["messages"][-1]["content"]
        if "as a list of sentences" not in prompt:  # the other agents' Retrieve
            return note(request)
        keys[:] = re.search(r"about these works only, ([R0-9, ]+), as a list", prompt).group(1).split(", ")
        schema = request["response_format"]["json_schema"]["schema"]
        assert set(schema["$defs"]["Sentence"]["properties"]["key"]["enum"]) == set(keys)
        return json.dumps({"sentences": [{"key": k, "text": f"Work {k} does something new"} for k in keys]
                          + [{"key": keys[0], "text": "This paragraph summarises the notes."}]})

    scripted_server.default = Step(200, answer)
    env.step({"agent_0": Action.COMPOSE, "agent_1": Action.RETRIEVE, "agent_2": Action.RETRIEVE})
    assert len(env.ws.draft) == 1, env.trace.rounds[-1]["proposals"]
    [segment] = env.ws.draft
    assert segment.text == " ".join(f"Work {k} does something new [{k}]." for k in keys) and len(keys) >= 2
    assert env.executor.dropped == 1  # the sentence about the writing


def test_a_keyed_sentence_gets_its_key_before_a_clean_stop():
    from crewlib.env.llm_executor import with_citation

    assert with_citation("It clips the ratio, and more,", "R3") == "It clips the ratio, and more [R3]."
    assert with_citation("The authors of [R3] align words", "R3") == "The authors of [R3] align words."
    assert with_citation("Does it scale?", "R3") == "Does it scale [R3]?"


def test_a_note_about_the_target_instead_of_the_work_read_is_caught():
    """Demo, target 1, round 5: reading Bahdanau et al., the 1.5B wrote "ProphetNet extends the Transformer ..."."""
    from types import SimpleNamespace

    from crewlib.data.records import Reference
    from crewlib.env.llm_executor import about_target

    task = SimpleNamespace(title="ProphetNet: Predicting Future N-gram for Sequence-to-Sequence Pre-training",
                           abstract="ProphetNet predicts the next several tokens at each time step instead of one, "
                                    "which encourages the model to plan for future tokens.")
    bahdanau = Reference("b", "Neural Machine Translation by Jointly Learning to Align and Translate",
                         "A soft weighting over all encoder states gives a step-specific context; the model matches "
                         "phrase-based systems on English-French data.")
    assert about_target("ProphetNet outperforms phrase-based systems on English-French data.", task, bahdanau)
    assert about_target("The model predicts the next several tokens at each time step to plan for future tokens.",
                        task, bahdanau)
    assert not about_target("The decoder computes a soft weighting over all encoder states.", task, bahdanau)


def test_notes_cut_by_the_length_cap_are_mended_into_whole_sentences():
    """A benchmark paper: the 320-character cap cut a note at "... words and sentences. The", and the model went on
    with "models improve on ..." as the next note; the composer then wrote "The [R4]. models improve ..."."""
    from crewlib.env.llm_executor import mend_notes

    notes = ["The authors add several extensions. These include hierarchical attention over words and sentences. The",
             "models improve on prior results for Gigaword.", "It also releases a benchmark. It reports the fir"]
    assert mend_notes(notes) == ["The authors add several extensions. These include hierarchical attention over words "
                                 "and sentences. The models improve on prior results for Gigaword.",
                                 "It also releases a benchmark."]
    assert mend_notes(["A short note without a stop"]) == ["A short note without a stop"]


def test_a_revision_that_lost_every_citation_gets_its_works_keys_back(examples, make_client, scripted_server):
    """Benchmark, C08-1066: three revisions came back with no citation at all and were lost as invalid."""
    from crewlib.env.executors import ActionRequest
    from crewlib.env.llm_executor import Job
    from crewlib.env.workspace import Note

    env, client = make_env(examples, make_client, scripted_server)
    env.reset(seed=0, options={"example_index": 0})
    ws, task = env.ws, env.current_task
    ref = next(r for r in task.references if r.abstract)
    k = task.id_to_key[ref.id]
    first = sentences(ref.abstract)[0]
    ws.add_local(0, [Note(f"{first} [{k}]", (ref.id,), 0)])
    ws.write_segment(0, f"{first} [{k}].", None, 1)
    job = Job(ActionRequest(0, Action.COMPOSE), segment_id=ws.draft[0].id)
    answer = {"text": f"{first.rstrip('.')}. This paragraph summarises the ideas above."}
    salvaging = quick_executor(client, salvage_paragraphs=True)
    salvaged = salvaging.schema(ws, task, job).model_validate(answer)
    assert salvaged.text.startswith(f"{first.rstrip('.')} [{k}].")
    with pytest.raises(Exception, match="cites nothing"):
        quick_executor(client, salvage_paragraphs=False).schema(ws, task, job).model_validate(answer)


@pytest.mark.parametrize("edition", ["current", "recorded"])
def test_one_critique_call_a_round_and_none_on_a_draft_reviewed_as_it_stands(examples, make_client, scripted_server,
                                                                              edition):
    """Demo target 0 (issue 47): two critics of round 6 sent the same 955-token prompt, and a draft reviewed and
    unchanged was shown again; since edition 2026-12-06.1 one Critique call a round, none on a reviewed draft."""
    from crewlib.env.executors import ActionRequest
    from crewlib.env.llm_executor import Job
    from crewlib.prompts import RECORDED_EDITION

    env, client = make_env(examples, make_client, scripted_server)
    env.reset(seed=0, options={"example_index": 0})
    ws, task = env.ws, env.current_task
    executor = quick_executor(client)
    if edition == "recorded":
        executor.edition = RECORDED_EDITION
    executor.reset(0)
    ref = next(r for r in task.references if r.abstract)
    ws.write_segment(1, f"{ref.title} is one work on the topic [{task.id_to_key[ref.id]}].", None, 1)
    critics = [ActionRequest(i, Action.CRITIQUE) for i in range(3)]
    planned = executor.plan(ws, task, critics)
    calls = [p for p in planned if isinstance(p, Job)]
    if edition == "recorded":  # the recorded answers' requests: every critic without text findings calls
        assert len(calls) == 3 - sum(bool(getattr(p, "feedback", None)) for p in planned if not isinstance(p, Job))
        return
    assert len(calls) == 1
    assert [p.fallback for p in planned if not isinstance(p, Job) and not p.feedback] \
        == ["a teammate reviews the draft this round"] * (2 - sum(bool(getattr(p, "feedback", None))
                                                                  for p in planned if not isinstance(p, Job)))
    executor._reviewed |= {(s.id, s.version) for s in ws.draft}  # the round's call answered
    again = executor.plan(ws, task, critics[:1])
    assert not isinstance(again[0], Job) and again[0].fallback in ("the draft was reviewed as it stands", None)
    ws.write_segment(2, f"{ref.title} is one work on this topic [{task.id_to_key[ref.id]}].", ws.draft[0].id, 3)
    assert any(isinstance(p, Job) for p in executor.plan(ws, task, critics[:1]))


@pytest.mark.parametrize("share_as_is, calls", [(9, 0), (3, 1)])
def test_notes_few_enough_are_shared_as_they_are_without_a_call(examples, make_client, scripted_server, share_as_is,
                                                               calls):
    """Disseminate condensed 4 to 9 one-sentence notes with a call (10% of the demo's tokens); since
    ``executor.share_as_is: 9`` they are shared as they are, and more are still condensed."""
    from crewlib.env.executors import ActionRequest
    from crewlib.env.llm_executor import Job
    from crewlib.env.workspace import Note

    env, client = make_env(examples, make_client, scripted_server)
    env.reset(seed=0, options={"example_index": 0})
    ws, task = env.ws, env.current_task
    refs = [r.id for r in task.references][:3]
    ws.add_local(0, [Note(f"The work {r} {verb} a method [{task.id_to_key[r]}].", (r,), 0)
                     for r in refs for verb in ("proposes", "evaluates")])
    [planned] = quick_executor(client, share_as_is=share_as_is).plan(ws, task, [ActionRequest(0, Action.DISSEMINATE)])
    assert isinstance(planned, Job) == bool(calls)
    if not calls:
        assert len(planned.notes) == 6 and planned.fallback is None
