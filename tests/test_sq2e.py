"""SQ2E and its baselines against a scripted endpoint (a test double), HERA's grouping, factual consistency."""

from __future__ import annotations

import json
import re
import threading

import numpy as np
import pytest

from crewlib.config import load_params
from crewlib.data.records import LongDocument, Section
from crewlib.llm.http_endpoint import ChatEndpoint, Reply, completion
from crewlib.sq2e import SQ2E, DirectGeneration, FactualConsistency, document_parts, group_segments, select_parts
from crewlib.sq2e.metrics import FactCCUnavailable


class ScriptedSummaryEndpoint(ChatEndpoint):
    """Test double: answers each SQ2E prompt by its kind, with scripted plans, answers and verdicts."""

    def __init__(self, *, expert_plan, editor_plan, gaps=(), yes=(), verdict="A", facts=None, missing="The results.",
                 revision=None, initial="The initial summary states the problem.") -> None:
        super().__init__(self._respond)
        self.missing, self.revision, self.initial = missing, revision, initial
        self.expert_plan, self.editor_plan = expert_plan, editor_plan
        self.gaps, self.yes, self.verdict, self.facts = set(gaps), set(yes), verdict, facts or {}
        self.revisions = 0
        self.prompts: list[str] = []
        self._lock = threading.Lock()

    def _respond(self, request: dict) -> Reply:
        messages = request["messages"]
        prompt = messages[-1]["content"]
        if prompt.startswith("That answer was not usable"):  # the client's re-ask: answer the question again
            prompt = messages[-3]["content"]
        with self._lock:
            self.prompts.append(prompt)
            answer = self._answer(prompt)
        return Reply(200, completion(answer, model="scripted", prompt_tokens=10, completion_tokens=5))

    def _answer(self, prompt: str) -> str:
        if "Summarise the document in at most" in prompt:  # first: the sample's articles are about summaries
            return "A direct summary."
        if "Summarise what these passages say" in prompt:
            return "A topic summary."
        if "Summarise this section" in prompt:
            return "Local summary: " + re.search(r'Section "([^"]+)"', prompt).group(1) + "."
        if "Condense them into one summary of the whole document" in prompt:
            return self.initial
        if "Choose up to" in prompt:
            plan = self.expert_plan if "You are the expert" in prompt else self.editor_plan
            return plan if isinstance(plan, str) else json.dumps({"questions": plan})
        question = re.search(r"The (?:expert|editor) asks(?: \(yes or no\))?: (.*)", prompt)
        if question and "Answer the question from the passages" in prompt:
            qid = _question_id(question.group(1))
            return json.dumps({"answer": f"Answer to {qid}.", "missing": self.missing if qid in self.gaps else
                               ("none" if qid == "E5" else "")})
        if question and 'Answer "yes" or "no"' in prompt:
            qid = _question_id(question.group(1))
            return json.dumps({"answer": "Yes" if qid in self.yes else "no", "explanation": "Checked."})
        if "Write the revised summary" in prompt:
            self.revisions += 1
            return self.revision or f"Revised summary number {self.revisions}."
        if "Which summary is better" in prompt:
            return json.dumps({"better": self.verdict, "reason": "More complete."})
        if "A sentence from a summary" in prompt:
            sentence = re.search(r"A sentence from a summary of this document: (.*)", prompt).group(1)
            label = self.facts.get(sentence, "neutral")
            return label if label == "not json" else json.dumps({"reason": "r", "label": label})

        raise AssertionError(f"unexpected prompt: {prompt[:120]}")


def _question_id(text: str) -> str:
    from crewlib.sq2e.bank import EDITOR, EXPERT

    return next(q.id for q in (*EXPERT, *EDITOR) if q.text == text.strip())


def _document(words_per_section: int = 120) -> LongDocument:
    sections = tuple(Section(name, " ".join(f"{name.lower()}{i % 17}" if i % 2 else f"value{i}"
                                            for i in range(words_per_section)))
                     for name in ("Introduction", "Methods", "Results", "Conclusion"))
    return LongDocument("doc-1", "\n".join(s.text for s in sections), "The abstract.", sections, title="A study")


