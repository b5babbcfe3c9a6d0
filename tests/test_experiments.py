"""The experiment layer: typed generations, tables with CIs and the paper beside, judge discrimination, Ray."""

from __future__ import annotations

import json
import re

import numpy as np
import pandas as pd
import pytest
from fakes import ScriptedOpenAIServer, Step

from crewlib.citations import find_citation_keys
from crewlib.config import load_params
from crewlib.data.records import Reference, RWGExample
from crewlib.eval import EvalExample
from crewlib.eval.instrument import instrument_settings, verdicts
from crewlib.eval.llm_metrics import Judge
from crewlib.experiments import (
    GenerationResult,
    beside_paper,
    bootstrap_ci,
    metric_summary,
    paper,
    read_generations,
    results,
    results_table,
    run_generations,
    score,
)
from crewlib.experiments import discrimination as disc
from crewlib.experiments.damages import DAMAGES
from crewlib.experiments.run import settings_folder
from crewlib.sections import is_first_person
from crewlib.text import sentences, strip_markers

PARAMS = load_params("quick")
GOLD = ("Transformers (Vaswani et al., 2017) changed translation. Pretraining (Devlin et al., 2019; Radford "
        "et al., 2018) transferred broadly [R1].\n\nReward models learn from comparisons (Christiano et al., "
        "2017). Summaries were trained this way (Stiennon et al., 2020).")


def _example(target_id="t1", n=4) -> RWGExample:
    refs = tuple(Reference(f"p{i}", f"Paper {i} on graphs", f"Paper {i} studies graph attention variant {i}. " * 3)
                 for i in range(n))
    return RWGExample(target_id, "Graph attention", "We study attention on graphs.", refs,
                      gold_related_work=f"Graph attention ({target_id}) is studied [R1]. Variants follow [R2].",
                      gold_cited_ids=("p0", "p1"))


# ----------------------------------------------------------------------------- statistics and tables
def test_bootstrap_ci_brackets_the_mean_is_seeded_and_is_nan_for_one_value():
    values = [1.0, 2.0, 3.0, 4.0, 5.0]
    low, high = bootstrap_ci(values, seed=1)
    assert low < np.mean(values) < high and (low, high) == bootstrap_ci(values, seed=1)
    assert low >= 1.0 and high <= 5.0
    assert all(np.isnan(bootstrap_ci([3.0])))
    assert bootstrap_ci([2.0, 2.0, 2.0]) == (2.0, 2.0)


def _scores() -> pd.DataFrame:
    rows = [{"system": s, "example": e, "metric": "judge_overall", "value": v}
            for s, vals in {"crew": [4, 5, 4], "srw": [3, 3, 4]}.items() for e, v in zip("abc", vals, strict=True)]
    rows += [{"system": "crew", "example": e, "metric": "citation_verification", "value": 1.0} for e in "abc"]
    frame = pd.DataFrame(rows)
    frame.attrs.update(unavailable=[{"system": "srw", "example": "a", "group": "citation", "metric": "*",
                                     "reason": "no citation"}, {"system": "primera", "example": "a",
                                                                "group": "*", "metric": "*", "reason": "offline"}],
                       missing=[{"system": "srw", "example": "b", "judge": "j", "dimension": "logic"}])
    return frame


def _frame() -> pd.DataFrame:
    rows = [GenerationResult(s, e, f"text {s} {e}", prompt_tokens=100, completion_tokens=10, calls=2, wall_s=1.0,
                             llm_s=3.0).to_row() for s in ("crew", "srw") for e in "abc"]
    rows += [GenerationResult("primera", e, None, "SystemUnavailableError: offline").to_row() for e in "abc"]
    return pd.DataFrame(rows)


def test_metric_summary_is_long_with_a_ci_per_system_and_metric():
    summary = metric_summary(_scores()).set_index(["system", "metric"])
    row = summary.loc[("crew", "judge_overall")]
    assert row["n"] == 3 and row["mean"] == pytest.approx(13 / 3) and row["ci_low"] <= row["mean"] <= row["ci_high"]


