"""RWGBench's retrieval setting (crewlib.experiments.retrieval) and its soft recall by judged alternatives."""

import json

import pytest
from fakes import ScriptedOpenAIServer, Step
from quick_settings import QUICK, quick_with

from crewlib.citations import check_citations
from crewlib.config import load_params
from crewlib.data.records import Reference, RWGExample
from crewlib.eval import EvalExample, EvalReference, Evaluator, rwgbench
from crewlib.eval.llm_metrics import Judge
from crewlib.experiments import retrieval
from crewlib.experiments.paper import RWGBENCH_RETRIEVAL_CONDITION
from crewlib.llm import connect

GRAPHS = Reference("g", "Graph attention networks", "Attention over graph neighbours for node classification.")
TREES = Reference("t", "Tree transformers", "Transformers over syntax trees for parsing sentences.")
SPEECH = Reference("s", "Speech recognition", "Acoustic models transcribe spoken audio into text.")


def test_the_library_holds_each_reference_once_in_the_corpus_order():
    a = RWGExample("a", "A", "a", (GRAPHS, TREES))
    b = RWGExample("b", "B", "b", (Reference("t", "Tree transformers (again)", "x"), SPEECH))
    assert [r.id for r in retrieval.library([a, b])] == ["g", "t", "s"]
    assert retrieval.library([a, b])[1].title == "Tree transformers"  # the first occurrence is kept


@pytest.mark.parametrize("retriever", ["bm25", "dense"])
def test_each_retriever_ranks_the_matching_paper_first_and_never_the_target(retriever):
    own = Reference("target", "Graph attention for nodes", "Graph attention over neighbours.")
    example = RWGExample("target", "Graph attention for node classification", "Attention over graph neighbours.",
                         (GRAPHS,))
    found = retrieval.candidates(example, [SPEECH, own, TREES, GRAPHS], retriever, 2)
    assert [r.id for r, _ in found][0] == "g" and "target" not in [r.id for r, _ in found]
    assert len(found) == 2 and found[0][1] >= found[1][1]


def test_bad_retrieval_settings_are_refused_with_what_is_wrong():
    example = RWGExample("x", "T", "a", (GRAPHS,))
    with pytest.raises(ValueError, match="top_k must be >= 1"):
        retrieval.candidates(example, [GRAPHS], "bm25", 0)
    with pytest.raises(ValueError, match="unknown retriever 'sparse'"):
        retrieval.candidates(example, [GRAPHS], "sparse", 1)
    with pytest.raises(ValueError, match="no reference to retrieve"):
        retrieval.candidates(RWGExample("g", "T", "a", (GRAPHS,)), [GRAPHS], "bm25", 1)
    with pytest.raises(ValueError, match="needs gold cited ids"):
        retrieval.coverage(["g"], [])


def test_coverage_is_the_share_of_gold_papers_among_the_candidates():
    assert retrieval.coverage(["g", "s", "x"], ["g", "t", "g"]) == 0.5  # {g} of {g, t}


def test_the_candidates_become_the_pool_keyed_in_retrieval_order_and_join_the_scored_references():
    example = RWGExample("x", "T", "a", (GRAPHS,), gold_related_work="Graphs [R1].", gold_cited_ids=("g",))
    task = retrieval.candidate_task(example, [(SPEECH, 2.0), (GRAPHS, 1.0)], 250)
    assert task.key_to_id == {"R1": "s", "R2": "g"} and task.relevance == {"s": 1.0, "g": 0.5}
    scored = retrieval.eval_example(example, [SPEECH, GRAPHS])
    assert [r.ref_id for r in scored.references] == ["g", "s"] and scored.gold_cited_ids == ("g",)


# ------------------------------------------------------------------ soft recall by alternatives
def test_alternatives_pair_one_to_one_most_similar_first():
    sim = {("b", "x"): 0.9, ("b", "y"): 0.8, ("c", "x"): 0.85, ("c", "y"): 0.3}
    pairs = rwgbench.alternative_pairs(["a", "x", "y"], ["a", "b", "c"], lambda g, a: sim[(g, a)])
    assert pairs == [("b", "x", 0.9), ("c", "y", 0.3)]  # x goes to b; c gets what is left
    assert rwgbench.alternative_pairs(["a", "x", "y"], ["a", "b", "c"], lambda g, a: sim[(g, a)], 0.5) == \
        [("b", "x", 0.9)]


