"""The instrument (crewlib/eval/instrument.py): pairwise judge in both orders, composite, verdicts, discrimination."""

from __future__ import annotations

import json
from types import SimpleNamespace

import numpy as np
import pandas as pd
import pytest
from fakes import ScriptedOpenAIServer, Step

from crewlib.config import load_params
from crewlib.data.records import Reference, RWGExample
from crewlib.eval import EvalExample
from crewlib.eval.instrument import (
    COMPOSITE,
    OFFLINE_COMPOSITE,
    composite_delta,
    instrument_settings,
    pairwise_preference,
    pairwise_table,
    position_consistency,
    rekey,
    verdicts,
)
from crewlib.eval.llm_metrics import Judge
from crewlib.experiments import discrimination as disc

PARAMS = load_params("quick")
SETTINGS = instrument_settings(PARAMS)


def _example(target_id="t1") -> EvalExample:
    refs = tuple(Reference(f"p{i}", f"Paper {i}", f"Paper {i} studies graph attention variant {i}.") for i in range(3))
    return EvalExample.from_rwg(RWGExample(target_id, "Graph attention", "We study attention on graphs.", refs,
                                           gold_related_work="Attention on graphs [R1]. A variant [R2].",
                                           gold_cited_ids=("p0", "p1")))


def _chooser(pick):
    """A scripted judge answering with ``pick(section_a, section_b)`` → "A" or "B"."""
    def answer(request: dict) -> str:
        prompt = request["messages"][-1]["content"]
        a = prompt.split("Section A:")[1].split("Section B:")[0]
        b = prompt.split("Section B:")[1].split("Which section")[0]
        return json.dumps({"reason": "because", "better": pick(a, b)})
    return answer


def test_a_preference_counts_only_when_both_orders_choose_the_same_section(make_client):
    example = _example()
    with ScriptedOpenAIServer(default=Step(content=_chooser(lambda a, b: "A" if "good" in a else "B"))) as server:
        judge = Judge("j", make_client(server))
        agree = pairwise_preference(judge, example, "good text [R1].", "bad text [R1].", "overall", max_tokens=50)
        agree_second = pairwise_preference(judge, example, "bad text.", "good text.", "overall", max_tokens=50)
    assert (agree.preference, agree.consistent) == (1.0, True)
    assert (agree_second.preference, agree_second.consistent) == (-1.0, True)
    first_request = server.requests[0]["messages"][-1]["content"]
    assert "[R1] Paper 0" in first_request and "good text" in first_request.split("Section B:")[0]
    with ScriptedOpenAIServer(default=Step(content=_chooser(lambda a, b: "A"))) as server:  # always the first shown
        biased = pairwise_preference(Judge("j", make_client(server)), example, "x.", "y.", "logic", max_tokens=50)
    assert (biased.preference, biased.consistent) == (0.0, False)  # position bias is a tie, not a win


def test_a_pairwise_answer_that_stays_invalid_is_missing_not_a_tie(make_client):
    with ScriptedOpenAIServer(default=Step(content="I prefer the first one")) as server:
        missing = pairwise_preference(Judge("j", make_client(server)), _example(), "x.", "y.", "overall",
                                      max_tokens=50, retries=0)
    assert missing.preference is None and missing.consistent is None and missing.reason
    with pytest.raises(ValueError, match="no pairwise criterion"):
        pairwise_preference(Judge("j", None), _example(), "x.", "y.", "fluency", max_tokens=50)


def test_position_consistency_is_the_share_of_answered_pairs_whose_orders_agree(make_client):
    example = _example()
    pairs = [(example, "gold", "good one.", "dmg", "bad one."), (example, "gold", "x one.", "dmg2", "y one.")]
    with ScriptedOpenAIServer(default=Step(content=_chooser(lambda a, b: "A" if "good" in a else
                                                            ("B" if "good" in b else "A")))) as server:
        table = pairwise_table(Judge("j", make_client(server)), pairs, ["overall"], max_tokens=50)
    assert list(table.preference) == [1.0, 0.0] and list(table.consistent) == [True, False]
    consistency = position_consistency(table).iloc[0]
    assert consistency["pairs"] == 2 and consistency["answered"] == 2 and consistency["consistent"] == 0.5


def test_rekey_writes_a_sections_citations_in_the_examples_own_keys():
    example = _example()  # default keys R1 → p0, R2 → p1, R3 → p2
    assert rekey("A [R1] and [R3, R2]; [R9].", {"R1": "p2", "R2": "p0", "R3": "p1"}, example) == \
        "A [R3] and [R2, R1]; [R9]."