def test_results_table_counts_drafts_unavailable_and_missing_and_marks_absent_metrics():
    table = results_table(_scores(), _frame(), {"judge_overall": "Overall", "citation_verification": "CV"})
    assert list(table.index) == ["crew", "srw", "primera"]
    assert table.loc["crew", "drafts"] == "3/3" and table.loc["primera", "drafts"] == "0/3"
    assert re.fullmatch(r"4\.33 \[\d\.\d\d, \d\.\d\d\]", table.loc["crew", "Overall"])
    assert table.loc["srw", "CV"] == "unavailable" and table.loc["primera", "Overall"] == "unavailable"
    assert table.loc["srw", "unavailable"] == 1 and table.loc["primera", "unavailable"] == 1
    assert table.loc["srw", "missing judgements"] == 1 and table.loc["crew", "missing judgements"] == 0
    assert table.loc["crew", "tokens in"] == 100 and table.loc["crew", "LLM s"] == 3.0
    assert np.isnan(table.loc["primera", "tokens in"])


def test_beside_paper_puts_the_papers_number_after_our_column_and_a_dash_where_it_reports_none():
    table = results_table(_scores(), _frame(), {"judge_overall": "Overall", "citation_verification": "CV"})
    out = beside_paper(table, paper.paper_cells(paper.MAIN, {"judge_overall": "Overall",
                                                             "citation_verification": "CV"}), percent=["CV"])
    columns = list(out.columns)
    assert columns[columns.index("Overall") + 1] == "Overall (paper)"
    assert out.loc["crew", "Overall (paper)"] == "3.82" and out.loc["srw", "Overall (paper)"] == "—"
    assert out.loc["crew", "CV (paper)"] == "—"  # the paper gives no verification figure for CREW
    cells = paper.paper_cells(paper.MAIN, {"citation_verification": "CV"})
    assert cells == {("naive_orchestrator", "CV"): 0.9867}  # 98.67% is the Naive Orchestrator's
    with pytest.raises(KeyError, match="no column"):
        beside_paper(table, {("crew", "Logic"): 3.9})


def test_conditions_name_model_data_papers_rounds_and_judges_of_both_sides():
    ours = paper.our_conditions(PARAMS, model="qwen", papers=5, judges=["j1"], systems_rounds="crew 6")
    table = paper.conditions(ours, paper.CREW_PAPER)
    assert list(table.index) == ["ours", "CREW paper"]
    assert table.loc["CREW paper", "papers"] == 366 and table.loc["ours", "papers"] == 5
    assert table.loc["ours", "data"].startswith("bundled sample")
    assert table.loc["CREW paper", "model"] == "Qwen 2.5 72B Instruct"  # the paper's writer, not GPT-4o


def test_results_json_round_trips_tables_and_drops_non_finite_numbers(tmp_path):
    path = results.record(tmp_path / "r.json", table=metric_summary(_scores()), value=np.float64(0.5),
                          nan=float("nan"), nested={"a": np.int64(3)})
    loaded = results.load(path)
    assert loaded["value"] == 0.5 and loaded["nan"] is None and loaded["nested"] == {"a": 3}
    assert {"system", "metric", "mean"} <= set(loaded["table"][0]) and "index" not in loaded["table"][0]


# ----------------------------------------------------------------------------- degradations
KEYED = ("Transformers changed translation [R1]. Pretraining with masked tokens transferred broadly [R2], and "
         "larger models gain 25.4 points on benchmarks [R3].\n\nReward models learn from human comparisons [R4]. "
         "Summaries were trained this way [R5].")
SOURCES = {"R1": "This paper proposes the Transformer, an attention model for translation.",
           "R2": "Pretraining a bidirectional encoder with masked tokens transfers to many tasks.",
           "R3": "Scaling models gains 25.4 points on benchmarks.",
           "R4": "We learn reward models from human comparisons between two outputs.",
           "R5": "The authors train summaries from human feedback with a reward model."}


def _cited_sentences(text):
    return [(strip_markers(s), find_citation_keys(s)) for p in disc.paragraphs(text) for s in sentences(p)]


