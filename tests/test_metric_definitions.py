"""Each metric as its paper defines it, on small texts whose expected value is computed by hand."""

import json
import math

import numpy as np
import pytest
from fakes import ScriptedOpenAIServer, Step
from quick_settings import QUICK, bare_workspace, quick_with

from crewlib.data.records import Reference
from crewlib.env.observation import FEATURE_NAMES, draft_stats, observe
from crewlib.eval import EvalExample, EvalReference, Evaluator, rwgbench
from crewlib.eval import marwg_metrics as marwg
from crewlib.eval.llm_metrics import RWGBENCH_DIMENSIONS, Judge
from crewlib.tasks import Task

KEYS = {"R1": "a", "R2": "b", "R3": "c", "R4": "d", "R5": "x"}
REFS = tuple(EvalReference(i, f"Paper {i}", f"Abstract of paper {i}.") for i in "abcdx")


def example(gold="", gold_cited=("a", "b", "c", "d"), abstract="Target abstract."):
    return EvalExample("t", "Target", abstract, gold, REFS, gold_cited, "R", KEYS)


def score(text, ex, metrics, evaluator=None):
    evaluator = evaluator or Evaluator(QUICK)
    scores = evaluator.score([{"system": "s", "example": "t", "text": text}], [ex], metrics=metrics, progress=False)
    values = dict(scores[["metric", "value"]].itertuples(index=False))
    unavailable = {(u["group"], u["metric"]): u["reason"] for u in scores.attrs["unavailable"]}
    return values, unavailable, scores


# ------------------------------------------------------------------ MA-RWG CC and RC
def test_cc_is_the_mean_of_distinct_resolved_citations_per_cited_sentence():
    # Cited sentences "A [R1][R2]." (2) and "B [R3]." (1); "C." carries no marker: (2 + 1) / 2 = 1.5.
    per_sentence = [ids for _, ids in rwgbench.citing_sentences("A [R1][R2]. B [R3]. C.", KEYS)]
    assert marwg.citation_count(per_sentence) == 1.5
    # A repeat counts once, an unresolvable marker zero (its sentence still counts): (1 + 0) / 2 = 0.5.
    values, _, _ = score("A [R1, R1]. B [R9].", example(), ["citation"])
    assert values["cc"] == 0.5
    values, _, _ = score("A [R1][R2]. B [R3]. C.", example(), ["citation"])
    assert values["cc"] == 1.5


def test_rc_is_the_share_of_the_gold_reference_list_cited():
    # Gold list {a, b, c, d}, cited {a, c, x}: |{a, c}| / 4 = 0.5 (x is in the pool but not gold).
    assert marwg.reference_coverage(["a", "c", "x"], ["a", "b", "c", "d"]) == 0.5
    values, unavailable, _ = score("A [R1]. C [R3]. X [R5].", example(), ["citation"])
    assert values["rc"] == 0.5
    # No gold list: RC is unavailable and counted, neither 0 nor 1.
    values, unavailable, _ = score("A [R1]. C [R3].", example(gold_cited=()), ["citation"])
    assert "rc" not in values and ("citation", "rc") in unavailable


# ------------------------------------------------------------------ citation verification without markers
def test_a_text_without_citations_has_no_verification_and_no_cc():
    values, unavailable, scores = score("Graphs are useful. Trees too.", example(), ["citation"])
    assert "citation_verification" not in values and "cc" not in values
    assert ("citation", "citation_verification") in unavailable and ("citation", "cc") in unavailable
    assert values["citation_markers"] == 0.0 and not scores.value.isna().any()
    # A stray author–year citation is a citation no key resolves: verification 0/1 = 0, not unavailable.
    values, _, _ = score("Graphs are useful (Smith et al., 2020).", example(), ["citation"])
    assert values["citation_verification"] == 0.0
    # Three markers, two resolve: 2/3.
    values, _, _ = score("A [R1, R9]. B [R2].", example(), ["citation"])
    assert values["citation_verification"] == pytest.approx(2 / 3)


