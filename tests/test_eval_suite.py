"""The evaluation suite end to end: tidy scores, unavailable metrics, missing judgements, the embedded judge."""

import json

import pytest
from fakes import ScriptedOpenAIServer, Step
from quick_settings import QUICK, quick_with

from crewlib.config import ParamsError
from crewlib.eval import EvalExample, EvalReference, Evaluator
from crewlib.eval.llm_metrics import Judge

EXAMPLE = EvalExample(
    example_id="t1", target_title="Graph transformers for molecules",
    target_abstract="We combine message passing with attention for molecular property prediction.",
    gold="Message passing networks predict molecular properties [R1]. Attention models capture long-range "
         "interactions [R2].\n\nBenchmarks compare them on standard datasets [R3].",
    references=(EvalReference("a", "Neural message passing for quantum chemistry",
                              "Message passing neural networks predict molecular properties."),
                EvalReference("b", "Attention is all you need", "The transformer relies entirely on attention."),
                EvalReference("c", "MoleculeNet", "A benchmark of molecular machine learning datasets."),
                EvalReference("d", "ImageNet", "A large image database.")),
    gold_cited_ids=("a", "b", "c"), default_keys={"R1": "a", "R2": "b", "R3": "c", "R4": "d"},
)
GOOD = "Message passing networks predict molecular properties [R1]. Attention models long-range effects [R2]."
HALLUCINATED = "Message passing networks predict molecular properties [R1]. Attention models long-range effects [R7]."


def _values(scores, system):
    return dict(scores[scores.system == system][["metric", "value"]].itertuples(index=False))


def test_reference_metrics_tidy_frame_and_hallucinated_key_lowers_verification():
    outputs = [{"system": "good", "example": "t1", "text": GOOD, "prompt_tokens": 100, "completion_tokens": 20,
                "calls": 2, "wall_s": 1.5},
               {"system": "bad", "example": "t1", "text": HALLUCINATED},
               {"system": "gold", "example": "t1", "text": EXAMPLE.gold},
               {"system": "primera", "example": "t1", "text": None, "error": "weights not available offline"}]
    scores = Evaluator(QUICK).score(outputs, [EXAMPLE], progress=False,
                                    metrics=["citation", "rouge", "soft_recall_cosine", "pss", "cost"])
    assert list(scores.columns) == ["system", "example", "metric", "value"]
    good, bad, gold = _values(scores, "good"), _values(scores, "bad"), _values(scores, "gold")
    assert good["citation_verification"] == 1.0 and bad["citation_verification"] == 0.5
    assert good["citation_recall"] == pytest.approx(2 / 3) and bad["citation_recall"] == pytest.approx(1 / 3)
    assert gold["rougeL"] == 1.0 and gold["pss"] == pytest.approx(1.0, abs=1e-5) and gold["citation_recall"] == 1.0
    assert good["pss"] < gold["pss"]
    assert good["soft_recall_cosine"] >= good["citation_recall"]
    assert good["prompt_tokens"] == 100 and good["wall_s"] == 1.5 and "prompt_tokens" not in bad
    assert "primera" not in set(scores.system)  # never a number for a system that produced nothing
    unavailable = {(u["system"], u["group"]): u["reason"] for u in scores.attrs["unavailable"] if u["metric"] == "*"}
    assert unavailable[("primera", "*")] == "weights not available offline"
    assert "cost columns" in unavailable[("bad", "cost")]
    assert set(scores.attrs["timing_s"]) == {"citation", "rouge", "soft_recall_cosine", "pss", "cost"}


def test_grounding_tells_a_supported_section_from_a_misattributed_repetitive_one():
    swapped = ("Message passing neural networks predict molecular properties [R2]. The transformer relies entirely "
               "on attention [R1]. The transformer relies entirely on attention [R2]. We predict properties.")
    outputs = [{"system": "good", "example": "t1", "text": GOOD.replace("models long-range effects",
                                                                          "relies entirely on attention")},
               {"system": "swapped", "example": "t1", "text": swapped},
               {"system": "uncited", "example": "t1", "text": "Message passing networks predict properties."}]
    scores = Evaluator(QUICK).score(outputs, [EXAMPLE], metrics=["grounding"], progress=False)
    good, bad = _values(scores, "good"), _values(scores, "swapped")
    assert good["supported_share"] == 1.0 and bad["supported_share"] == pytest.approx(1 / 3)
    assert bad["repeated_sentences_rate"] == 0.25 and bad["first_person_rate"] == 0.25
    assert good["repeated_sentences_rate"] == good["first_person_rate"] == good["uncited_claims_rate"] == 0
    assert "supported_share" not in _values(scores, "uncited")  # nothing cited: unavailable, never 1.0
    assert ("uncited", "supported_share") in {(u["system"], u["metric"]) for u in scores.attrs["unavailable"]}