@pytest.mark.parametrize("kind", [k for k in disc.DEGRADATIONS if k not in DAMAGES])  # the new five: test_damages.py
def test_each_degradation_damages_the_gold_the_way_it_says(kind):
    gold = GOLD if kind in disc.LEGACY_DAMAGES else KEYED
    other = "A paragraph about protein folding with no relation [R9]."
    out = disc.degrade(gold, kind, other=other, seed=3, sources=SOURCES)
    assert out != gold and out.strip()
    parts = disc.paragraphs(out)
    before, after = _cited_sentences(gold), _cited_sentences(out)
    if kind == "paragraph_repeated":
        assert parts[-1] == parts[0] and len(parts) == 3
    elif kind == "citations_removed":
        assert "[R1]" not in out and not re.search(r"\(\D*\d{4}\)", out) and "et al" not in out
        assert "Transformers changed translation." in out and "  " not in out
    elif kind == "sentences_shuffled":
        assert out != " ".join(sentences(GOLD.replace("\n\n", " ")))
        assert sorted(sentences(out)) == sorted(s for p in disc.paragraphs(GOLD) for s in sentences(p))
    elif kind == "cut_mid_sentence":
        assert len(out.split()) < len(GOLD.split()) and out[-1] not in ".!?"
    elif kind == "wrong_paper_paragraph":
        assert parts[-1] == other and parts[0] == disc.paragraphs(GOLD)[0]
    elif kind == "claims_swapped":  # the same sentences, two of them citing each other's work
        assert [t for t, _ in after] == [t for t, _ in before]
        moved = [(b, a) for (_, b), (_, a) in zip(before, after, strict=True) if a != b]
        assert len(moved) == 2 and moved[0][0] == moved[1][1] and moved[0][1] == moved[1][0]
    elif kind == "claim_altered":  # one cited sentence: the number its work reports changed, citation kept
        changed = [(b, a) for b, a in zip(before, after, strict=True) if a != b]
        assert len(changed) == 1 and changed[0][0][1] == changed[0][1][1] == ["R2", "R3"]
        assert "25.4" in changed[0][0][0] and "25.4" not in changed[0][1][0] and "51.8" in changed[0][1][0]
    elif kind == "half_citations_dropped":  # the first three of five works stay, the others and their sentences go
        assert set(find_citation_keys(out)) == {"R1", "R2", "R3"} and "Reward models" not in out
        assert len(parts) == 1
    elif kind == "first_person_copies":  # two sentences in the cited authors' first person, from their abstracts
        copies = [s for p in parts for s in sentences(p) if is_first_person(s)]
        assert len(copies) == 2 and copies[0] == "We propose the Transformer, an attention model for translation [R1]."
        assert all(len(find_citation_keys(c)) == 1 for c in copies)


def test_the_gold_is_keyed_as_a_system_writes_it():
    refs = (Reference("p0", "TextRank", "Graph ranking.", authors=("Rada Mihalcea", "Paul Tarau"), year=2004),
            Reference("p1", "LexRank", "Centrality.", authors=("Gunes Erkan",), year=2004))
    example = EvalExample.from_rwg(RWGExample(
        "t", "Target", "Abstract.", refs, gold_cited_ids=("p0", "p1"),
        gold_related_work="Graphs vote (Mihalcea and Tarau, 2004; Erkan and Radev, 2004). Others (Smith, 2001)."))
    text, unresolved = disc.keyed_gold(example)
    assert text == "Graphs vote [R1, R2]. Others (Smith, 2001)." and unresolved == 1


def test_every_damage_of_the_bundled_sample_applies_and_differs_from_the_gold():
    from crewlib.tasks import build_tasks

    examples = [EvalExample.from_rwg(e) for e in build_tasks(PARAMS).examples.values()]
    out = disc.degraded_outputs(examples, kinds=disc.DEGRADATIONS, keyed=True)
    skipped = out.attrs["skipped"]  # only a gold that never speaks of its paper has no positioning to remove
    assert len(examples) >= 10 and {s["damage"] for s in skipped} <= {"positioning_removed"} and len(skipped) <= 1
    assert len(out) + len(skipped) == len(examples) * (1 + len(disc.DEGRADATIONS))
    assert (out.groupby("example").text.nunique() == out.groupby("example").size()).all()
    assert all(disc.keyed_gold(e)[1] == 0 for e in examples)  # every author-year citation became a key


def test_the_held_out_papers_load_and_every_damage_applies_to_them():
    from crewlib.experiments.main_results import discrimination_examples

    held_out = discrimination_examples(PARAMS, [], "holdout")
    sample = {e.example_id for e in discrimination_examples(PARAMS, [], "all")}
    assert len(held_out) >= 9 and not sample & {e.example_id for e in held_out}  # papers the design never saw
    out = disc.degraded_outputs(held_out, kinds=disc.DEGRADATIONS, keyed=True)
    skipped = out.attrs["skipped"]  # the held-out golds, written in the sample's style, rarely speak of the paper
    assert {s["damage"] for s in skipped} <= {"positioning_removed"}
    assert len(out) + len(skipped) == len(held_out) * (1 + len(disc.DEGRADATIONS))
    assert len(out) - len(held_out) >= 80 and all(disc.keyed_gold(e)[1] == 0 for e in held_out)


