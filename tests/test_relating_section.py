"""A related-work section, not an annotated bibliography (issue 45): themes, the themed Compose, and the output checks
that keep a supported sentence on the paper's place and remove an unsupported one."""

from __future__ import annotations

import json
import re

import pydantic
import pytest
from fakes import Step
from quick_settings import QUICK, env_config, quick_executor, quick_with

from crewlib import prompts
from crewlib.actions import Action
from crewlib.data.records import Reference, RWGExample
from crewlib.env import CrewEnv
from crewlib.env.executors import ActionRequest
from crewlib.env.themed_compose import fallback_position, themed_schema
from crewlib.env.themes import LINK_BONUS, group_themes, similarity_matrix
from crewlib.positioning import is_positioning, refers_to_paper, relates_works
from crewlib.sections import OutputChecks, finish_section, paragraphs, section_faults
from crewlib.tasks import build_tasks
from crewlib.text import sentences

RL = [("r1", "Proximal policy optimization", "Proximal policy optimization clips the policy gradient objective of "
       "reinforcement learning agents."),
      ("r2", "Deep reinforcement learning from human preferences", "A reward model is learned from human comparisons "
       "of trajectory segments and optimised with reinforcement learning."),
      ("r3", "Asynchronous advantage actor-critic", "Asynchronous actor-critic agents learn reinforcement learning "
       "policies with parallel policy gradient updates.")]
RETRIEVAL = [("r4", "Dense passage retrieval", "Dense passage retrieval embeds questions and passages for open "
              "domain question answering retrieval."),
             ("r5", "Retrieval-augmented generation", "Retrieval augmented generation conditions a generator on "
              "retrieved passages for open domain question answering."),
             ("r6", "BM25 and beyond", "Sparse passage retrieval with BM25 term weighting for question answering "
              "retrieval of passages.")]
TITLE = "Fine-Tuning Language Models from Human Preferences"
ABSTRACT = ("We apply reward learning from human preferences to fine-tune language models with reinforcement learning. "
            "We learn a reward model from human comparisons of summaries and optimise a policy against it. "
            "Unlike earlier work on simulated control, we study natural language tasks such as summarization.")
EXAMPLE = RWGExample("t", TITLE, ABSTRACT, tuple(Reference(i, t, a) for i, t, a in RL + RETRIEVAL), "", ())
CHECKS = OutputChecks.from_params(QUICK)
RECORDED_CHECKS = OutputChecks.from_params(quick_with(output={"repairs": [r for r in QUICK.output.repairs
                                                                         if r != "positioning"]}))


@pytest.fixture(scope="module")
def task():
    return build_tasks(QUICK, [EXAMPLE], min_connections=0).tasks["t"]


def keys(task, *ids: str) -> list[str]:
    return [task.id_to_key[i] for i in ids]


# ------------------------------------------------------------------ themes
def test_works_are_grouped_by_what_they_are_about(task):
    texts = {k: f"{r.title}. {r.abstract}" for k, r in task.reference_by_key.items()}
    themes = group_themes(task.keys, texts, {}, task.key_to_id, size=3)
    groups = sorted(sorted(task.key_to_id[k] for k in t.keys) for t in themes)
    assert groups == [["r1", "r2", "r3"], ["r4", "r5", "r6"]]


def test_a_citation_link_adds_its_bonus_to_the_two_works_it_joins_and_to_nothing_else():
    texts = ["reward models from human preferences", "policy gradient clipping", "dense passage retrieval"]
    plain = similarity_matrix(texts, [frozenset()] * 3, ["a", "b", "c"])
    linked = similarity_matrix(texts, [frozenset({"c"}), frozenset(), frozenset()], ["a", "b", "c"])
    assert linked[0, 2] == pytest.approx(plain[0, 2] + LINK_BONUS) == pytest.approx(linked[2, 0])
    assert linked[0, 1] == plain[0, 1] and linked[1, 2] == plain[1, 2]
    shared = similarity_matrix(texts, [frozenset({"z"}), frozenset({"z"}), frozenset()], ["a", "b", "c"])
    assert shared[0, 1] == pytest.approx(plain[0, 1] + LINK_BONUS)  # both cite a third paper


# ------------------------------------------------------------------ the themed Compose
WORKS = {"R1": "Proximal policy optimization clips the policy gradient objective of reinforcement learning agents.",
         "R2": "A reward model is learned from human comparisons of trajectory segments and optimised with "
               "reinforcement learning."}


