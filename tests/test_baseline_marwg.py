"""MA-RWG: taxonomy growth, outline validation, candidate selection, and the pipeline end to end
on a scripted server (happy path, garbage answers, fact-check corrections, a dead endpoint)."""

import json
import zlib
from collections import Counter

import numpy as np
import pytest
from fakes import ScriptedOpenAIServer, Step

from crewlib.baselines import make_system
from crewlib.baselines.marwg import MARWG, Topic, build_taxonomy, fallback_outline, outline_schema, validate_outline
from crewlib.data.records import Reference, RWGExample
from crewlib.env.task import Task
from crewlib.llm import EndpointError
from crewlib.llm.jsonout import JSONAnswerError, parse_json_answer


def bag_of_words(texts: list[str]) -> np.ndarray:
    """A stand-in for MiniLM: hashed bag of words, unit length (labels sharing words are similar)."""
    rows = np.zeros((len(texts), 4096))
    for i, text in enumerate(texts):
        for word in text.lower().split():
            rows[i, zlib.crc32(word.encode()) % 4096] += 1.0
    return rows / np.maximum(np.linalg.norm(rows, axis=1, keepdims=True), 1e-12)


# ------------------------------------------------------------------------------------------ taxonomy
# Two families, two sub-families each, four variants each: "graph neural neugr0" ... "text lexical lexte3".
HIERARCHY = [f"{family} {sub} {sub[:3]}{family[:2]}{i}" for family, subs in
             (("graph", ("neural", "kernel")), ("text", ("recurrent", "lexical"))) for sub in subs for i in range(4)]
EQUIDISTANT = [f"graph neural v{i}" for i in range(8)]  # a tighter threshold cannot split these


def _check_tree(node, delta, l_max):
    assert node.level <= l_max
    if node.children:
        assert sorted(p for c in node.children for p in c.papers) == sorted(node.papers)  # a partition
        assert all(c.level == node.level + 1 for c in node.children)
        for child in node.children:
            _check_tree(child, delta, l_max)
    elif len(node.papers) > delta:
        assert node.level == l_max, f"leaf {node.name!r} holds {len(node.papers)} > δ papers at level {node.level}"


@pytest.mark.parametrize("names,delta,l_max,depth", [
    (HIERARCHY, 3, 3, 3), (HIERARCHY, 3, 2, 2), (HIERARCHY, 5, 3, 2), (HIERARCHY, 1, 1, 1), (HIERARCHY, 8, 3, 1),
    (EQUIDISTANT, 3, 3, 3), (EQUIDISTANT, 2, 2, 2),
])
def test_taxonomy_respects_delta_and_l_max_and_keeps_every_paper(names, delta, l_max, depth):
    labels = {f"R{i}": label for i, label in enumerate(names, 1)}
    root = build_taxonomy(labels, "Methodology", delta, l_max, bag_of_words, width_threshold=0.3, depth_step=0.2)
    assert root.name == "Methodology" and root.level == 0 and root.papers == list(labels)
    _check_tree(root, delta, l_max)
    assert root.depth == depth  # depth expansion went exactly as deep as δ and l_max allow
    assert sorted(p for leaf in root.leaves() for p in leaf.papers) == sorted(labels)
    assert all(n.name in labels.values() for n in root.walk() if n.level)  # names are member labels


def test_taxonomy_levels_follow_the_label_hierarchy():
    labels = {f"R{i}": label for i, label in enumerate(HIERARCHY, 1)}
    root = build_taxonomy(labels, "Methodology", 3, 2, bag_of_words, width_threshold=0.3, depth_step=0.2)
    assert [c.papers for c in root.children] == [list(labels)[:8], list(labels)[8:]]  # families
    assert [len(g.papers) for c in root.children for g in c.children] == [4, 4, 4, 4]  # sub-families
    assert root.children[1].children[1].name.startswith("text lexical")


def test_width_expansion_adds_a_child_for_a_dissimilar_label():
    similar = {"R1": "graph neural network", "R2": "graph neural network model"}
    root = build_taxonomy(similar, "Methodology", 5, 3, bag_of_words)
    assert [c.papers for c in root.children] == [["R1", "R2"]]
    grown = build_taxonomy({**similar, "R3": "image segmentation"}, "Methodology", 5, 3, bag_of_words)
    assert [c.papers for c in grown.children] == [["R1", "R2"], ["R3"]]
    assert grown.children[1].name == "image segmentation" and grown.children[1].level == 1