def test_soft_recall_gives_one_per_cited_gold_paper_and_the_credit_per_compatible_alternative():
    assert rwgbench.soft_recall(["a", "x"], ["a", "b", "c", "d"], 2, 0.5) == pytest.approx((1 + 2 * 0.5) / 4)
    assert rwgbench.soft_recall([], ["a", "b"], 0, 0.5) == 0.0
    with pytest.raises(ValueError, match="3 compatible alternatives for 2 missed"):
        rwgbench.soft_recall(["a", "x"], ["a", "b", "c"], 3, 0.5)


def _alternative(answer: str) -> Step:
    return Step(content=json.dumps({"reason": "same topic", "compatible": answer}))


def test_the_suite_judges_each_paired_alternative_on_titles_and_abstracts(make_client):
    refs = (EvalReference("g", GRAPHS.title, GRAPHS.abstract), EvalReference("t", TREES.title, TREES.abstract),
            EvalReference("s", SPEECH.title, SPEECH.abstract),
            EvalReference("n", "Node embeddings", "Embeddings of graph nodes by random walks."))
    keys = {"R1": "g", "R2": "t", "R3": "s", "R4": "n"}
    ex = EvalExample("e", "Graph parsing", "We parse graphs.", "", refs, ("g", "t"), "R", keys)
    text = "Speech is transcribed [R3]. Nodes are embedded [R4]."  # cites no gold paper, two alternatives
    with ScriptedOpenAIServer() as server:
        server.push(_alternative("yes"), _alternative("no"))
        evaluator = Evaluator(quick_with(eval={"workers": 1}), judges=[Judge("only", make_client(server))])
        scores = evaluator.score([{"system": "s", "example": "e", "text": text}], [ex], metrics=["soft_recall"],
                                 progress=False)
        prompts = [r["messages"][1]["content"] for r in server.requests]
    values = dict(scores[["metric", "value"]].itertuples(index=False))
    # Two pairs judged (one yes): (0 + 0.5) / 2 gold papers.
    assert values == {"soft_recall": 0.25, "soft_recall_pairs": 2, "soft_recall_compatible": 1,
                      "soft_recall_missing": 0}
    # The first pair is the most similar (graph attention, node embeddings); both papers' abstracts are shown.
    assert GRAPHS.abstract.rstrip(".") in prompts[0] and "random walks" in prompts[0] and "Graph parsing" in prompts[0]
    assert {j["dimension"] for j in scores.attrs["judgements"]} == {"g/n", "t/s"}


def test_a_failed_alternative_judgement_is_counted_and_earns_nothing(make_client):
    refs = (EvalReference("g", GRAPHS.title, GRAPHS.abstract), EvalReference("s", SPEECH.title, SPEECH.abstract))
    ex = EvalExample("e", "Graph parsing", "We parse graphs.", "", refs, ("g",), "R", {"R1": "g", "R2": "s"})
    with ScriptedOpenAIServer(default=Step(content="not json")) as server:
        evaluator = Evaluator(quick_with(eval={"workers": 1, "judge_retries": 0}),
                              judges=[Judge("only", make_client(server))])
        scores = evaluator.score([{"system": "s", "example": "e", "text": "Speech [R2]."}], [ex],
                                 metrics=["soft_recall"], progress=False)
    values = dict(scores[["metric", "value"]].itertuples(index=False))
    assert values["soft_recall"] == 0.0 and values["soft_recall_missing"] == 1
    assert scores.attrs["missing"][0]["metric"] == "soft_recall"


# ------------------------------------------------------------------ the whole setting on the sample
def _answer(request: dict) -> str:
    if "compatible" in request["messages"][1]["content"]:
        return json.dumps({"reason": "same topic", "compatible": "yes"})
    return "Earlier work trains models with feedback [R1]. Others scale retrieval [R2]."