def test_degradation_needs_a_gold_and_two_examples():
    with pytest.raises(ValueError, match="empty"):
        disc.degrade("  ", "paragraph_repeated", other="x")
    with pytest.raises(ValueError, match="one sentence"):
        disc.degrade("Only one sentence here.", "sentences_shuffled", other="x")
    with pytest.raises(ValueError, match="unknown degradation"):
        disc.degrade(GOLD, "typos", other="x")
    with pytest.raises(ValueError, match="at least two examples"):
        disc.degraded_outputs([EvalExample.from_rwg(_example())])


def test_discrimination_counts_pairs_ranked_correctly_and_ties():
    rows = []
    for example, (gold, repeated) in {"a": (5, 3), "b": (4, 4), "c": (4, 5)}.items():
        for system, value in (("gold", gold), ("paragraph_repeated", repeated)):
            rows.append({"system": system, "example": example, "metric": "judge_coverage", "value": value})
    found = verdicts(pd.DataFrame(rows), None, [(e, "gold", "paragraph_repeated") for e in "abc"],
                     instrument_settings(PARAMS))
    table = disc.verdict_table(found).set_index(["damage", "instrument"])
    row = table.loc[("paragraph_repeated", "judge:coverage")]
    assert row["pairs"] == 3 and row["correct"] == pytest.approx(1 / 3) and row["ties"] == pytest.approx(1 / 3)
    assert ("cut_mid_sentence", "judge:coverage") not in table.index  # a damage that was not scored has no row


def test_a_judge_that_gives_every_text_the_same_score_discriminates_nothing(make_client):
    examples = [EvalExample.from_rwg(_example(t)) for t in ("a", "b")]
    with ScriptedOpenAIServer(default=Step(content=json.dumps({"rationale": "fine", "score": 4}))) as server:
        judge = Judge("constant", make_client(server))
        legacy = load_params("quick", {"instrument": {"damages": list(disc.LEGACY_DAMAGES), "keyed_gold": False,
                                                      "pairwise_dimensions": [], "entailment": False}})
        check = disc.instrument_discrimination(legacy, examples, judges=[judge])
    table = check.table[check.table.instrument.str.startswith("judge:")]
    assert set(table.judge) == {"constant"} and (table.pairs == 2).all()
    assert (table.correct == 0).all() and (table.ties == 1).all()
    summary = check.summary().set_index("instrument")
    assert summary.loc["judge:overall", "pairs"] == 10 and summary.loc["judge:overall", "correct"] == 0
    texts = disc.degraded_outputs(examples)
    assert len(texts) == 2 * 6 and texts.groupby("example").text.nunique().eq(6).all()  # gold + 5 distinct damages
    assert len(server.requests) == 2 * 6 * 3  # × 3 dimensions


# ----------------------------------------------------------------------------- runs
def test_generations_are_typed_resumable_and_score_with_the_suite(tmp_path):
    examples = [_example("a"), _example("b")]
    first = run_generations(["extractive", "primera"], examples, PARAMS, out_dir=tmp_path, progress=False)
    assert [(g.system, g.example) for g in first] == [("extractive", "a"), ("extractive", "b"),
                                                        ("primera", "a"), ("primera", "b")]
    assert all(isinstance(g, GenerationResult) for g in first)
    assert first[0].ok and first[0].key_to_id and not first[2].ok and "PRIMERA" in first[2].error
    saved = read_generations(settings_folder(tmp_path, PARAMS) / "generations.jsonl")
    assert set(saved) == {("extractive", "a"), ("extractive", "b")}
    again = run_generations(["extractive"], examples, PARAMS, out_dir=tmp_path, progress=False)
    assert [g.text for g in again] == [g.text for g in first[:2]]
    scores = score(first, examples, PARAMS, metrics=["citation"])
    assert set(scores.system) == {"extractive"}
    assert {u["system"] for u in scores.attrs["unavailable"]} == {"primera"}