def test_identical_labels_cannot_be_split_and_stay_one_leaf():
    labels = {f"R{i}": "unspecified" for i in range(1, 8)}
    root = build_taxonomy(labels, "Dataset", 5, 3, bag_of_words)
    assert len(root.children) == 1 and root.children[0].children == [] and len(root.children[0].papers) == 7


# ------------------------------------------------------------------------------------------ outline
KNOWN = ["R1", "R2", "R3", "R4"]
GOOD = [Topic(title="Graph neural networks for recommendation", keys=["R1", "R2"]),
        Topic(title="Benchmarks", keys=["R3", "R4"])]


def test_validate_outline_accepts_a_good_outline_and_cleans_keys():
    assert validate_outline(GOOD, KNOWN) == []
    assert validate_outline([{"title": "Graphs.", "keys": "[R1], r2"}, {"title": "Text", "keys": ["R3"]}], KNOWN) == []
    assert Topic(title="**Graphs.**", keys=["[R1]", "r1", "R2"]).model_dump() == {"title": "Graphs",
                                                                                   "keys": ["R1", "R2"]}


@pytest.mark.parametrize("topics,problem", [
    (GOOD[:1], "1 topics given"),
    (GOOD * 2 + GOOD[:1], "5 topics given"),
    ([Topic(title=" ".join(["word"] * 11), keys=["R1"]), GOOD[1]], "11 words"),
    ([Topic(title="Graphs", keys=["R1", "R9"]), GOOD[1]], "unknown keys ['R9']"),
    ([Topic(title="Graphs", keys=[]), GOOD[1]], "lists no keys"),
])
def test_validate_outline_rejects(topics, problem):
    problems = validate_outline(topics, KNOWN)
    assert any(problem in p for p in problems), problems


def test_outline_schema_turns_problems_into_a_reask_message():
    schema = outline_schema(KNOWN, min_topics=2, max_topics=4, max_words=10)
    good = json.dumps({"topics": [t.model_dump() for t in GOOD]})
    assert parse_json_answer(good, schema).topics == GOOD
    with pytest.raises(JSONAnswerError, match="unknown keys"):
        parse_json_answer(json.dumps({"topics": [{"title": "A", "keys": ["R7"]}, {"title": "B", "keys": ["R1"]}]}),
                          schema)


def test_fallback_outline_uses_the_largest_methodology_nodes():
    labels = {"R1": "graph network", "R2": "graph network model", "R3": "graph network layer", "R4": "text model",
              "R5": "kernel method", "R6": "random walk", "R7": "spectral filter"}
    trees = {"Methodology": build_taxonomy(labels, "Methodology", 5, 3, bag_of_words)}
    topics = fallback_outline(trees, list(labels), bag_of_words)
    assert len(topics) == 4 and topics[0].keys[:3] == ["R1", "R2", "R3"]
    assert sorted(k for t in topics for k in t.keys) == sorted(labels)  # nodes beyond 4 joined a topic
    assert validate_outline(topics, list(labels)) == []


# ------------------------------------------------------------------------------------------ candidates
def _task(texts: list[str], citations: dict[int, tuple[int, ...]] | None = None) -> Task:
    citations = citations or {}
    refs = tuple(Reference(f"p{i}", title, f"{title} abstract", citations=tuple(f"p{j}" for j in citations.get(i, ())))
                 for i, title in enumerate(texts, 1))
    relevance = {r.id: 1.0 - 0.05 * i for i, r in enumerate(refs)}
    return Task("t", "Target", "Target abstract.", refs, relevance, {r.id: 0.0 for r in refs})


TEXTS = ["graph neural networks", "graph neural networks", "text classification", "image segmentation",
         "speech recognition", "protein folding", "machine translation", "reinforcement learning"]


@pytest.fixture
def system_for(make_client, scripted_server):
    def factory(**settings):
        return MARWG({"baselines": {"marwg": settings}}, make_client(scripted_server), embed_fn=bag_of_words)
    return factory


def test_select_candidates_budget_lambda_one_and_near_duplicates(system_for):
    task = _task(TEXTS)
    picked = system_for(budget=4, longlist_factor=2).select_candidates(task)
    assert len(picked) == 4 == len(set(picked)) and set(picked) <= set(task.keys)
    assert system_for(budget=4, longlist_factor=2, **{"lambda": 1.0}).select_candidates(task) == task.keys[:4]
    diverse = system_for(budget=3, **{"lambda": 0.5}).select_candidates(task)
    assert diverse[0] == "R1" and "R2" not in diverse  # R2 repeats R1's text: skipped for diversity
    assert "R2" in system_for(budget=3, **{"lambda": 1.0}).select_candidates(task)