@pytest.fixture
def params(tmp_path):
    return load_params("quick", {"llm": {"cache_dir": str(tmp_path / "cache")}, "sq2e": {"part_words": 80}})


@pytest.fixture
def endpoint_client(make_client):
    def factory(**script):
        endpoint = ScriptedSummaryEndpoint(**script)
        endpoint.__enter__()
        factory.endpoints.append(endpoint)
        return endpoint, make_client(endpoint, cache_mode="off")  # each script answers afresh

    factory.endpoints = []
    yield factory
    for endpoint in factory.endpoints:
        endpoint.__exit__(None, None, None)


def test_questions_are_planned_from_the_bank_within_the_limits_and_every_step_is_recorded(params, endpoint_client):
    endpoint, client = endpoint_client(expert_plan=["E2", "E99", "E2", "E9", "E1", "E3", "E4", "E5"],
                                       editor_plan=["D3", "D1", "D2", "D5", "D6"], gaps={"E2", "E9"}, yes={"D3"})
    summary = SQ2E(params, client).summarise(_document())
    steps = summary.notes["steps"]
    assert [s["question"] for s in steps] == ["E2", "E9", "E1", "E3", "E4", "D3", "D1", "D2", "D5"]  # 5, then 4
    assert summary.fallbacks["plan_unknown_id"] == 1  # E99 is not in the bank; the repeated E2 is dropped
    # the initial summary: one local summary per part of a section (120 words in parts of 80: two parts each)
    assert len(summary.notes["section_summaries"]) == 8 and "Methods (part 2)" in summary.notes["section_summaries"]
    assert summary.notes["initial"] == "The initial summary states the problem."
    # revised only where the answer shows a gap (expert) or is "yes" (editor; "Yes" is read as yes)
    assert [s["question"] for s in steps if s["revise"]] == ["E2", "E9", "D3"]
    assert all(s["revised"] is None and s["shown"] is None for s in steps if not s["revise"])
    assert summary.notes["asked"] == {"expert": 5, "editor": 4}


def test_the_evaluator_sees_a_recorded_shuffled_order_and_the_better_version_is_kept(params, endpoint_client):
    for verdict in ("A", "B"):
        _, client = endpoint_client(expert_plan=["E1", "E2", "E3", "E4", "E5"], editor_plan=["D1", "D2", "D3", "D4"],
                                    gaps={"E1", "E2", "E3", "E4", "E5"}, yes={"D1", "D2", "D3", "D4"},
                                    verdict=verdict)
        summary = SQ2E(params, client).summarise(_document())
        compared = [s for s in summary.notes["steps"] if s["shown"]]
        assert len(compared) == 9 and all(sorted(s["shown"]) == ["previous", "revised"] for s in compared)
        assert {tuple(s["shown"]) for s in compared} == {("previous", "revised"), ("revised", "previous")}
        for s in compared:
            assert s["verdict"] == verdict and s["kept"] == s["shown"][0 if verdict == "A" else 1]
            assert s["valid"] == (s["kept"] == "revised")
        valid = [s for s in compared if s["valid"]]
        assert summary.notes["valid"] == {"expert": sum(s["role"] == "expert" for s in valid),
                                          "editor": sum(s["role"] == "editor" for s in valid)}
        # the final summary is the last revision kept; a step sees the summary the previous steps left
        kept = [s["revised"] for s in compared if s["kept"] == "revised"]
        assert summary.text == (kept[-1] if kept else summary.notes["initial"])
        orders = [tuple(s["shown"]) for s in compared]
    again = SQ2E(params, endpoint_client(expert_plan=["E1", "E2", "E3", "E4", "E5"],
                                         editor_plan=["D1", "D2", "D3", "D4"], gaps={"E1", "E2", "E3", "E4", "E5"},
                                         yes={"D1", "D2", "D3", "D4"}, verdict="B")[1]).summarise(_document())
    assert [tuple(s["shown"]) for s in again.notes["steps"] if s["shown"]] == orders  # seeded: the same order