def test_observation_citation_validity_of_a_draft_without_markers_is_zero():
    refs = tuple(Reference(f"p{i}", f"Paper {i}", f"Paper {i} studies summarisation.") for i in range(2))
    task = Task("t", "Target", "We summarise.", refs, {"p0": 1.0, "p1": 0.5}, {"p0": 1.0, "p1": 0.0},
                target_words=100)
    ws = bare_workspace(2)
    ws.write_segment(0, "Summarisation is studied widely. No paper is cited here.", None, t=1)
    stats = draft_stats(ws, task)
    obs = observe(ws, task, agent=0, t=1, horizon=5, stats=stats, caps=QUICK.env.caps)
    assert FEATURE_NAMES[10] == "citation_validity"  # the 11th feature
    assert stats.validity == 0.0 and obs[10] == 0.0


# ------------------------------------------------------------------ RWGBench topical relevance
def test_topical_relevance_is_the_mean_cosine_of_cited_abstracts_with_the_target_abstract(monkeypatch):
    e = np.eye(3)
    vectors = {"Target abstract.": e[0], REFS[0].text: e[0], REFS[1].text: (e[0] + e[1]) / math.sqrt(2)}

    def fake_embed(texts):  # only the cited papers and the target abstract may be embedded, not the text
        return np.array([vectors[t] for t in texts])

    monkeypatch.setattr("crewlib.relevance.embed", fake_embed)
    # Cited a (cosine 1) and b (cosine 1/√2): (1 + 0.7071) / 2 = 0.8536; the repeat of a counts once.
    values, _, _ = score("A [R1]. B [R2]. Again A [R1].", example(), ["topical_relevance"])
    assert values["topical_relevance"] == pytest.approx((1 + 1 / math.sqrt(2)) / 2)
    _, unavailable, _ = score("No citation.", example(), ["topical_relevance"])
    assert ("topical_relevance", "*") in unavailable


# ------------------------------------------------------------------ RWGBench gold claims
def test_gold_claims_find_marker_and_author_year_citations():
    gold = "Smith et al. (2019) parse graphs. Trees are embedded [R2]. Doe (2021) ranks nodes."
    claims = rwgbench.gold_claims(gold, KEYS, "R", {"a": ("Smith", 2019), "c": ("Doe", 2020)})
    assert claims == {"a": "Smith et al. (2019) parse graphs.", "b": "Trees are embedded."}  # Doe's year differs


# ------------------------------------------------------------------ RWGBench judge score
def test_rwgbench_judge_score_is_the_mean_of_its_four_own_dimensions(make_client):
    scores_given = {"coherence": 5, "organisation": 4, "fluency": 3, "academic_style": 2}
    with ScriptedOpenAIServer() as server:
        server.script.extend([Step(content=json.dumps({"rationale": "ok", "score": scores_given[d]}))
                              for d in RWGBENCH_DIMENSIONS])
        evaluator = Evaluator(quick_with(eval={"workers": 1}), judges=[Judge("only", make_client(server))])
        values, _, _ = score("A [R1]. B [R2].", example(), ["rwgbench_judge"], evaluator)
        prompts = [r["messages"][1]["content"] for r in server.requests]
    # (5 + 4 + 3 + 2) / 4 = 3.5 on the 1–5 scale, 0.625 on RWGBench's 0–1 (the paper's direct judge: 0.720)
    assert values["rwgbench_judge_score"] == 0.625 and values["rwgbench_judge_academic_style"] == 2
    assert len(prompts) == 4 and "Grade the academic style" in prompts[3]
    assert not any("Papers the section may cite" in p for p in prompts)  # not CREW's judge prompt
    assert rwgbench.judge_score(scores_given) == 0.625
    assert rwgbench.judge_score(dict.fromkeys(RWGBENCH_DIMENSIONS, 1)) == 0.0
    assert rwgbench.judge_score(dict.fromkeys(RWGBENCH_DIMENSIONS, 5)) == 1.0
    with pytest.raises(ValueError, match="every dimension"):
        rwgbench.judge_score({"coherence": 5})