def test_longlist_grows_by_citation_neighbours_inside_the_pool(system_for):
    task = _task(TEXTS, citations={1: (7,), 7: (8,), 2: (99,)})  # R1 cites R7, R7 cites R8; p99 is not in the pool
    top, neighbours = system_for(budget=2, longlist_factor=1, depth=1).longlist(task)
    assert top == [0, 1] and neighbours == {6}
    assert system_for(budget=2, longlist_factor=1, depth=2).longlist(task)[1] == {6, 7}
    assert system_for(budget=2, longlist_factor=1, depth=0).longlist(task)[1] == set()
    with pytest.raises(ValueError, match="unknown baselines.marwg settings"):
        system_for(budgett=3)


# ------------------------------------------------------------------------------------------ end to end
EXAMPLE = RWGExample(
    target_id="target", title="Graph neural networks for citation recommendation",
    abstract="We recommend citations with a graph neural network over the citation graph and evaluate on "
             "benchmark datasets.",
    references=(
        Reference("a", "Graph convolutional networks", "Graph convolutional networks learn node representations "
                  "by aggregating neighbours. They classify nodes in citation graphs."),
        Reference("b", "Graph attention networks", "Attention weighs the neighbours of each node. It improves "
                  "node classification.", citations=("a",)),
        Reference("c", "Citation recommendation with embeddings", "We embed papers to recommend citations. "
                  "Embeddings capture topical similarity."),
        Reference("d", "A benchmark for citation recommendation", "We release a benchmark dataset of citation "
                  "contexts. Baselines are evaluated by recall."),
        Reference("e", "Open graph benchmark", "A collection of graph datasets for benchmarking graph learning. "
                  "It standardises evaluation."),
    ),
    gold_related_work="SECRET GOLD SECTION [a].", gold_cited_ids=("a",),
)
PARAGRAPH = "Graph neural networks learn node representations [R1]. Attention variants weigh neighbours [R2, R3]."
UNIVERSAL = json.dumps({  # valid for every stage's schema: pydantic ignores the other keys
    "summary": "It learns graph representations useful for citation recommendation.",
    "task": "node classification", "methodology": "graph neural network", "dataset": "citation graphs",
    "evaluation": "accuracy",
    "topics": [{"title": "Graph neural networks", "keys": ["R1", "R2", "R3"]},
               {"title": "Benchmarks for citation recommendation", "keys": ["R4", "R5"]}],
    "paragraph": PARAGRAPH,
    "coverage": "Discuss the benchmarks.", "coherence": "Add transitions.", "relevance": "Relate to the target.",
    "citation_accuracy": "Fine.",
    "label": "none", "explanation": "supported by the abstract",
    "sentence": "Graph convolutional networks aggregate neighbour features [R1].",
})
PARAMS = {"baselines": {"marwg": {"budget": 5}}}


def _roles(generation) -> Counter:
    return Counter(r.role for r in generation.records)


def test_pipeline_end_to_end_on_scripted_answers(make_client):
    with ScriptedOpenAIServer(default=Step(content=UNIVERSAL)) as server:
        client = make_client(server)
        assert isinstance(make_system("marwg", PARAMS, client), MARWG)
        generation = MARWG(PARAMS, client, embed_fn=bag_of_words).generate(EXAMPLE)
        bodies = json.dumps(server.requests)
    paragraphs = generation.text.split("\n\n")
    assert len(paragraphs) == 2 and all(p == PARAGRAPH for p in paragraphs)
    check = generation.citation_check
    assert check.markers == 6 and check.unresolved_keys == () and check.verification == 1.0
    assert set(generation.cited_ids) == {generation.key_to_id[k] for k in ("R1", "R2", "R3")}
    # B' + 2T + 2 + V + 2E = 5 + 4 + 2 + 4 + 0 calls, no re-asks
    assert _roles(generation) == {"summary": 5, "outline": 1, "draft": 2, "feedback": 1, "revision": 2, "verify": 4}
    assert generation.cost["calls"] == 15 and generation.fallbacks == Counter()
    notes = generation.notes
    assert notes["outline_source"] == "llm" and [t["title"] for t in notes["outline"]] == [
        "Graph neural networks", "Benchmarks for citation recommendation"]
    assert sorted(notes["candidates"]) == ["R1", "R2", "R3", "R4", "R5"] and notes["uncovered"] == []
    assert set(notes["taxonomy"]) == {"Task", "Methodology", "Dataset", "Evaluation"}
    assert notes["taxonomy"]["Methodology"]["depth"] == 1 and notes["revised"] is True
    assert notes["fact_check"] | {"unresolved": []} == {"checked": 4, "unverifiable": 0, "errors": {}, "corrected": 0,
                                                        "resolved": 0, "still_wrong": 0, "unresolved": []}
    assert "SECRET GOLD" not in bodies  # the gold section never reaches the model
    json.dumps(generation.to_dict())  # notes and records serialise