def test_an_unusable_plan_falls_back_to_the_banks_first_questions_counted(params, endpoint_client):
    _, client = endpoint_client(expert_plan="no json here", editor_plan=["D9"])
    summary = SQ2E(params, client).summarise(_document())
    assert [s["question"] for s in summary.notes["steps"]] == ["E1", "E2", "E3", "E4", "E5", "D1", "D2", "D3", "D4"]
    assert summary.fallbacks["plan_invalid"] == 1 and summary.fallbacks["plan_default"] == 2
    assert summary.fallbacks["plan_unknown_id"] == 1


def test_a_role_with_no_questions_asks_nothing(params, endpoint_client):
    no_editor = load_params("quick", {"llm": params.llm, "sq2e": {"part_words": 80, "editor_questions": 0}})
    endpoint, client = endpoint_client(expert_plan=["E1"], editor_plan=["D1"])
    steps = SQ2E(no_editor, client).summarise(_document()).notes["steps"]
    assert [s["question"] for s in steps] == ["E1"] and not any("You are the editor" in p for p in endpoint.prompts)


def test_questions_per_round_are_capped_and_rounds_repeat_the_questioning(params, endpoint_client):
    two_rounds = load_params("quick", {**{"llm": params.llm}, "sq2e": {"part_words": 80, "rounds": 2,
                                                                         "expert_questions": 2, "editor_questions": 1}})
    _, client = endpoint_client(expert_plan=["E1", "E2", "E3"], editor_plan=["D1", "D2"])
    steps = SQ2E(two_rounds, client).summarise(_document()).notes["steps"]
    assert [(s["round"], s["question"]) for s in steps] == [(0, "E1"), (0, "E2"), (0, "D1"),
                                                            (1, "E1"), (1, "E2"), (1, "D1")]


def test_a_long_document_is_shown_in_parts_and_answers_come_from_the_most_relevant_ones():
    doc = _document(words_per_section=300)
    parts = document_parts(doc, 100)
    assert len(parts) == 12 and all(p.words <= 100 for p in parts)
    assert [p.section for p in parts[:4]] == ["Introduction"] * 3 + ["Methods"]
    chosen = select_parts(parts, "results3 value7 results9", budget_words=250)
    assert sum(p.words for p in chosen) <= 250 and all(p.section == "Results" for p in chosen)
    assert [p.index for p in chosen] == sorted(p.index for p in chosen)  # shown in document order
    assert len(select_parts(parts, "methods1", budget_words=10)) == 1  # the best part, even over the budget


def test_direct_generation_records_the_cut_of_a_document_longer_than_the_context(params, endpoint_client):
    _, client = endpoint_client(expert_plan=[], editor_plan=[])
    small = load_params("quick", {"llm": params.llm, "sq2e": {"part_words": 80, "dg": {"context_tokens": 900}}})
    summary = DirectGeneration(small, client).summarise(_document(words_per_section=300))
    notes = summary.notes
    assert summary.text == "A direct summary." and notes["truncated"]
    assert 0 < notes["words_shown"] < notes["words_total"] == 1200
    whole = DirectGeneration(params, client).summarise(_document(words_per_section=60)).notes
    assert not whole["truncated"] and whole["words_shown"] == whole["words_total"] == 240


def test_hera_groups_segments_by_topic_and_reorders_them_by_first_appearance():
    a, b, c = np.eye(3)
    vectors = np.stack([a, b, a + 0.1 * c, c, b + 0.1 * a, a])
    assert group_segments(vectors, 3) == [[0, 2, 5], [1, 4], [3]]  # topics by first appearance
    order = [i for topic in group_segments(vectors, 3) for i in topic]
    assert order == [0, 2, 5, 1, 4, 3] and order != sorted(order)  # reordered: a topic's segments together
    assert group_segments(vectors, 1) == [[0, 1, 2, 3, 4, 5]]
    assert group_segments(vectors[:2], 5) == [[0], [1]]  # never more topics than segments
    assert group_segments(np.zeros((0, 3)), 3) == []


