"""Multi-News as the environment's input (notebook 07): the task wording, the cluster conversion, the run."""

from __future__ import annotations

import json
import re

import pytest
from fakes import Step

from crewlib import prompts
from crewlib.baselines import make_system
from crewlib.config import ParamsError, load_params
from crewlib.data.loaders import SAMPLE_FILES, load_multinews
from crewlib.data.records import MultiDocExample
from crewlib.experiments.multinews import multinews_params
from crewlib.llm import ChatRequest
from crewlib.llm.settings import llm_config
from crewlib.tasks import task_for

# The templates the systems of notebook 07 (CREW, Orchestrator, SRW, long context, RAG) and the judge send
SENT = ["AGENT_SYSTEM", "RETRIEVE", "DISSEMINATE", "COMPOSE", "REVISE", "CRITIQUE", "JUDGE_SYSTEM", "JUDGE",
        "WRITER_SYSTEM", "WRITE_SECTION", "SRW_READ", "ORCHESTRATOR"]
RELATED_WORK_WORDING = re.compile(r"related[- ]work|scientific|\bpapers?\b|\bsection\b", re.IGNORECASE)


def _templates() -> list[str]:
    return [getattr(prompts, name) for name in SENT] + [prompts.RUBRICS[d] for d in prompts.NEWS_RUBRICS]


@pytest.fixture(scope="module")
def clusters() -> list[MultiDocExample]:
    examples, report = load_multinews(SAMPLE_FILES["multinews"])
    assert report.loaded == 6 and not report.n_skipped
    return examples


def test_news_wording_leaves_no_related_work_phrase_in_what_is_sent():
    for template in _templates():
        reworded = prompts.reword(template, "news_summary")
        assert not RELATED_WORK_WORDING.search(reworded), (reworded[:200], RELATED_WORK_WORDING.findall(reworded))
        assert prompts.reword(template, "related_work") == template  # the recorded related-work prompts unchanged


def test_every_news_phrase_still_occurs_in_a_template():
    """A template edited without the table would silently keep its related-work wording for Multi-News."""
    text = "\n".join(v for k, v in vars(prompts).items() if k.isupper() and isinstance(v, str))
    text += "\n".join(prompts.RUBRICS.values()) + "\n".join(prompts.SECTION_RULES.values())
    stale = [old[:60] for old, _ in prompts.NEWS_SUMMARY if old not in text]
    assert not stale


def test_news_wording_never_touches_an_articles_own_text(clusters):
    """Only whole template phrases are replaced: "paper" in an article ("a paper test strip") stays."""
    texts = [d for c in clusters for d in c.documents] + [c.summary for c in clusters]
    assert any(re.search(r"\bpaper\b", t) for t in texts)  # the check below has something to protect
    assert all(prompts.reword(t, "news_summary") == t for t in texts)


def test_unknown_task_wording_is_refused():
    with pytest.raises(ParamsError, match="task_wording"):
        llm_config(task_wording="poetry")
    with pytest.raises(ParamsError, match="task_wording"):
        load_params("quick", {"llm": {"task_wording": "poetry"}})


def test_the_news_prompts_are_reworded_where_they_are_made_and_the_client_sends_what_it_is_given(
        make_client, scripted_server):
    scripted_server.push(Step(200, "one"), Step(200, "two"), Step(200, "three"))
    messages = [{"role": "system", "content": prompts.WRITER_SYSTEM},
                {"role": "user", "content": "Target paper: Flood in Millbeck\nWrite the related-work section."}]
    news = prompts.for_task(make_client(scripted_server), "news_summary")
    assert news.chat(messages).content == "one"
    sent = scripted_server.requests[-1]["messages"]
    assert sent[0]["content"] == "You write the summary of a news event. " + prompts.WRITER_SYSTEM.split(". ", 1)[1]
    assert sent[1]["content"].startswith("Event: Flood in Millbeck")
    # the same messages for the related-work task are another request, not the news answer from the cache
    plain = make_client(scripted_server, task_wording="news_summary")  # the setting alone changes nothing sent
    assert plain.chat(messages).content == "two"
    assert scripted_server.requests[-1]["messages"] == messages
    assert news.chat(messages).content == "one" and len(scripted_server.requests) == 2
    # every system and judge of a Multi-News run gets the reworded client; a related-work run the client itself
    mparams = multinews_params(load_params("quick"))
    client = make_client(scripted_server)
    assert isinstance(make_system("long_context", mparams, client).client, prompts.WordedClient)
    assert make_system("long_context", load_params("quick"), client).client is client
    batch = news.batch([ChatRequest(messages)])
    assert batch[0].content == "one" and len(scripted_server.requests) == 2  # a batch is reworded too (cached)