def test_the_composite_weighs_each_measure_by_its_direction_and_the_preference_lightly():
    better = {"citation_recall": 1.0, "support": 0.7, "repeated_sentences_rate": 0.0, "truncated": 0.0}
    worse = {"citation_recall": 1.0, "support": 0.7, "repeated_sentences_rate": 0.2, "truncated": 1.0}
    assert composite_delta(better, worse, None, SETTINGS) == pytest.approx(1.2)  # less repetition, not cut
    assert composite_delta(better, better, -1.0, SETTINGS) == pytest.approx(-SETTINGS.pairwise_weight)
    # a preference cannot outvote a measured difference larger than its weight
    assert composite_delta({"support": 0.8}, {"support": 0.7}, -1.0, SETTINGS) > 0
    assert composite_delta({"support": 0.8}, {"coherence": 0.1}, None, SETTINGS) == 0  # measured on one side only
    entailed = {"support": 0.7, "claim_support": 1.0}
    full = instrument_settings(load_params("full"))  # the paper's judges' entailment counts
    assert composite_delta(entailed, {"support": 0.7, "claim_support": 0.5}, 1.0, full) == pytest.approx(
        0.5 + full.pairwise_weight)
    assert composite_delta(entailed, {"support": 0.7, "claim_support": 0.5}, 1.0, full, llm=False) == 0
    # version 3 with the 1.5B: its entailment is reported, not counted (docs/method.md)
    assert composite_delta(entailed, {"support": 0.7, "claim_support": 0.5}, None, SETTINGS) == 0
    with pytest.raises(ValueError, match="unknown measures"):
        instrument_settings(load_params("quick", {"instrument": {"weights": {"rouge_l": 1}}}))


def test_verdicts_rank_each_pair_by_every_instrument():
    scores = pd.DataFrame([
        {"system": "gold", "example": "e", "metric": "citation_recall", "value": 1.0},
        {"system": "dmg", "example": "e", "metric": "citation_recall", "value": 0.5},
        {"system": "gold", "example": "e", "metric": "first_person_rate", "value": 0.1},
        {"system": "dmg", "example": "e", "metric": "first_person_rate", "value": 0.0},
        {"system": "gold", "example": "e", "metric": "judge_overall", "value": 3.0},
        {"system": "dmg", "example": "e", "metric": "judge_overall", "value": 3.0},
    ])
    prefs = pd.DataFrame([{"example": "e", "first": "gold", "second": "dmg", "dimension": "overall",
                           "preference": -1.0, "consistent": True}])
    found = verdicts(scores, prefs, [("e", "gold", "dmg")], SETTINGS).set_index("instrument")
    assert found.loc["citation_recall", "verdict"] == 1 and found.loc["first_person_rate", "verdict"] == -1
    assert found.loc["judge:overall", "verdict"] == 0 and found.loc["pairwise:overall", "verdict"] == -1
    assert found.loc[COMPOSITE, "delta"] == pytest.approx(0.5 - 0.1 - 0.05) and found.loc[COMPOSITE, "verdict"] == 1
    assert pd.isna(found.loc["support", "verdict"])  # not measured: no verdict, not a tie
    table = disc.verdict_table(found.reset_index()).set_index("instrument")
    assert "support" not in table.index and table.loc[COMPOSITE, "correct"] == 1.0


def test_the_discrimination_test_runs_every_instrument_per_judge(make_client):
    examples = [_example("a"), _example("b")]
    params = load_params("quick", {"instrument": {"entailment": False,
                                                  "damages": ["citations_removed", "paragraph_repeated"]}})

    def answer(request: dict) -> str:
        prompt = request["messages"][-1]["content"]
        if "Section A:" in prompt:
            return _chooser(lambda a, b: "A" if len(a) <= len(b) else "B")(request)  # the shorter one
        return json.dumps({"rationale": "fine", "score": 4})

    with ScriptedOpenAIServer(default=Step(content=answer)) as server:
        check = disc.instrument_discrimination(params, examples, judges=[Judge("j", make_client(server))])
    table = check.table.set_index(["instrument", "damage"])
    assert table.loc[("pairwise:overall", "paragraph_repeated"), "correct"] == 1.0  # the repeat is longer
    assert table.loc[("pairwise:overall", "citations_removed"), "correct"] == 0.0  # the copy without keys is shorter
    assert table.loc[("citation_recall", "citations_removed"), "correct"] == 1.0
    assert table.loc[("judge:overall", "citations_removed"), "ties"] == 1.0
    assert table.loc[(COMPOSITE, "citations_removed"), "correct"] == 1.0
    assert check.consistency.iloc[0]["consistent"] == 1.0 and check.skipped == []
    summary = check.summary().set_index("instrument")
    assert summary.loc[COMPOSITE, "pairs"] == 4 and summary.loc[COMPOSITE, "worst"] == 1.0

    with ScriptedOpenAIServer(default=Step(content=answer)) as server:  # the absolute judge on one paper only
        part = disc.instrument_discrimination(params, examples, judges=[Judge("j", make_client(server))],
                                              absolute={"b"})
    table = part.table.set_index(["instrument", "damage"])
    assert table.loc[("judge:overall", "citations_removed"), "pairs"] == 1  # paper b's pair only
    assert table.loc[(COMPOSITE, "citations_removed"), "pairs"] == 2