def themed_answer(**changes) -> dict:
    answer = {"theme": "Reinforcement learning from feedback",
              "topic": "Reinforcement learning can optimise policies against a learned reward [R2].",
              "works": {"R1": "Proximal policy optimization clips the policy gradient objective.",
                        "R2": "This paper learns a reward model from human comparisons."},
              "comparison": "Both optimise policies with reinforcement learning, [R2] against a learned reward.",
              "comparison_keys": ["R1", "R2"], "relation": "builds_on",
              "position": "This paper builds on these works and applies reward learning from human preferences "
                          "to language models.", "confidence": 0.8}
    return {**answer, **changes}


def test_a_themed_paragraph_opens_on_its_theme_compares_its_works_and_ends_on_the_paper():
    schema = themed_schema(frozenset(WORKS), TITLE, ABSTRACT, WORKS, 0.5)
    out = schema.model_validate(themed_answer())
    parts = sentences(out.text)
    assert parts[0] == "Reinforcement learning can optimise policies against a learned reward."  # no citation
    assert parts[1].endswith("[R1].") and parts[2].startswith("The work learns")  # "This paper" meant [R2]
    assert "[R2]" in parts[3] and "[R1]" in parts[3]  # the comparison cites both works it names
    assert parts[-1] == out.position_sentence and parts[-1].startswith("This paper builds on these works")
    assert (schema.dropped, schema.comparisons_dropped, schema.positions_replaced) == (0, 0, 0)


def test_a_closing_sentence_the_papers_text_does_not_support_is_replaced_by_the_papers_own_words():
    schema = themed_schema(frozenset(WORKS), TITLE, ABSTRACT, WORKS, 0.5)
    out = schema.model_validate(themed_answer(position="This paper reaches state-of-the-art accuracy on ImageNet."))
    assert schema.positions_replaced == 1 and "ImageNet" not in out.text
    assert out.position_sentence.startswith("Building on these works, we ")  # the abstract's own sentence
    assert is_positioning(out.position_sentence, TITLE, ABSTRACT, list(WORKS.values()), 0.5)


def test_a_closing_sentence_that_restates_the_abstract_without_relating_is_replaced():
    schema = themed_schema(frozenset(WORKS), TITLE, ABSTRACT, WORKS, 0.5)
    restated = "This paper learns a reward model from human comparisons of summaries and optimises a policy against it."
    assert not relates_works(restated)
    schema.model_validate(themed_answer(position=restated))
    assert schema.positions_replaced == 1


def test_a_comparison_is_required_of_two_works_and_dropped_when_it_names_one():
    schema = themed_schema(frozenset(WORKS), TITLE, ABSTRACT, WORKS, 0.5)
    answer = themed_answer()
    del answer["comparison"]
    with pytest.raises(pydantic.ValidationError):
        schema.model_validate(answer)
    out = schema.model_validate(themed_answer(comparison="Clipping keeps policy updates small.",
                                              comparison_keys=["R1", "R1"]))
    assert schema.comparisons_dropped == 1 and "Clipping" not in out.text
    single = themed_schema(frozenset({"R1"}), TITLE, ABSTRACT, WORKS, 0.5)
    assert "comparison" not in single.model_json_schema()["properties"]


def test_the_fallback_closing_uses_a_sentence_of_the_paper_about_itself():
    closing = fallback_position("differs", ABSTRACT, WORKS["R2"])
    assert closing.startswith("Unlike these works, we learn a reward model from human comparisons")
    assert fallback_position("differs", "A study of reward models. It has results.", WORKS["R2"]) is None


# ------------------------------------------------------------------ the output checks
def section(task, closing: str, *, where: str = "end") -> str:
    r1, r2, r3 = keys(task, "r1", "r2", "r3")
    body = [f"Reinforcement learning trains agents from rewards. Proximal policy optimization clips the policy "
            f"gradient objective [{r1}].", f"A reward model is learned from human comparisons of trajectory segments "
            f"[{r2}].", f"Asynchronous actor-critic agents learn policies with parallel updates [{r3}]."]
    parts = [*body, closing] if where == "end" else [body[0], closing, *body[1:]]
    return " ".join(parts)


SUPPORTED = "Unlike these works on simulated control, this paper applies reward learning to language models."
UNSUPPORTED = "Unlike these works, this paper reaches state-of-the-art accuracy on ImageNet classification."


def test_a_supported_sentence_on_the_paper_stays_and_closes_its_paragraph(task):
    clean, report = finish_section(section(task, SUPPORTED, where="middle"), task, CHECKS)
    assert sentences(clean)[-1] == SUPPORTED and report.positioning_moved == 1
    assert report.first_person_removed == report.uncited_removed == report.positioning_unsupported == 0
    assert section_faults(clean, task, CHECKS)["positioning_sentences"] == 1
    assert {k: v for k, v in section_faults(clean, task, CHECKS).items()
            if k not in ("sentences", "cited_sentences", "positioning_sentences") and v} == {}