def test_metrics_that_need_gold_are_unavailable_without_it():
    no_gold = EvalExample("t2", "T", "abstract", "", EXAMPLE.references, (), "R", EXAMPLE.default_keys)
    scores = Evaluator(QUICK).score([{"system": "s", "example": "t2", "text": GOOD}], [no_gold],
                                 metrics=["citation", "rouge", "soft_recall_cosine"], progress=False)
    assert "citation_recall" not in set(scores.metric) and "rouge1" not in set(scores.metric)
    assert _values(scores, "s")["citation_verification"] == 1.0
    unavailable = {(u["group"], u["metric"]) for u in scores.attrs["unavailable"]}
    assert unavailable == {("rouge", "*"), ("soft_recall_cosine", "*"), ("citation", "rc"),
                           ("citation", "citation_precision"), ("citation", "citation_recall"),
                           ("citation", "citation_density_ratio")}


def test_bad_inputs_raise_clear_errors():
    evaluator = Evaluator(QUICK)
    with pytest.raises(ValueError, match="unknown metric groups"):
        evaluator.score([], [EXAMPLE], metrics=["bleu"])
    with pytest.raises(ValueError, match="unknown example"):
        evaluator.score([{"system": "s", "example": "nope", "text": "x"}], [EXAMPLE], progress=False)
    with pytest.raises(ValueError, match="no 'text' column"):
        evaluator.score([{"system": "s", "example": "t1"}], [EXAMPLE], progress=False)
    with pytest.raises(ParamsError, match="eval.judge_retry: unknown setting"):
        quick_with(eval={"judge_retry": 2})


def _judge_answer(score, rationale="ok"):
    return json.dumps({"rationale": rationale, "score": score})


def test_judges_average_and_missing_judgements_are_counted_not_scored(make_client):
    with ScriptedOpenAIServer(default=Step(content=_judge_answer(4))) as s1, \
         ScriptedOpenAIServer(default=Step(content=_judge_answer(2))) as s2:
        # Judge 2's coverage answer is garbage four times in a row (first ask, re-ask, retry, its re-ask).
        s2.script.extend([Step(content="not json")] * 2 + [Step(content=_judge_answer(9))] * 2)
        # Both scripted judges share a model name, so they must not share a cache.
        judges = [Judge("j1", make_client(s1)), Judge("j2", make_client(s2, cache_mode="off"))]
        evaluator = Evaluator(quick_with(eval={"workers": 1, "judge_retries": 1}), judges=judges)
        scores = evaluator.score([{"system": "s", "example": "t1", "text": GOOD}], [EXAMPLE], metrics=["judge"],
                                 progress=False)
    values = _values(scores, "s")
    assert values["judge_coverage"] == 4.0  # only j1 answered: the missing one is not a score
    assert values["judge_logic"] == 3.0 and values["judge_relevance"] == 3.0  # mean of 4 and 2
    assert values["judge_overall"] == pytest.approx(10 / 3)
    assert "judge_score_01" not in values  # RWGBench's judge score is its own judgement (rwgbench_judge)
    missing = scores.attrs["missing"]
    assert len(missing) == 1 and missing[0]["judge"] == "j2" and missing[0]["dimension"] == "coverage"
    assert "score" in missing[0]["reason"]  # the out-of-range 9 is why
    assert len(scores.attrs["judgements"]) == 5
    assert len(s2.requests) == 4 + 2  # coverage: 2 asks × (ask + re-ask); logic, relevance: one each


def test_overall_is_not_reported_from_an_incomplete_set_of_dimensions(make_client):
    with ScriptedOpenAIServer(default=Step(content=_judge_answer(5))) as server:
        server.script.extend([Step(content="{}")] * 4)
        evaluator = Evaluator(quick_with(eval={"workers": 1, "judge_retries": 1}),
                              judges=[Judge("only", make_client(server))])
        scores = evaluator.score([{"system": "s", "example": "t1", "text": GOOD}], [EXAMPLE], metrics=["judge"],
                                 progress=False)
    values = _values(scores, "s")
    assert "judge_coverage" not in values and "judge_overall" not in values
    assert values["judge_logic"] == 5.0 and len(scores.attrs["missing"]) == 1