def test_each_discrimination_set_is_measured_apart_and_the_conclusion_reads_the_held_out_one():
    from crewlib.experiments.paired import conclusion, discrimination_basis

    def check(correct: float) -> disc.InstrumentCheck:
        table = pd.DataFrame([{"instrument": COMPOSITE, "damage": d, "pairs": 10, "correct": correct, "ties": 0.0,
                               "judge": j} for j in ("one", "two") for d in ("claims_swapped", "cut_mid_sentence")])
        empty = pd.DataFrame()
        return disc.InstrumentCheck(table, empty, empty, empty, empty, [{"example": "x", "damage": "d"}])

    both = disc.InstrumentCheck.combine({"all": check(0.5), "holdout": check(0.95)})
    assert list(both.table.columns)[0] == "papers" and len(both.table) == 8
    assert both.skipped == [{"papers": "all", "example": "x", "damage": "d"},
                            {"papers": "holdout", "example": "x", "damage": "d"}]
    summary = both.summary().set_index(["papers", "judge"])
    assert summary.loc[("all", "one"), "correct"] == 0.5 and summary.loc[("holdout", "two"), "pairs"] == 20
    basis = discrimination_basis(both.table)
    assert set(basis.papers) == {"holdout"} and set(basis.judge) == {"one"}  # the first judge, held-out papers
    assert set(discrimination_basis(both.table[both.table.papers == "all"]).papers) == {"all"}
    table = pd.DataFrame([{"CREW better": 3, "tie": 0, "CREW worse": 2, "papers": 5, "sign test p": 1.0,
                           "instrument": COMPOSITE}], index=["srw"])
    assert "in 95% of 20 pairs (2 damages), at least 95% for every damage" in conclusion(table, basis)


def test_the_absolute_judge_is_asked_only_on_the_evaluation_targets_of_each_set(make_client, monkeypatch):
    from crewlib.experiments import main_results

    asked = []
    monkeypatch.setattr(main_results, "discrimination_examples",  # one paper per set, named as its set
                        lambda params, evaluation, name: [SimpleNamespace(example_id=name)])
    monkeypatch.setattr(disc, "instrument_discrimination", lambda params, examples, judges, absolute, progress:
                        asked.append((examples[0].example_id, absolute)) or check_stub())

    def check_stub():
        table = pd.DataFrame([{"instrument": COMPOSITE, "damage": "d", "pairs": 1, "correct": 1.0, "ties": 0.0,
                               "judge": "j"}])
        return disc.InstrumentCheck(table, pd.DataFrame(), pd.DataFrame(), pd.DataFrame(), pd.DataFrame(), [])

    monkeypatch.setattr(main_results, "absolute_judged", lambda settings, evaluation: {"all"})
    params = load_params("quick", {"instrument": {"papers": ["all", "holdout"]}})
    found = main_results.measure_instrument(params, [])
    assert asked == [("all", {"all"}), ("holdout", set())]  # no evaluation target among the held-out papers
    assert list(found.table.papers) == ["all", "holdout"]
    single = main_results.measure_instrument(load_params("quick", {"instrument": {"papers": ["holdout"]}}), [],
                                             absolute=False)
    assert "papers" not in single.table and asked[-1] == ("holdout", False)


def test_with_the_papers_judges_each_judges_discrimination_stands_side_by_side(make_client):
    params = load_params("quick", {"instrument": {"entailment": False, "damages": ["paragraph_repeated"]}})
    shorter = _chooser(lambda a, b: "A" if len(a) <= len(b) else "B")
    first = _chooser(lambda a, b: "A")  # a judge that always picks the section shown first

    with ScriptedOpenAIServer(default=Step(content=shorter)) as one, \
            ScriptedOpenAIServer(default=Step(content=first)) as two:
        check = disc.instrument_discrimination(params,
                                               [_example("a"), _example("b")], absolute=False,
                                               judges=[Judge("gpt-4o", make_client(one, model="gpt-4o")),
                                                       Judge("claude", make_client(two, model="claude"))])
    pairwise = check.table[check.table.instrument == "pairwise:overall"].set_index("judge")
    assert list(pairwise.index) == ["gpt-4o", "claude"]
    assert pairwise.loc["gpt-4o", "correct"] == 1.0 and pairwise.loc["claude", "ties"] == 1.0
    consistency = check.consistency.set_index("judge")["consistent"]
    assert consistency["gpt-4o"] == 1.0 and consistency["claude"] == 0.0  # "A" both ways: the orders disagree