def test_an_llm_system_without_a_client_and_an_unknown_backend_or_system_are_refused():
    with pytest.raises(ValueError, match="need.*an LLM client"):
        run_generations(["long_context"], [_example()], PARAMS, None, progress=False)
    with pytest.raises(ValueError, match="backend"):
        run_generations(["extractive"], [_example()], PARAMS, backend="spark", progress=False)
    with pytest.raises(ValueError, match="unknown system"):
        run_generations(["gpt5"], [_example()], PARAMS, progress=False)


# ----------------------------------------------------------------------------- notebook 09's pieces
def test_llm_annotators_fill_the_blinded_sheets_and_the_analysis_unblinds_them(make_client, tmp_path):
    from crewlib.experiments import human_eval as he

    examples = [_example(t) for t in ("a", "b", "c")]
    frame = pd.DataFrame([GenerationResult(s, e.target_id, f"Section {i} about {e.target_id} [R1].").to_row()
                          for i, s in enumerate(("crew", "srw")) for e in examples])
    key = he.write_packets(frame, examples, tmp_path / "packets", annotators=["p1", "llm1", "llm2"])
    packet = pd.read_csv(tmp_path / "packets" / "packet_llm1.csv", dtype=str, keep_default_na=False)
    assert packet.context.str.contains("Graph attention").all() and (packet.coverage == "").all()
    # The annotator prefers text 1 on coverage, text 2 on logic, and ties on relevance (written loosely)
    answer = json.dumps({"coverage": 1, "logic": "2", "relevance": "Tie"})
    with ScriptedOpenAIServer(default=Step(content=answer)) as server:
        server.push(Step(content="not json"), Step(content="still not json"))  # the first pair's first sample
        filled = he.fill_with_llm(tmp_path / "packets", tmp_path / "llm", make_client(server, max_retries=0),
                                  annotators=["llm1", "llm2"])
        assert len(server.requests) == 2 * 3 + 2  # the client's re-ask, then a fresh sample
    assert filled.failed == 0
    analysis = he.analyse(filled.sheets, tmp_path / "packets" / "key.csv", label=he.LLM_LABEL)
    wtl = analysis.win_tie_loss.set_index("dimension")
    crew_first = (key.system_1 == "crew").mean()
    assert wtl.loc["coverage", "win"] == pytest.approx(crew_first)  # "1" is crew exactly where crew is text 1
    assert wtl.loc["logic", "win"] == pytest.approx(1 - crew_first) and wtl.loc["relevance", "tie"] == 1.0
    assert ((wtl.win + wtl.tie + wtl.loss - 1).abs() < 1e-9).all() and (wtl.annotators == he.LLM_LABEL).all()
    assert set(analysis.kappa.dimension) == {"coverage", "logic", "relevance"}
    assert he.filled_sheets(tmp_path / "nowhere") == [] and len(he.filled_sheets(tmp_path / "llm")) == 2


def test_an_unusable_llm_annotator_answer_is_a_counted_tie(make_client, tmp_path):
    from crewlib.experiments import human_eval as he

    examples = [_example(t) for t in ("a", "b")]
    frame = pd.DataFrame([GenerationResult(s, e.target_id, f"Section {i} on {e.target_id} [R1].").to_row()
                          for i, s in enumerate(("crew", "srw")) for e in examples])
    he.write_packets(frame, examples, tmp_path / "packets", annotators=["llm1"])
    with ScriptedOpenAIServer(default=Step(content="I prefer the first one.")) as server:
        filled = he.fill_with_llm(tmp_path / "packets", tmp_path / "llm", make_client(server, max_retries=0),
                                  annotators=["llm1"])
    assert filled.failed == 2 and all("OutputValidationError" in r for r in filled.reasons)
    sheet = pd.read_csv(filled.sheets[0], dtype=str, keep_default_na=False)
    assert (sheet[["coverage", "logic", "relevance"]] == "tie").all().all()
    assert sheet.comment.str.contains("filled as tie").all()