def test_an_unsupported_sentence_on_the_paper_is_removed_and_counted(task):
    clean, report = finish_section(section(task, UNSUPPORTED), task, CHECKS)
    assert "ImageNet" not in clean and report.positioning_unsupported == 1
    assert report.paragraphs_without_positioning == 1 and "paragraphs_without_positioning" in report.FOUND
    assert section_faults(section(task, UNSUPPORTED), task, CHECKS)["unsupported_positioning"] == 1


def test_a_paragraph_keeps_one_sentence_on_the_paper(task):
    second = "Like these works, this paper optimises a policy against a reward model learned from human comparisons."
    clean, report = finish_section(section(task, f"{SUPPORTED} {second}"), task, CHECKS)
    assert report.positioning_extra == 1 and sentences(clean)[-1] == second and SUPPORTED not in clean


def test_the_papers_abstract_restated_is_not_positioning_and_a_cited_we_is_the_authors(task):
    r4 = keys(task, "r4")[0]
    restated = "We apply reward learning from human preferences to fine-tune language models."
    copied = f"We embed questions and passages for open domain question answering retrieval [{r4}]."
    clean, report = finish_section(section(task, f"{restated} {copied}"), task, CHECKS)
    assert restated not in clean and report.first_person_removed == 1
    assert f"The authors embed questions and passages for open domain question answering retrieval [{r4}]." in clean


def test_without_the_positioning_repair_every_sentence_on_the_paper_goes_as_before(task):
    ours = "Unlike these works on simulated control, we apply reward learning to language models."
    clean, report = finish_section(section(task, ours), task, RECORDED_CHECKS)
    assert ours not in clean and report.first_person_removed == 1
    assert report.paragraphs_without_positioning == 0  # not looked for
    assert ours in finish_section(section(task, ours), task, CHECKS)[0]


def test_a_prompts_words_are_never_a_sentence_on_the_paper(task):
    clean, report = finish_section(section(task, "Unlike these works, the target paper uses human preferences."),
                                   task, CHECKS)
    assert "target paper" not in clean and report.target_descriptions == 1


# ------------------------------------------------------------------ an episode with the themed Compose
def _answer(request: dict) -> str:
    """A scripted model that answers every action from its prompt: a note is the work's abstract, a themed paragraph
    is made of the notes it was given, its closing sentence of the paper's own words."""
    prompt = request["messages"][-1]["content"]
    schema = request["response_format"]["json_schema"]["schema"] if "response_format" in request else {}
    props = schema.get("properties", {})
    if "notes" in props:
        reading = re.search(r"(?:You are reading reference|The reference,) \[(R\d+)\] [^\n]*:\n([^\n]+)", prompt)
        note = f"{sentences(reading.group(2))[0]}" if reading else "A shared note [R1]."
        return json.dumps({"notes": [note], "confidence": 0.7})
    if "theme" in props:
        allowed = list(schema["$defs"]["Works"]["properties"])
        notes = dict(re.findall(r"^- (.+?) \[(R\d+)\]$", prompt, re.M))
        by_key = {k: n for n, k in notes.items()}
        answer = {"theme": "a theme", "topic": "Several methods are studied on one theme.", "relation": "differs",
                  "works": {k: by_key.get(k, "It is a work on the theme.") for k in allowed},
                  "position": f"Unlike these works on {' '.join(by_key.get(allowed[0], 'them').split()[:3]).lower()}, "
                              f"this paper applies reward learning to language models.",
                  "confidence": 0.9}
        if "comparison" in props:
            answer |= {"comparison": f"Both {allowed[0]} and {allowed[1]} are studied with reinforcement learning.",
                       "comparison_keys": allowed[:2]}
        return json.dumps(answer)
    return json.dumps({"feedback": [], "confidence": 0.5, "notes": ["A note [R1]."], "text": "Text [R1].",
                       "segment_id": None, "resolves": []})