def test_a_cluster_becomes_a_fully_connected_pool_with_the_summary_as_gold(clusters):
    cluster = next(c for c in clusters if len(c.documents) == 4)
    example = cluster.to_rwg_example()
    ids = [r.id for r in example.references]
    assert len(ids) == 4 == len(set(ids)) and example.gold_cited_ids == tuple(ids)
    for ref, doc in zip(example.references, cluster.documents, strict=True):
        assert set(ref.citations) == set(ids) - {ref.id}  # every article cites every other
        assert ref.abstract == doc.strip() and doc.startswith(ref.title.rstrip(" …")[:40])
    assert example.gold_related_work == cluster.summary
    # the target's description holds no article's words beyond the event's generic vocabulary
    assert "articles" in example.abstract and cluster.documents[0][:30] not in example.abstract
    task = task_for(load_params("quick"), example)
    assert set(task.centrality.values()) == {1.0}  # fully connected: every article equally central


def test_a_long_lead_is_cut_for_the_title():
    cluster = MultiDocExample("x", ("word " * 40 + "end. Second sentence.", "Another article here."), "Summary.")
    example = cluster.to_rwg_example(title_words=10)
    assert example.references[0].title == "word " * 9 + "word …"
    assert example.title == example.references[0].title


def test_run_multinews_without_an_llm_scores_rouge_and_the_paper_beside(tmp_path):
    from crewlib.experiments.multinews import run_multinews

    params = load_params("quick", {"llm": {"cache_dir": str(tmp_path / "cache")},
                                   "features": {"cache_dir": str(tmp_path / "features")}})
    run = run_multinews(params, systems=["extractive"], targets=3, metrics=["citation", "rouge"],
                        out_dir=tmp_path / "out")
    table = run.table()
    assert table.loc["extractive", "drafts"] == "3/3"
    assert table.loc["extractive", "Overall (paper)"] == "—"
    mean = run.summary.set_index("metric")["mean"]
    assert 0.2 < mean["rouge1"] < 1 and 0 < mean["rouge2"] < mean["rouge1"]
    assert run.headline()["examples"] == ["mn-0001", "mn-0002", "mn-0003"]
    # resumed: the same generations are read back, nothing is generated again
    again = run_multinews(params, systems=["extractive"], targets=3, metrics=["citation"], out_dir=tmp_path / "out")
    assert [g.text for g in again.generations] == [g.text for g in run.generations]


def test_uncited_news_sentences_get_their_sources_key_only_when_switched_on():
    from crewlib.env.llm_executor import attribute_sentences, compose_schema
    from crewlib.llm.jsonout import parse_json_answer, schema_instruction

    sources = {"R1": "Emergency crews evacuated about 1,200 homes in the Riverside district on Saturday.",
               "R2": "The regional government approved a £3.5 million emergency grant on Monday."}
    text = ("Crews evacuated about 1,200 homes in the Riverside district. The government approved a £3.5 million "
            "grant on Monday. Residents were angry.")
    repaired, added = attribute_sentences(text, sources)
    assert added == 2 and repaired == ("Crews evacuated about 1,200 homes in the Riverside district [R1]. The "
                                       "government approved a £3.5 million grant on Monday [R2]. Residents were angry.")
    answer = json.dumps({"segment_id": None, "text": text, "resolves": [], "confidence": 0.8})
    plain, attributing = compose_schema(frozenset(sources)), compose_schema(frozenset(sources), sources)
    # the schema the model is shown is the same: switching it on changes no recorded related-work prompt
    assert schema_instruction(plain) == schema_instruction(attributing)
    with pytest.raises(Exception, match="cites nothing"):
        parse_json_answer(answer, plain)
    assert parse_json_answer(answer, attributing).text == repaired and attributing.attributed == 2
    assert load_params("quick").executor.attribute_uncited is False  # off for related work
    from crewlib.experiments.multinews import multinews_params

    assert multinews_params(load_params("quick")).executor.attribute_uncited is True


def test_the_news_run_sends_section_rules_with_no_paper_to_relate_to():
    """quick.yaml's relating edition asks for a sentence on "this paper"; a news summary has none to relate to."""
    mparams = multinews_params(load_params("quick"))
    assert mparams.llm.prompt_edition != load_params("quick").llm.prompt_edition  # the check below has a point
    rules = prompts.reword(prompts.SECTION_RULES[mparams.llm.prompt_edition], mparams.llm.task_wording)
    assert not RELATED_WORK_WORDING.search(rules), RELATED_WORK_WORDING.findall(rules)
    assert mparams.executor.compose_form == "sentences"