def test_factual_consistency_is_the_share_of_judged_sentences_entailed_with_missing_ones_counted(params,
                                                                                                endpoint_client):
    facts = {"The study ran in 2020.": "entailment", "It found no effect.": "contradiction",
             "It used a survey.": "not json"}
    _, client = endpoint_client(expert_plan=[], editor_plan=[], facts=facts)
    metric = FactualConsistency(params, client)
    assert "LLM entailment" in metric.label and "not FactCC" in metric.label
    score = metric.score("The study ran in 2020. It found no effect. It used a survey.", _document())
    assert score == {"factual_consistency": 0.5, "fact_sentences": 3, "fact_missing": 1}
    assert np.isnan(metric.score("", _document())["factual_consistency"])


def test_factcc_without_weights_is_a_clear_error_or_the_labelled_llm_fallback(params, endpoint_client, tmp_path):
    _, client = endpoint_client(expert_plan=[], editor_plan=[])
    forced = load_params("quick", {"sq2e": {"fact": {"method": "factcc"}}})
    with pytest.raises(FactCCUnavailable, match="no weights are given"):
        FactualConsistency(forced, client)
    broken = load_params("quick", {"sq2e": {"fact": {"method": "factcc", "factcc_path": str(tmp_path)}}})
    with pytest.raises(FactCCUnavailable, match="holds no config.json"):
        FactualConsistency(broken, client)
    auto = load_params("quick", {"sq2e": {"fact": {"factcc_path": str(tmp_path)}}})
    assert "LLM entailment" in FactualConsistency(auto, client).label  # auto: falls back, labelled


def test_run_sq2e_scores_every_system_counts_valid_questions_and_resumes(tmp_path):
    from crewlib.experiments.sq2e import run_sq2e

    endpoint = ScriptedSummaryEndpoint(expert_plan=["E2", "E9"], editor_plan=["D1"], gaps={"E2"}, yes={"D1"},
                                       verdict="B", facts={})
    with endpoint:
        params = load_params("quick", {"llm": {"provider": "openai", "base_url": endpoint.base_url,
                                               "model": "scripted", "api_key_env": "", "cache_mode": "off",
                                               "max_retries": 0},
                                       "sq2e": {"expert_questions": 2, "editor_questions": 1,
                                                "dg": {"context_tokens": 8000}}})
        run = run_sq2e(params, targets=1, out_dir=tmp_path)
        asked = len(endpoint.prompts)
        again = run_sq2e(params, targets=1, out_dir=tmp_path)  # resumed: only the scores ask again
    table = run.table()
    assert list(table.index) == [(d, s) for d in ("arxiv", "pubmed") for s in ("dg", "hera", "sq2e")]
    assert (table["summaries"] == "1/1").all() and "not FactCC" in run.fact_label
    summary = run.summary.set_index(["dataset", "system", "metric"])["mean"]
    assert 0 <= summary["arxiv", "sq2e", "rouge1"] <= 1 and summary["arxiv", "dg", "factual_consistency"] == 0.0
    valid = run.valid_questions().set_index(["dataset", "role"])
    assert valid.loc[("arxiv", "expert"), "asked"] == 2 and valid.loc[("arxiv", "editor"), "asked"] == 1
    trace = run.example_trace("pubmed")
    assert trace["initial"] != trace["final"] and [s["question"] for s in trace["steps"]] == ["E2", "E9", "D1"]
    lengths = run.lengths()
    assert lengths.loc[("arxiv", "paper (its Table 1: dataset statistics)"), "article words"] == 5171.85
    assert lengths.loc[("pubmed", "ours"), "documents"] == 1
    assert lengths.loc[("pubmed", "paper (its Table 1: dataset statistics)"), "article sentences"] == 206.3
    beside = run.beside_paper()  # Table 3 on the paper's 0-100 scale, its three models beside ours
    assert beside.loc[("arxiv", "SQ2E", "scripted (ours)"), "R-1"] == pytest.approx(
        100 * summary["arxiv", "sq2e", "rouge1"])
    assert beside.loc[("pubmed", "HERA", "DeepSeek-R1 (paper)"), "FactCC"] == 38.67
    assert beside.loc[("arxiv", "DG", "LLaMA-3.1-70B (paper)"), "R-2"] == 9.44
    assert len(beside.xs("pubmed", level="dataset")) == 3 * (1 + 3)  # ours and three models, each system
    figure3 = run.valid_questions_beside_paper().set_index(["dataset", "role"])["paper (most runs)"]
    assert figure3["arxiv", "expert"] == "3–4" and figure3["pubmed", "editor"] == "2–3"
    assert [g.text for g in again.generations["arxiv"]] == [g.text for g in run.generations["arxiv"]]
    assert not any("Summarise this section" in p for p in endpoint.prompts[asked:])  # nothing generated twice