def test_an_episode_writes_one_theme_a_paragraph_each_ending_on_the_paper(task, make_client, scripted_server):
    scripted_server.default = Step(200, _answer)
    client = make_client(scripted_server, cache_mode="off", max_retries=0, concurrency=3)
    executor = quick_executor(client, check_notes=False)
    env = CrewEnv([EXAMPLE], executor, env_config(horizon=6), tasks=[task])
    env.reset(seed=0, options={"example_index": 0})
    for action in (Action.RETRIEVE, Action.RETRIEVE, Action.DISSEMINATE, Action.DISSEMINATE, Action.COMPOSE,
                   Action.COMPOSE):
        env.step({a: action for a in env.agents})
    report = executor.theme_report(task)
    assert report["paragraphs"] and all(p["works"] for p in report["paragraphs"])
    themes = {frozenset(t) for t in report["themes"]}
    for paragraph in report["paragraphs"]:  # each paragraph's works come from one theme of the pool
        assert any(set(paragraph["works"]) <= t for t in themes), paragraph
    blocks = paragraphs(env.trace.final_draft)
    assert blocks and all(refers_to_paper(sentences(b)[-1], TITLE) for b in blocks)
    assert executor.theme_report(task, env.trace.final_draft)["counts"]["mixed_paragraphs"] == 0
    mixed = f"{blocks[0]} {blocks[1]}" if len(blocks) > 1 else blocks[0]
    assert executor.theme_report(task, mixed)["counts"]["mixed_paragraphs"] == (len(blocks) > 1)
    compose = [r for r in scripted_server.requests if "theme" in json.dumps(r.get("response_format", {}))]
    assert compose and all(ABSTRACT in r["messages"][-1]["content"] for r in compose)  # the paper's own text
    assert all(prompts.SECTION_RULES[prompts.CURRENT_EDITION] in r["messages"][-1]["content"] for r in compose)



def test_a_critique_pays_only_for_the_paragraphs_not_reviewed_in_their_present_form(task, make_client,
                                                                                      scripted_server):
    """Edition 2026-12-06.1 (issue 47): a paragraph reviewed and unchanged is not shown to the critic again, nor are
    notes on works no shown paragraph cites."""
    scripted_server.default = Step(200, _answer)
    client = make_client(scripted_server, cache_mode="off", max_retries=0, concurrency=3)
    env = CrewEnv([EXAMPLE], quick_executor(client, check_notes=False), env_config(horizon=8), tasks=[task])
    env.reset(seed=0, options={"example_index": 0})
    for action in (Action.RETRIEVE, Action.RETRIEVE, Action.DISSEMINATE, Action.COMPOSE, Action.CRITIQUE):
        env.step({a: action for a in env.agents})
    prompts_by_role = {"critique": [r for r in scripted_server.requests
                                    if '"feedback"' in json.dumps(r.get("response_format", {}))]}
    assert prompts_by_role.get("critique") and env.ws.draft  # the draft was reviewed by an LLM call
    reviewed = {seg.id for seg in env.ws.draft}
    added = env.ws.write_segment(1, "Graph kernels compare molecules by their shared walks [R3].", None, env.t + 1)
    assert added is not None
    messages, _ = env.executor.prompt(env.ws, task, ActionRequest(0, Action.CRITIQUE, None))
    shown = messages[-1]["content"].split("Draft paragraphs (id: text):\n")[1].split("\n\n")[0]
    assert [int(line.split(":")[0]) for line in shown.splitlines()] == [added.id]  # only what changed since
    assert added.id not in reviewed

def test_the_schema_asks_one_required_field_per_work_so_no_work_is_skipped():
    schema = themed_schema(frozenset({"R1", "R2", "R7"}), TITLE, ABSTRACT, {**WORKS, "R7": "A work."}, 0.5)
    spec = schema.model_json_schema()
    assert sorted(spec["$defs"]["Works"]["required"]) == ["R1", "R2", "R7"]
    answer = themed_answer()
    with pytest.raises(pydantic.ValidationError):  # R7 has no sentence
        schema.model_validate(answer)


def test_a_revision_keeps_the_closing_its_compose_validated(task, make_client, scripted_server):
    executor = quick_executor(make_client(scripted_server, cache_mode="off"))
    old = f"Reinforcement learning optimises policies [R1]. {SUPPORTED}"
    new = ("This paper builds on BERT [R2], which pretrains deep representations. Clipping keeps updates small [R1]. "
           "This paper also solves every task.")
    revised = executor._kept_closing(old, new, task)
    assert revised == f"The work builds on BERT [R2], which pretrains deep representations. Clipping keeps updates " \
                      f"small [R1]. {SUPPORTED}"
    assert executor.themed_counts["closings_kept"] == 1


def test_keys_written_bare_become_citations():
    schema = themed_schema(frozenset(WORKS), TITLE, ABSTRACT, WORKS, 0.5)
    out = schema.model_validate(themed_answer(comparison="R1 clips its objective while R2 learns a reward from "
                                                         "human comparisons, and R9 is not given.",
                                              comparison_keys=["R1", "R2"]))
    assert "[R1] clips its objective while [R2] learns a reward" in out.text and "R9 is not given" in out.text