def _pairs(rows):
    return pd.DataFrame([{"example": e, "first": "gold", "second": "dmg", "instrument": m, "verdict": 0.0,
                          "delta": d} for e, deltas in rows.items() for m, d in deltas.items()])


def test_calibration_weighs_the_measure_that_separates_and_is_reported_on_the_other_half():
    from crewlib.eval.instrument import CALIBRATED, calibrate, cross_fitted

    # support always ranks the gold first; coherence points the wrong way as often as the right one
    rows = {f"p{i}": {"support": 0.2, "coherence": (-0.3 if i // 2 % 2 else 0.3)} for i in range(8)}
    weights = calibrate(_pairs(rows), ["support", "coherence"])
    assert weights["support"] > 0.5 > 0.1 > weights["coherence"] >= 0
    found = cross_fitted(_pairs(rows), ["support", "coherence"])
    assert set(found.instrument) == {CALIBRATED} and len(found) == 8 and (found.verdict == 1).all()
    with pytest.raises(ValueError, match="no pairs"):
        calibrate(_pairs({}), ["support"])


def _found(deltas: dict[str, list[float]], judge: dict[str, list[float]] | None = None, *,
           llm: bool = True) -> pd.DataFrame:
    rows = []
    for system, values in deltas.items():
        for i, d in enumerate(values):
            rows.append({"example": f"p{i}", "first": "crew", "second": system, "instrument": COMPOSITE,
                         "verdict": float(np.sign(d)), "delta": d})
            if llm:  # the pairwise judge asked: the composite with the LLM's parts
                rows.append({"example": f"p{i}", "first": "crew", "second": system, "instrument": "pairwise:overall",
                             "verdict": 0.0, "delta": 0.0})
            if judge:
                rows.append({"example": f"p{i}", "first": "crew", "second": system, "instrument": "judge:overall",
                             "verdict": float(np.sign(judge[system][i])), "delta": judge[system][i]})
    return pd.DataFrame(rows)


def test_the_paired_table_counts_wins_ties_losses_and_tests_their_sign():
    from crewlib.experiments.paired import conclusion, paired_table

    found = _found({"srw": [0.5, 0.2, 0.3, 0.1, 0.4, 0.6, 0.2], "rag": [0.1, -0.2, 0.0, 0.3, -0.1, 0.2, -0.3],
                    "extractive": [-0.5, -0.2, -0.3, -0.1, -0.4, -0.6, -0.2]},
                   judge={"srw": [1, 0, 0, 0, 0, 0, 0], "rag": [0] * 7, "extractive": [-1] * 7})
    table = paired_table(found, paper_differences={"srw": 0.06})
    srw, rag = table.loc["srw"], table.loc["rag"]
    assert (srw["CREW better"], srw["tie"], srw["CREW worse"]) == (7, 0, 0) and srw["sign test p"] == pytest.approx(
        2 / 2 ** 7)
    assert (rag["CREW better"], rag["tie"], rag["CREW worse"]) == (3, 1, 3) and rag["sign test p"] == 1.0
    assert srw["ci_low"] < srw["composite Δ"] < srw["ci_high"] and srw["paper Overall Δ"] == 0.06
    assert srw["judge Overall Δ"] == pytest.approx(1 / 7) and np.isnan(rag["paper Overall Δ"])
    weak = pd.DataFrame([{"instrument": COMPOSITE, "damage": "sentences_shuffled", "pairs": 10, "correct": 0.6},
                         {"instrument": COMPOSITE, "damage": "citations_removed", "pairs": 10, "correct": 1.0}])
    text = conclusion(table, weak)
    assert "better than srw" in text and "worse than extractive" in text and "either way against rag" in text
    assert "80% of 20 pairs (2 damages), 60% for its worst damage (sentences shuffled), below the 90%" in text
    strong = weak.assign(correct=1.0)
    assert conclusion(table, strong, unit="cluster").endswith("at least 100% for every damage.")
    assert conclusion(table, None, unit="cluster").startswith("On the instrument, cluster by cluster (7 clusters)")
    # without the LLM's parts the table says so, and its sentence reads that composite's discrimination
    offline = paired_table(_found({"srw": [0.5, 0.2, 0.3, 0.1, 0.4, 0.6, 0.2]}, llm=False))
    assert offline.loc["srw", "instrument"] == OFFLINE_COMPOSITE and table.loc["srw", "instrument"] == COMPOSITE
    both = pd.concat([weak, strong.assign(instrument=OFFLINE_COMPOSITE)])
    text = conclusion(offline, both)
    assert text.startswith("On the instrument without its LLM parts, paper by paper") and "100% for every" in text