def test_sentences_are_counted_as_the_datasets_delimit_them():
    from crewlib.experiments.sq2e import count_sentences

    assert count_sentences("one result . unlike ours\n, many planets ( @xmath1 ) .\nthese spawned theories .") == 4
    assert count_sentences("A study of 3.5 mg doses. It worked! Did it?") == 3
    assert count_sentences("") == 0


def test_notebook_10_runs_end_to_end_against_an_openai_compatible_endpoint(tmp_path, monkeypatch):
    """The notebook's whole path (tables, figure, worked example, results JSON) on one document per dataset."""
    import papermill

    from crewlib.config import PROJECT_ROOT
    from crewlib.experiments import results

    for var in ("CREW_LLM_CACHE_MODE", "CREW_LLM_BASE_URL", "CREW_LLM_MODEL"):
        monkeypatch.delenv(var, raising=False)
    endpoint = ScriptedSummaryEndpoint(expert_plan=["E1", "E2"], editor_plan=["D3"], gaps={"E1"}, yes={"D3"},
                                       verdict="B", facts={})
    with endpoint:
        params_file = tmp_path / "scripted.yaml"
        params_file.write_text(
            "base: quick\n"
            f"llm: {{provider: openai, base_url: '{endpoint.base_url}', model: scripted, api_key_env: '', "
            "cache_mode: 'off', max_retries: 0}\n"
            "sq2e: {expert_questions: 2, editor_questions: 1, dg: {context_tokens: 8000}}\n")
        figures = tmp_path / "figures"
        papermill.execute_notebook(str(PROJECT_ROOT / "notebooks" / "10_sq2e.ipynb"), str(tmp_path / "10.ipynb"),
                                   progress_bar=False,
                                   parameters={"params_file": str(params_file), "figures_dir": str(figures),
                                               "out_dir": str(tmp_path / "out"), "targets": 1})
    r = results.load(figures / "10_results.json")
    assert r["model"] == "scripted" and r["datasets"] == ["arxiv", "pubmed"]
    assert {(row["dataset"], row["system"]) for row in r["table"]} == {
        (d, s) for d in ("arxiv", "pubmed") for s in ("dg", "hera", "sq2e")}
    assert [s["question"] for s in r["example"]["steps"]] == ["E1", "E2", "D3"]
    assert (figures / "10_valid_questions.png").stat().st_size > 5_000


def test_written_summaries_lose_headings_and_labels_but_keep_their_text():
    from crewlib.sq2e.systems import summary_text

    assert summary_text("## Summary\n\nThe study ran.\nIt worked.") == "The study ran. It worked."
    assert summary_text("Here is the revised summary:\nThe study ran.") == "The study ran."
    assert summary_text("**Revised Summary:**\nThe study ran.") == "The study ran."
    assert summary_text("Revised summary: The study ran.") == "The study ran."
    assert summary_text("**A Study of Things**\nIt studies things.", title="A Study of Things") == "It studies things."
    sentence = "The summary statistics of the cohort are given."
    assert summary_text(sentence) == sentence


def test_a_summary_over_its_word_limit_is_cut_at_whole_sentences_and_counted(params, endpoint_client):
    from crewlib.text import fit_words

    assert fit_words("One two three. Four five six. Seven eight nine.", 7) == ("One two three. Four five six.", True)
    assert fit_words("One two three. Four five six. Seven eight", 20) == ("One two three. Four five six.", True)
    assert fit_words("One two three four five.", 3) == ("One two three", True)  # a first sentence alone too long
    assert fit_words("One two. Three (four).", 4) == ("One two. Three (four).", False)
    short = load_params("quick", {"llm": params.llm, "sq2e": {"part_words": 80, "initial_words": 8}})
    long_initial = "The study asks a question. It uses a method on data. It finds a result. It concludes"
    endpoint, client = endpoint_client(expert_plan=["E1"], editor_plan=["D1"], initial=long_initial)
    summary = SQ2E(short, client).summarise(_document())
    assert summary.notes["initial"] == "The study asks a question."  # 8 words: one whole sentence fits
    assert summary.fallbacks["summary_cut"] >= 1
    assert any("at most 8 words (2 sentences at most)" in p for p in endpoint.prompts if "Condense them" in p)
    with pytest.raises(ValueError, match=r"initial_words \(300\) exceeds summary_words \(200\)"):
        load_params("quick", {"sq2e": {"initial_words": 300}})