def test_a_replay_miss_is_an_error_never_a_fallback_or_a_missing_judgement(make_client, scripted_server):
    """A stale recording must stop a replayed run: inside an episode a failed call is only a counted no-op."""
    from crewlib.baselines.base import Generation
    from crewlib.eval.llm_metrics import JudgeAnswer, ask
    from crewlib.experiments.run import result_of
    from crewlib.llm import CacheMissError, Caller

    client = make_client(scripted_server, cache_mode="replay")
    with pytest.raises(CacheMissError):
        client.chat([{"role": "user", "content": "never recorded"}])
    generation = Generation("crew", "t1", "A section that was written anyway [R1].", {"R1": "p1"},
                            records=list(client.ledger.records))
    result = result_of(generation)
    assert result.text is None and result.error.startswith("CacheMissError: 1 request(s)")
    assert result_of(Generation("crew", "t1", "Written [R1].", {"R1": "p1"})).ok
    with pytest.raises(CacheMissError):  # the judge does not count it as a missing judgement
        ask(client, [{"role": "user", "content": "grade this"}], JudgeAnswer, caller=Caller("eval", "judge"))
    assert not scripted_server.requests  # replay never reached the endpoint


def test_a_claim_is_altered_only_where_its_cited_abstract_states_it_never_inside_a_key_or_a_name():
    gold = "GPT-3 learns in context from a few examples [R2]. Masked pretraining transfers to many tasks [R2]."
    sources = {"R2": "Pretraining a bidirectional encoder with masked tokens transfers to many tasks.",
               "R3": "Reward models learn from human comparisons."}
    out = disc.degrade(gold, "claim_altered", other="", sources=sources)
    assert "GPT-3" in out and out.count("[R2]") == 2  # the 3 of a name and the 2 of a key are not claims
    changed = [(b, a) for b, a in zip(sentences(gold), sentences(out), strict=True) if a != b]
    assert len(changed) == 1 and changed[0][0].startswith("Masked")  # a finding its abstract states: "many" → "few"
    assert "few tasks" in changed[0][1]
    with pytest.raises(ValueError, match="could be altered"):  # nothing the abstract states: no claim to alter
        disc.degrade("Graphs vote for sentences [R3].", "claim_altered", other="", sources={"R3": "Image data."})


def test_a_run_with_other_settings_never_resumes_the_first_runs_sections(tmp_path):
    examples = [_example("a")]
    first = run_generations(["extractive"], examples, PARAMS, out_dir=tmp_path, progress=False)
    other = load_params("quick", {"baselines": {"extractive": {"rounds": 1}}})
    assert settings_folder(tmp_path, other) != settings_folder(tmp_path, PARAMS)
    second = run_generations(["extractive"], examples, other, out_dir=tmp_path, progress=False)
    assert second[0].text != first[0].text  # written anew under the other settings, not read back
    judged = load_params("quick", {"instrument": {"weights": {"support": 2}}, "llm": {"cache_dir": "elsewhere"}})
    assert settings_folder(tmp_path, judged) == settings_folder(tmp_path, PARAMS)  # nothing a generation reads
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted({settings_folder(tmp_path, p).name
                                                                 for p in (PARAMS, other)})


def test_the_plan_scales_the_quick_runs_recorded_costs_to_the_run_without_calling_anything(tmp_path):
    from crewlib.experiments.plan import plan, shipped_rounds

    recorded = shipped_rounds("05")["crew"]  # the rounds of the params file notebook 05 ships with
    pd.DataFrame([{"system": "crew", "LLM calls": 10, "tokens in": 1000, "tokens out": 100},
                  {"system": "srw", "LLM calls": None, "tokens in": None, "tokens out": None},
                  {"system": "long_context", "LLM calls": 1, "tokens in": 2000, "tokens out": 300}]).to_csv(
        tmp_path / "05_crew_table.csv", index=False)
    full = load_params("full")
    table = plan(full, "05", figures=tmp_path).set_index("part")
    # 366 papers, 15 rounds instead of the recorded; calls are whole
    assert table.loc["crew", "calls"] == pytest.approx(10 * 366 * 15 / recorded, abs=0.5)
    assert table.loc["long_context", "prompt tokens"] == 2000 * 366  # a single call: no rounds
    assert any(p.startswith("srw (wrote nothing") for p in table.index)
    judges = next(p for p in table.index if p.startswith("judges"))
    assert table.loc[judges, "calls"] == 2 * 366 * 3 * 3  # two sections a paper, three dimensions, three judges
    assert table.loc["total", "calls"] == table.drop(index="total").calls.sum()
    quick = plan(PARAMS, "05", figures=tmp_path).set_index("part")
    assert quick.loc["crew", "calls"] == round(10 * 5 * PARAMS.baselines.crew.rounds / recorded)  # 5 papers