def test_the_setting_retrieves_writes_and_scores_on_the_sample(tmp_path):
    with ScriptedOpenAIServer(default=Step(content=_answer)) as server:
        params = load_params("quick", {
            "llm": {"provider": "openai", "base_url": server.base_url, "model": "scripted", "api_key_env": "",
                    "cache_dir": str(tmp_path / "cache"), "max_retries": 0},
            "baselines": {"long_context": {"context_tokens": 4096}},
            "experiments": {"retrieval": {"top_k": 4}}})
        results = retrieval.run_retrieval(params, connect(params), targets=1)
        writer_prompts = [r["messages"][1]["content"] for r in server.requests
                          if "compatible" not in r["messages"][1]["content"]]
    frame = results.frame
    assert list(frame.retriever) == ["bm25", "dense"] and set(frame.candidates) == {4}
    assert results.library_size == 60 and results.replay_misses == [] and results.missing == []
    gold = set(_sample_gold())
    for (_, row), generation in zip(frame.iterrows(), results.generations, strict=True):
        candidates = set(generation["key_to_id"].values())
        cited = set(check_citations(generation["text"], generation["key_to_id"]).cited_ids)  # after the checks
        assert row["coverage"] == len(gold & candidates) / len(gold)
        assert row["hard recall"] == pytest.approx(len(cited & gold) / len(gold))
        assert row["soft recall"] >= row["hard recall"]  # every paired alternative was judged compatible
    assert len(writer_prompts) == 2 and all("[R4]" in p and "[R5]" not in p for p in writer_prompts)
    table = results.table()
    assert list(table.condition.str.startswith("ours")) == [True, True] + [False] * 5
    paper = table[table.condition == RWGBENCH_RETRIEVAL_CONDITION].set_index(["setting", "retriever"])
    assert paper.loc[("RWGBench RAG", "dense"), "coverage"] == 0.182
    assert paper.loc[("RWGBench RAG", "bm25"), "hard recall"] == 0.140


def _sample_gold() -> tuple[str, ...]:
    from crewlib.tasks import evaluation_pairs

    example, _ = evaluation_pairs(QUICK, 1)[0]
    return example.gold_cited_ids


def test_a_section_citing_nothing_scores_zero_recall_and_is_counted(tmp_path):
    with ScriptedOpenAIServer(default=Step(content="The paper itself is described here at length.")) as server:
        params = load_params("quick", {
            "llm": {"provider": "openai", "base_url": server.base_url, "model": "scripted", "api_key_env": "",
                    "cache_dir": str(tmp_path / "cache"), "max_retries": 0},
            "baselines": {"long_context": {"context_tokens": 4096}},
            "experiments": {"retrieval": {"top_k": 4, "retrievers": ["bm25"]}}})
        results = retrieval.run_retrieval(params, connect(params), targets=1)
    row = results.frame.iloc[0]
    assert row["cited"] == 0 and row["hard recall"] == 0.0 and row["soft recall"] == 0.0
    assert results.table().iloc[0]["citing nothing"] == 1 and results.replay_misses == []


def test_the_pool_given_row_reads_the_main_results_long_context_and_the_pools_coverage():
    import pandas as pd

    from crewlib.tasks import Task

    example = RWGExample("x", "T", "a", (GRAPHS, TREES), gold_related_work="G [R1]. T [R2].", gold_cited_ids=("g", "t"))
    task = Task("x", "T", "a", (GRAPHS, SPEECH), {}, {})  # the pool holds one of the two gold papers
    scores = pd.DataFrame([("long_context", "x", "citation_recall", 0.5),
                           ("long_context", "x", "citation_precision", 1.0), ("crew", "x", "citation_recall", 1.0),
                           ("long_context", "other", "citation_recall", 0.0)],
                          columns=["system", "example", "metric", "value"])
    given = retrieval.pool_given(scores, [(example, task)])
    assert {k: v for k, v in given.items() if k != "soft recall"} == {
        "papers": 1, "coverage": 0.5, "hard recall": 0.5, "precision": 1.0}  # soft recall: not run on the pool
    assert retrieval.pool_given(scores[scores.system == "crew"], [(example, task)]) is None


def test_only_a_replay_miss_counts_as_a_stale_recording():
    errors = [{"error": "EmptySection: the system wrote no text"}, {"error": "CacheMissError: 1 request(s) ..."}]
    results = retrieval.RetrievalResults(None, [], 60, 10, "m", [], errors, [])
    assert results.replay_misses == [errors[1]]