def test_a_revision_or_a_gap_that_copies_the_question_or_the_prompt_is_not_compared_and_counted(params,
                                                                                              endpoint_client):
    echo = "The initial summary states the problem. The expert asked: What problem? The answer: a problem."
    endpoint, client = endpoint_client(expert_plan=["E1"], editor_plan=[], gaps={"E1"}, revision=echo)
    summary = SQ2E(params, client).summarise(_document())
    step = summary.notes["steps"][0]
    assert step["revise"] and step["revised"] == echo and step["shown"] is None and step["kept"] == "previous"
    assert summary.fallbacks["revision_echoes_question"] == 1 and summary.text == summary.notes["initial"]
    assert not any("Which summary is better" in p for p in endpoint.prompts)
    endpoint, client = endpoint_client(expert_plan=["E1"], editor_plan=[], gaps={"E1"},
                                       missing='Then, as "missing", write the one fact from the passages.')
    summary = SQ2E(params, client).summarise(_document())
    assert not summary.notes["steps"][0]["revise"] and summary.fallbacks["answer_echoes_question"] == 1
    assert endpoint.revisions == 0


def test_the_revision_is_asked_for_the_named_gap_or_the_editors_problem(params, endpoint_client):
    endpoint, client = endpoint_client(expert_plan=["E2"], editor_plan=["D1"], gaps={"E2"}, yes={"D1"},
                                       missing="The trial enrolled 520 adults.")
    SQ2E(params, client).summarise(_document())
    revisions = [p for p in endpoint.prompts if "Write the revised summary" in p]
    assert "Add this to the summary, or correct the summary with it: The trial enrolled 520 adults." in revisions[0]
    assert "Fix this problem of the summary: Checked." in revisions[1]


def test_yes_no_and_a_or_b_answers_that_copy_the_schema_example_are_invalid():
    import pydantic

    from crewlib.sq2e.systems import EditorAnswer, Verdict

    assert EditorAnswer.model_validate({"answer": "Yes."}).answer == "yes"
    assert Verdict.model_validate({"better": "Summary B"}).better == "B"
    for bad in ({"answer": "yes | no"}, {"answer": "maybe"}):
        with pytest.raises(pydantic.ValidationError):
            EditorAnswer.model_validate(bad)
    with pytest.raises(pydantic.ValidationError):
        Verdict.model_validate({"better": "A | B"})


def test_documents_are_a_seeded_random_sample_of_the_split_unless_the_first_n_are_asked():
    from crewlib.experiments.sq2e import load_documents

    every = [d.id for d in load_documents(load_params("quick"), "arxiv")]
    sampled = [d.id for d in load_documents(load_params("quick", {"sq2e": {"documents": 2}}), "arxiv")]
    again = [d.id for d in load_documents(load_params("quick", {"sq2e": {"documents": 2}}), "arxiv")]
    assert len(every) == 3 and len(sampled) == 2 and sampled == again  # seeded: the same two every time
    assert sampled == [i for i in every if i in sampled]  # in the split's order
    other = {tuple(d.id for d in load_documents(load_params("quick", {"sq2e": {"documents": 2, "sample_seed": s}}),
                                                "arxiv")) for s in range(6)}
    assert len(other) > 1  # the seed decides which
    assert [d.id for d in load_documents(load_params("quick", {"sq2e": {"documents": 2}}), "arxiv", targets=1)] == \
        every[:1]  # the first N when asked
    assert load_params("full").sq2e.documents == 300