def test_notebook_08s_plan_adds_its_team_sizes_and_marwgs_ablation(tmp_path):
    from crewlib.experiments.plan import MARWG_PART, plan, shipped_rounds

    cost = {"LLM calls": 10, "tokens in": 1000, "tokens out": 100}
    pd.DataFrame([{"variant": "CREW", **cost}]).to_csv(tmp_path / "08_llm_ablations.csv", index=False)
    pd.DataFrame([{"agents": 2, **cost}, {"agents": 4, "LLM calls": 20, "tokens in": 2000, "tokens out": 200}]).to_csv(
        tmp_path / "08_llm_agents.csv", index=False)
    full = load_params("full")
    assert 6 in full.ablations.llm.agents and full.ablations.marwg.targets is None
    rounds = full.baselines.crew.rounds / shipped_rounds("08")["crew"]
    table = plan(full, "08", figures=tmp_path).set_index("part")
    assert table.loc["2 agents", "calls"] == pytest.approx(10 * 366 * rounds, abs=0.5)
    # six agents were not played in the quick run: the four-agent team's cost per agent
    assert table.loc["6 agents (from 4 agents' cost)", "calls"] == pytest.approx(20 * 1.5 * 366 * rounds, abs=0.5)
    assert "3 agents" not in table.index  # CREW's row
    assert not any(p.startswith(MARWG_PART) for p in table.index)  # no quick MA-RWG run shipped: not estimated
    pd.DataFrame([{"variant": "MA-RWG", **cost}, {"variant": "w/o feedback", **cost}]).to_csv(
        tmp_path / "08_marwg_ablations.csv", index=False)
    quick = plan(PARAMS, "08", figures=tmp_path).set_index("part")
    assert quick.loc[f"{MARWG_PART}w/o feedback", "sections"] == PARAMS.ablations.marwg.targets
    judges = next(p for p in quick.index if p.startswith("judges"))
    # CREW and teams of 2 and 4 on 5 papers are judged, MA-RWG's sections are scored by its own measures
    assert quick.loc[judges, "sections"] == 3 * 5 and quick.loc["total", "sections"] == 3 * 5 + 2 * 2


def test_a_group_limited_to_some_systems_scores_their_sections_only_and_the_tables_say_so(tmp_path):
    """experiments.metric_systems (recorded: MA-RWG's text quality on CREW's and MA-RWG's sections only)."""
    from types import SimpleNamespace

    from crewlib.eval import Evaluator
    from crewlib.experiments.main_results import MainResults, score_groups

    examples = [_example("a"), _example("b")]
    frame = run_generations(["extractive", "primera"], examples, PARAMS, out_dir=tmp_path, progress=False).frame()
    frame = pd.concat([frame, frame[frame.system == "extractive"].assign(system="copy")], ignore_index=True)
    evals = [EvalExample.from_rwg(e) for e in examples]
    scores = score_groups(Evaluator(PARAMS), frame, evals, ["citation", "rouge"], {"rouge": ["copy"]})
    assert set(scores[scores.metric == "citation_recall"].system) == {"extractive", "copy"}
    assert set(scores[scores.metric == "rougeL"].system) == {"copy"}
    lost = [u for u in scores.attrs["unavailable"] if u["system"] == "primera"]  # kept through the concat
    assert len(lost) == 2 and {u["group"] for u in lost} == {"*"}
    assert set(scores.attrs["timing_s"]) == {"citation", "rouge"}
    run = MainResults(SimpleNamespace(frame=lambda: frame), scores, examples, ("citation", "rouge"), {}, None,
                      ("extractive", "copy"), only={"rouge": ["copy"]})
    table = run._table({"citation_recall": "recall", "rougeL": "ROUGE-L", "tq": "TQ"})
    assert table.loc["extractive", "ROUGE-L"] == "not run (rouge: copy only)"
    assert re.fullmatch(r"\d\.\d\d \[.*\]", table.loc["copy", "ROUGE-L"])
    assert table.loc["copy", "TQ"] == "not run (tq)"
    narrowed = score_groups(Evaluator(PARAMS), frame, evals, ["citation"], {"rouge": ["copy"]})
    assert "rougeL" not in set(narrowed.metric) and "citation_recall" in set(narrowed.metric)