def test_claim_support_and_frame_alignment_from_llm_labels(make_client):
    with ScriptedOpenAIServer() as server:
        server.script.extend([Step(content='{"reason": "stated", "label": "entailment"}'),
                              Step(content='{"reason": "not said", "label": "neutral"}')])
        # Frame alignment, one call per sentence: gold has 3 citing sentences, the output 2, whose first is
        # word for word gold's first — answered from the cache, so only 4 calls.
        functions = ["background", "background", "uses", "uses"]
        server.script.extend([Step(content=json.dumps({"function": f})) for f in functions])
        evaluator = Evaluator(quick_with(eval={"workers": 1}), judges=[Judge("only", make_client(server))])
        scores = evaluator.score([{"system": "s", "example": "t1", "text": GOOD}], [EXAMPLE],
                                 metrics=["claim_support", "frame_alignment"], progress=False)
    values = _values(scores, "s")
    assert values["claim_support"] == 0.75 and values["clap"] == 0.5 and values["citp"] == 0.5
    assert values["nli_pairs"] == 2 and len(server.requests) == 2 + 4
    # Gold (2/3 background, 1/3 uses) vs output (½, ½): 1 − JSD, computed by hand.
    import math

    m = (7 / 12, 5 / 12)
    kl = lambda p: sum(pi * math.log2(pi / mi) for pi, mi in zip(p, m, strict=True))
    assert values["frame_alignment"] == pytest.approx(1 - 0.5 * (kl((0.5, 0.5)) + kl((2 / 3, 1 / 3))))


@pytest.mark.llm
def test_embedded_judge_scores_a_small_table_end_to_end(embedded_server, tmp_path):
    from crewlib.llm import LLMClient, ResponseCache
    from crewlib.llm.settings import cache_path, llm_config

    cfg = llm_config(provider="openai", base_url=embedded_server.base_url, model=embedded_server.alias,
                     api_key_env="", max_tokens=200, cache_dir=str(tmp_path / "cache"))
    client = LLMClient(cfg, cache=ResponseCache(cache_path(cfg), "read_write"))
    evaluator = Evaluator(QUICK, judges=[Judge("embedded", client)])
    outputs = [{"system": "good", "example": "t1", "text": GOOD},
               {"system": "bad", "example": "t1", "text": "Bananas are yellow [R9]."}]
    scores = evaluator.score(outputs, [EXAMPLE], metrics=["citation", "judge", "claim_support"], progress=False)
    judged = scores[scores.metric.str.startswith("judge_") & (scores.metric != "judge_overall")]
    # Every judgement is either a score in 1..5 or a counted missing entry: 2 outputs × 3 dimensions.
    assert judged.value.between(1, 5).all()
    assert len(judged) + sum(m["metric"] == "judge" for m in scores.attrs["missing"]) == 6
    assert len(scores.attrs["judgements"]) + sum(m["metric"] == "judge" for m in scores.attrs["missing"]) == 6
    assert _values(scores, "bad")["citation_verification"] == 0.0


def test_judges_come_from_params_and_override_the_llm_block():
    from crewlib.config import load_params
    from crewlib.eval.llm_metrics import judges_from_params

    params = load_params("quick", {"eval": {"judges": [None, {"name": "remote", "provider": "openai",
                                                               "base_url": "http://127.0.0.1:9/v1", "model": "m",
                                                               "api_key_env": ""}]}})
    judges = judges_from_params(params)
    assert [j.name for j in judges][1] == "remote" and judges[0].name.startswith("judge1:")
    assert judges[1].client.endpoint == "http://127.0.0.1:9/v1" and judges[1].client.model == "m"


def test_grounding_measures_copies_unsupported_numbers_and_missing_paragraphs():
    example = EvalExample(
        "t3", "T", "abstract", "", (EvalReference("a", "Scaling", "Scaling models gains 25.4 points on benchmarks."),
                                    EvalReference("b", "Attention", "The transformer relies entirely on attention "
                                                                    "layers and drops recurrence and convolutions.")),
        ("a", "b"), "R", {"R1": "a", "R2": "b"})
    stated = "Larger models gain 25.4 points [R1]. The model needs no recurrence [R2]."
    sections = {
        "stated": stated,
        "altered": stated.replace("25.4", "51.8"),
        "copied": "The transformer relies entirely on attention layers and drops recurrence and convolutions [R2].",
        "block": " ".join(["Attention models are strong [R2].",
                           *(f"Sentence {w} on scaling [R1]." for w in "abcdefghij")]),
        "paragraphs": "\n\n".join(f"Sentence {w} about scaling models [R1]. Another on {w} [R1]." for w in "abcde"),
    }
    scores = Evaluator(QUICK).score([{"system": k, "example": "t3", "text": v} for k, v in sections.items()], [example],
                                 metrics=["grounding"], progress=False)
    values = {k: _values(scores, k) for k in sections}
    assert values["stated"]["number_support"] == 1.0 and values["altered"]["number_support"] == 0.0
    assert "number_support" not in values["copied"]  # no number stated: unavailable, never 1.0
    assert values["copied"]["copied_sentences_rate"] == 1.0 and values["stated"]["copied_sentences_rate"] == 0.0
    assert values["block"]["paragraphing"] == pytest.approx(5 / 11)  # one block of 11 sentences, five a paragraph
    assert values["paragraphs"]["paragraphing"] == 1.0 and values["stated"]["paragraphing"] == 1.0