def test_garbage_answers_give_a_text_built_from_counted_fallbacks(make_client):
    with ScriptedOpenAIServer(default=Step(content="I am sorry, I cannot do that.")) as server:
        generation = MARWG(PARAMS, make_client(server), embed_fn=bag_of_words).generate(EXAMPLE)
    paragraphs = generation.text.split("\n\n")
    assert 2 <= len(paragraphs) <= 4
    assert generation.citation_check.unresolved_keys == () and len(generation.cited_ids) == 5
    assert "Graph convolutional networks learn node representations by aggregating neighbours [R" in generation.text
    # every citing sentence (one per candidate) was sent to the verifier, which never answered usably
    assert generation.fallbacks == {"summary_invalid": 5, "outline_invalid": 1, "draft_invalid": 2,
                                    "feedback_invalid": 1, "verify_invalid": 5}
    assert generation.cost["calls"] == 2 * sum(generation.fallbacks.values())  # each JSON call re-asked once
    assert generation.notes["outline_source"] == "fallback" and generation.notes["revised"] is False
    assert generation.notes["fact_check"]["unverifiable"] == 5 and generation.notes["fact_check"]["checked"] == 0


@pytest.mark.parametrize("second_label,resolved", [("none", True), ("Misrepresentation", False)])
def test_fact_check_corrects_and_reverifies_with_a_separate_verifier(make_client, monkeypatch, second_label, resolved):
    for var in ("CREW_LLM_BASE_URL", "CREW_LLM_PROVIDER", "CREW_LLM_MODEL", "CREW_LLM_API_KEY_ENV",
                "CREW_LLM_CACHE_MODE"):
        monkeypatch.delenv(var, raising=False)
    verdict = lambda label: Step(content=json.dumps({"label": label, "explanation": "checked"}))  # noqa: E731
    with ScriptedOpenAIServer(default=Step(content=UNIVERSAL)) as writer, \
            ScriptedOpenAIServer(default=verdict(second_label)) as checker:
        checker.push(*[verdict("unsubstantiated")] * 4)  # the first verdicts (any case) find errors
        verifier = {"provider": "openai", "base_url": checker.base_url, "model": "verifier-model", "api_key_env": "",
                    "cache_mode": "off"}
        params = {"baselines": {"marwg": {"budget": 5, "verifier": verifier}}}
        generation = MARWG(params, make_client(writer), embed_fn=bag_of_words).generate(EXAMPLE)
    report = generation.notes["fact_check"]
    assert report["errors"] == {"Unsubstantiated": 4} and report["corrected"] == 4
    assert (report["resolved"], report["still_wrong"]) == ((4, 0) if resolved else (0, 4))
    assert len(report["unresolved"]) == report["still_wrong"]
    assert generation.text.count("Graph convolutional networks aggregate neighbour features [R1].") == 4  # kept
    roles = _roles(generation)
    assert roles["verify"] == 4 and roles["correction"] == 4 and roles["reverify"] == 4
    assert {r.model for r in generation.records if r.role in ("verify", "reverify")} == {"verifier-model"}
    assert {r.model for r in generation.records if r.role == "correction"} == {"scripted-model"}


def test_an_endpoint_that_answers_nothing_raises_instead_of_a_fallback_text(make_client):
    with ScriptedOpenAIServer(default=Step(status=400, error_message="bad model name")) as server, \
            pytest.raises(EndpointError, match="refused"):
        MARWG(PARAMS, make_client(server), embed_fn=bag_of_words).generate(EXAMPLE)
