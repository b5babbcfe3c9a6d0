"""MA-RWG: taxonomy growth (ρ ≥ δ), outline validation, paper selection (λ), top-D pages, the
budget B, and the pipeline end to end on scripted servers (happy path, garbage answers, the
component switches, dual-model fact-checking, a dead endpoint)."""

import dataclasses
import json
import re
import zlib
from collections import Counter

import numpy as np
import pydantic
import pytest
from fakes import ScriptedOpenAIServer, Step

from crewlib import prompts
from crewlib.baselines import make_system
from crewlib.baselines.marwg import (
    DIMENSIONS,
    MARWG,
    Topic,
    build_taxonomy,
    fallback_outline,
    outline_schema,
    paper_pages,
    select_papers,
    validate_outline,
)
from crewlib.baselines.marwg.pipeline import PaperCard
from crewlib.config import ParamsError, as_dict, load_params, with_overrides
from crewlib.data.records import Reference, RWGExample
from crewlib.llm import EndpointError
from crewlib.llm.jsonout import JSONAnswerError, parse_json_answer
from crewlib.schema import MARWGBlock, Params
from crewlib.tasks import Task

QUICK = load_params("quick").baselines.marwg
GROWTH = {"width_threshold": QUICK.width_threshold, "depth_step": QUICK.depth_step}
OUTLINE = {"min_topics": QUICK.min_topics, "max_topics": QUICK.max_topics, "max_words": QUICK.max_title_words}


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
    elif len(node.papers) >= delta and len(node.papers) > 1:
        assert node.level == l_max, f"leaf {node.name!r} holds {len(node.papers)} ≥ δ papers at level {node.level}"


@pytest.mark.parametrize("names,delta,l_max,depth", [
    (HIERARCHY, 3, 3, 3), (HIERARCHY, 3, 2, 2), (HIERARCHY, 5, 3, 2), (HIERARCHY, 1, 1, 1), (HIERARCHY, 9, 3, 1),
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


def test_the_taxonomy_is_the_same_when_the_embeddings_last_bits_move():
    """MiniLM's last bits vary between runs; a two-paper node's members are exactly as close to its centroid, so the
    name (and the prompts that show the tree) must not depend on that noise."""
    labels = {"R1": "graph neural networks", "R2": "graph kernel methods", "R3": "text lexical features",
              "R4": "text recurrent networks", "R5": "graph kernel methods", "R6": "graph neural networks"}

    def noisy(seed: int):
        rng = np.random.default_rng(seed)
        return lambda texts: bag_of_words(texts) + rng.normal(0, 1e-8, (len(texts), 4096))

    trees = [build_taxonomy(labels, "Methodology", 2, 3, noisy(seed), width_threshold=0.3, depth_step=0.2)
             for seed in range(12)]
    assert any(len(n.papers) == 2 for n in trees[0].walk())  # a node whose two members tie
    assert len({t.render() for t in trees}) == 1


@pytest.mark.parametrize("delta,depth", [(8, 2), (9, 1), (4, 3), (5, 2)])
def test_depth_expansion_splits_a_node_of_exactly_delta_papers(delta, depth):
    """Families hold 8 papers and sub-families 4: a node with ρ = δ is split, one with ρ = δ − 1 is not."""
    labels = {f"R{i}": label for i, label in enumerate(HIERARCHY, 1)}
    root = build_taxonomy(labels, "Methodology", delta, 3, bag_of_words, width_threshold=0.3, depth_step=0.2)
    assert root.depth == depth
    family = root.children[0]
    assert len(family.papers) == 8 and bool(family.children) == (delta <= 8)
    if family.children:
        assert [len(c.papers) for c in family.children] == [4, 4]
        assert all(bool(c.children) == (delta <= 4) for c in family.children)


def test_width_expansion_adds_a_child_for_a_dissimilar_label():
    similar = {"R1": "graph neural network", "R2": "graph neural network model"}
    root = build_taxonomy(similar, "Methodology", 5, 3, bag_of_words, **GROWTH)
    assert [c.papers for c in root.children] == [["R1", "R2"]]
    grown = build_taxonomy({**similar, "R3": "image segmentation"}, "Methodology", 5, 3, bag_of_words, **GROWTH)
    assert [c.papers for c in grown.children] == [["R1", "R2"], ["R3"]]
    assert grown.children[1].name == "image segmentation" and grown.children[1].level == 1


def test_identical_labels_cannot_be_split_and_stay_one_leaf():
    labels = {f"R{i}": "unspecified" for i in range(1, 8)}
    root = build_taxonomy(labels, "Dataset", 5, 3, bag_of_words, **GROWTH)
    assert len(root.children) == 1 and root.children[0].children == [] and len(root.children[0].papers) == 7


# ------------------------------------------------------------------------------------------ outline
KNOWN = ["R1", "R2", "R3", "R4"]
GOOD = [Topic(title="Graph neural networks for recommendation", keys=["R1", "R2"]),
        Topic(title="Benchmarks", keys=["R3", "R4"])]


def test_validate_outline_accepts_a_good_outline_and_cleans_keys():
    assert validate_outline(GOOD, KNOWN, **OUTLINE) == []
    assert validate_outline([{"title": "Graphs.", "keys": "[R1], r2"}, {"title": "Text", "keys": ["R3"]}], KNOWN,
                            **OUTLINE) == []
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
    problems = validate_outline(topics, KNOWN, **OUTLINE)
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
    trees = {"Methodology": build_taxonomy(labels, "Methodology", 5, 3, bag_of_words, **GROWTH)}
    topics = fallback_outline(trees, list(labels), bag_of_words, **OUTLINE)
    assert len(topics) == 4 and topics[0].keys[:3] == ["R1", "R2", "R3"]
    assert sorted(k for t in topics for k in t.keys) == sorted(labels)  # nodes beyond 4 joined a topic
    assert validate_outline(topics, list(labels), **OUTLINE) == []


def test_fallback_outline_without_a_taxonomy_cuts_the_candidates_into_runs():
    topics = fallback_outline({}, ["R1", "R2", "R3", "R4", "R5"], bag_of_words, **OUTLINE)
    assert [t.keys for t in topics] == [["R1", "R2", "R3"], ["R4", "R5"]]


# ------------------------------------------------------------------------------------------ selection (stage 1)
def marwg_params(**settings) -> Params:
    """Quick params with MA-RWG ``settings``; the pipeline runs on scripted toy answers, so the sentence repairs of
    the final section (tested in tests/test_section_guarantees.py) are off and the section stays as written."""
    return load_params("quick", {"baselines": {"marwg": settings}, "output": {"repairs": []}})


def task_of(example: RWGExample, pool: tuple[str, ...] | None = None) -> Task:
    """The example's task with the pool in the example's order (relevance decreasing), as build_tasks keys it."""
    refs = tuple(r for r in example.references if pool is None or r.id in pool)
    return Task(example.target_id, example.title, example.abstract, refs,
                {r.id: 1.0 - 0.1 * i for i, r in enumerate(refs)}, {r.id: 0.0 for r in refs})


# Hand-made MiniLM stand-ins, looked up by the text's first word (a paper's title, the target's "Target").
VECTORS = {"Target": (1.0, 0.0, 0.0), "A": (1.0, 0.0, 0.0), "Y": (0.5, 0.5, np.sqrt(0.5)),
           "X": (0.9, 0.1, np.sqrt(0.18)), "D": (0.0, 1.0, 0.0)}


def lookup_embed(texts: list[str]) -> np.ndarray:
    return np.array([VECTORS[t.split(".")[0]] for t in texts])


HAND = RWGExample("t", "Target", "abstract.", tuple(Reference(f"p{name}", name, "abstract.") for name in "AYXD"))


def test_select_papers_is_the_papers_objective_with_hand_computed_orders():
    vectors = lookup_embed(["A", "Y", "X", "D"])
    relevance = vectors @ np.array(VECTORS["Target"])  # A 1, Y 0.5, X 0.9, D 0
    assert select_papers(relevance, None, 4, 0.0) == [0, 2, 1, 3]  # λ = 0: relevance order
    assert select_papers(relevance, vectors, 2, 0.0) == [0, 2]
    # λ = 1: A first (ties go to relevance); then div = 1 − cos to A: Y 0.5, X 0.1, D 1 → D;
    # then div = 1 − min(cos to A, cos to D): Y 1 − 0.5, X 1 − 0.1 → X (a max would pick Y); then Y.
    assert select_papers(relevance, vectors, 4, 1.0) == [0, 3, 2, 1]


def test_select_candidates_lambda_zero_is_top_b_by_relevance(system_for_params):
    task = task_of(HAND)  # keys R1 = A, R2 = Y, R3 = X, R4 = D
    assert system_for_params(lookup_embed, **{"lambda": 0.0}).select_candidates(task, 3) == ["R1", "R3", "R2"]
    assert system_for_params(lookup_embed, **{"lambda": 1.0}).select_candidates(task, 4) == ["R1", "R4", "R3", "R2"]
    assert len(system_for_params(lookup_embed).select_candidates(task, 9)) == 4  # B' = min(B, pool)


def test_quick_params_use_the_papers_lambda_and_reject_old_or_unknown_settings():
    assert QUICK.lambda_ == 0 and load_params("full").baselines.marwg.lambda_ == 0
    for bad in ({"depth": 1}, {"longlist_factor": 3}, {"budgett": 3}, {"pages": 0}, {"lambda": 1.5}):
        with pytest.raises(ParamsError):
            marwg_params(**bad)


def test_settings_have_no_defaults_in_code():
    """MA-RWG reads its block of the params: no setting of it can be left out or mistyped."""
    block = as_dict(marwg_params().baselines.marwg)
    del block["pages"]
    with pytest.raises(pydantic.ValidationError, match="pages"):
        MARWGBlock.model_validate(block)
    with pytest.raises(ParamsError, match="baselines.marwg.pages: Input should be greater than or equal to 1"):
        with_overrides(marwg_params(), {"baselines": {"marwg": {"pages": 0}}})


@pytest.fixture
def system_for_params(make_client, scripted_server):
    def factory(embed_fn=bag_of_words, **settings):
        return MARWG(marwg_params(**settings), make_client(scripted_server), embed_fn=embed_fn)
    return factory


# ------------------------------------------------------------------------------------------ as the paper describes
SHARED = {"R1": "graph neural", "R2": "graph neural", "R3": "text lexical", "R4": "text lexical", "R5": "graph text"}


def test_the_dag_puts_a_paper_under_every_node_of_its_level_within_the_threshold():
    tree = build_taxonomy(SHARED, "Methodology", 9, 3, bag_of_words, width_threshold=0.3, depth_step=0.2)
    dag = build_taxonomy(SHARED, "Methodology", 9, 3, bag_of_words, width_threshold=0.3, depth_step=0.2,
                         shape="dag")
    assert [c.papers for c in tree.children] == [["R1", "R2", "R5"], ["R3", "R4"]]  # a partition
    assert [c.papers for c in dag.children] == [["R1", "R2", "R5"], ["R3", "R4", "R5"]]  # "graph text": both parents
    with pytest.raises(ValueError, match="'tree' or 'dag'"):
        build_taxonomy(SHARED, "Methodology", 9, 3, bag_of_words, width_threshold=0.3, depth_step=0.2, shape="forest")


@pytest.mark.parametrize("root_level,depth", [(1, 2), (0, 3)])
def test_l_max_counts_the_dimension_as_level_one_as_the_paper_does(system_for_params, root_level, depth):
    labels = {f"R{i}": label for i, label in enumerate(HIERARCHY, 1)}
    cards = {k: PaperCard(k, "summary", {d: label for d in DIMENSIONS}) for k, label in labels.items()}
    system = system_for_params(delta=3, l_max=3, root_level=root_level, taxonomy_shape="tree", width_threshold=0.3,
                               depth_step=0.2)
    assert {t.depth for t in system.taxonomies(cards).values()} == {depth}
    with pytest.raises(ParamsError, match=r"l_max \(1\) leaves no level below the dimension"):
        marwg_params(l_max=1, root_level=1)


def test_the_revision_asks_for_the_papers_four_aspects_only_when_set():
    fields = {"title": "T", "index": 1, "n": 1, "topic": "x", "paragraph": "p", "papers": "", "feedback": "",
              "words": 60}
    with_aspects = prompts.MARWG_REVISE.format(aspects=prompts.MARWG_REVISE_ASPECTS, **fields)
    without = prompts.MARWG_REVISE.format(aspects="", **fields)
    for aspect in ("reorganise the structure", "strengthen the criticism", "simplify the language",
                   "comparison between the works clearer"):
        assert aspect in with_aspects and aspect not in without
    # Without them, the text the recorded answers were asked with, word for word.
    assert "following the feedback where it concerns this topic. Keep it one paragraph" in without


# ------------------------------------------------------------------------------------------ pages (stage 2)
def plain_words(texts: list[str]) -> np.ndarray:
    return bag_of_words([" ".join(re.findall(r"[a-z]+", t.lower())) for t in texts])


# Title (1 word) + abstract (10) + the section heading (1) put the section text exactly on page 5.
LONG = Reference("z", "Zeta", "aa bb cc graph dd ee ff neural gg hh", sections=(("Method", "graph neural networks"),))
PAGED = RWGExample("t", "Graph", "neural networks", (LONG, Reference("s", "Short", "graph")))


def test_paper_pages_cover_title_abstract_and_full_text():
    assert paper_pages(LONG, 3) == ["Zeta. aa bb", "cc graph dd", "ee ff neural", "gg hh Method.",
                                    "graph neural networks"]


@pytest.mark.parametrize("d,expected", [
    (1, ["graph neural networks"]),  # cosine to "graph neural networks": 1 (full text) > 1/3 (pages 2, 3)
    (2, ["cc graph dd", "graph neural networks"]),  # the tie of pages 2 and 3 goes to the earlier page
    (3, ["cc graph dd", "ee ff neural", "graph neural networks"]),
])
def test_each_paper_contributes_its_top_d_pages(system_for_params, d, expected):
    pages = system_for_params(plain_words, pages=d, page_words=3).pages(task_of(PAGED), ["R1", "R2"])
    assert pages["R1"] == expected and len(pages["R1"]) == d
    assert pages["R2"] == ["Short. graph"]  # a paper with fewer than D pages gives them all


# ------------------------------------------------------------------------------------------ budget B
def test_budget_is_the_gold_citations_in_the_pool_else_the_setting(system_for_params):
    system = system_for_params(budget=4)
    example = dataclasses.replace(EXAMPLE, gold_cited_ids=("a", "c", "a", "e"))
    assert system.budget(example, task_of(example)) == (3, "gold")  # distinct ids
    assert system.budget(example, task_of(example, pool=("a", "b", "c", "d"))) == (2, "gold")  # e left the pool
    no_gold = dataclasses.replace(EXAMPLE, gold_cited_ids=())
    assert system.budget(no_gold, task_of(no_gold)) == (4, "setting")
    outside = dataclasses.replace(EXAMPLE, gold_cited_ids=("e",))
    assert system.budget(outside, task_of(outside, pool=("a", "b"))) == (4, "setting")


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
    gold_related_work="SECRET GOLD SECTION [a].", gold_cited_ids=("a", "b", "c", "d", "e"),
)
TASK = task_of(EXAMPLE)
PARAGRAPH = "Graph neural networks learn node representations [R1]. Attention variants weigh neighbours [R2, R3]."
UNIVERSAL = json.dumps({  # valid for every stage's schema: pydantic ignores the other keys
    "summary": "It learns graph representations useful for citation recommendation.",
    "task": "node classification", "methodology": "graph neural network", "dataset": "citation graphs",
    "evaluation": "accuracy",
    "topics": [{"title": "Graph neural networks", "keys": ["R1", "R2", "R3"]},
               {"title": "Benchmarks for citation recommendation", "keys": ["R4", "R5"]}],
    "paragraph": PARAGRAPH,
    "structural_logic": "Order the topics from methods to benchmarks.", "critical_analysis": "Compare R1 and R2.",
    "prominent_contribution": "State what the target adds.", "concise_language": "Cut repeated phrases.",
    "label": "none", "explanation": "supported by the abstract",
    "sentence": "Graph convolutional networks aggregate neighbour features [R1].",
})
# B' + 1 + T + (1 + T) + V + 2E with B' = 5 (the gold citations), T = 2, V = 4 citing sentences, E = 0
FULL_ROLES = {"summary": 5, "outline": 1, "draft": 2, "feedback": 1, "revision": 2, "verify": 4}


def _roles(generation) -> Counter:
    return Counter(r.role for r in generation.records)


def _run(make_client, server, example=EXAMPLE, task=TASK, **settings):
    return MARWG(marwg_params(**settings), make_client(server), embed_fn=bag_of_words).generate(example, task)


def test_pipeline_end_to_end_on_scripted_answers(make_client):
    with ScriptedOpenAIServer(default=Step(content=UNIVERSAL)) as server:
        client = make_client(server)
        assert isinstance(make_system("marwg", marwg_params(), client), MARWG)
        generation = _run(make_client, server)
        bodies = json.dumps(server.requests)
    # The scripted endpoint writes the same paragraph for both topics: the output checks keep one, counted.
    assert generation.text == PARAGRAPH and generation.notes["output_checks"]["repeated_paragraphs"] == 1
    check = generation.citation_check
    assert check.markers == 3 and check.unresolved_keys == () and check.verification == 1.0
    assert set(generation.cited_ids) == {generation.key_to_id[k] for k in ("R1", "R2", "R3")}
    assert _roles(generation) == FULL_ROLES
    assert generation.cost["calls"] == 15 and generation.fallbacks == Counter()
    notes = generation.notes
    assert (notes["budget"], notes["budget_source"]) == (5, "gold")
    assert notes["outline_source"] == "llm" and [t["title"] for t in notes["outline"]] == [
        "Graph neural networks", "Benchmarks for citation recommendation"]
    assert sorted(notes["candidates"]) == ["R1", "R2", "R3", "R4", "R5"] and notes["uncovered"] == []
    assert set(notes["pages"]) == set(notes["candidates"]) and max(notes["pages"].values()) <= QUICK.pages
    assert set(notes["taxonomy"]) == {"Task", "Methodology", "Dataset", "Evaluation"}
    assert notes["taxonomy"]["Methodology"]["depth"] == 1 and notes["revised"] is True
    assert set(notes["feedback"]) == {"structural_logic", "critical_analysis", "prominent_contribution",
                                      "concise_language"}
    assert notes["verification"] == {"generator": "scripted-model", "verifier": "scripted-model", "dual_model": False}
    assert notes["fact_check"] | {"unresolved": []} == {"checked": 4, "unverifiable": 0, "errors": {}, "corrected": 0,
                                                        "resolved": 0, "still_wrong": 0, "unresolved": []}
    assert "Taxonomy of the candidate papers" in bodies and "SECRET GOLD" not in bodies  # the gold never reaches it
    json.dumps(generation.to_dict())  # notes and records serialise


def test_an_example_without_gold_citations_uses_the_budget_setting(make_client):
    example = dataclasses.replace(EXAMPLE, gold_cited_ids=(), gold_related_work="")
    with ScriptedOpenAIServer(default=Step(content=UNIVERSAL)) as server:
        generation = _run(make_client, server, example=example, budget=3)
    assert (generation.notes["budget"], generation.notes["budget_source"]) == (3, "setting")
    assert _roles(generation)["summary"] == 3 and len(generation.notes["candidates"]) == 3


@pytest.mark.parametrize("switch,removed", [
    ("taxonomy", {}),  # the outline call stays: it is asked from the summaries alone
    ("feedback", {"feedback": 1, "revision": 2}),
    ("fact_check", {"verify": 4}),
    ("summarisation", {}),  # stage 3 is still asked (the labels); the later stages read the abstracts
])
def test_component_switches_remove_their_calls(make_client, switch, removed):
    with ScriptedOpenAIServer(default=Step(content=UNIVERSAL)) as server:
        generation = _run(make_client, server, **{switch: False})
        bodies = json.dumps(server.requests)
    expected = Counter(FULL_ROLES)
    expected.subtract(removed)
    assert _roles(generation) == +expected
    # Two identical prompts may meet in the cache, depending on which finished first: one request then.
    assert len(server.requests) == sum(not r.cache_hit for r in generation.records)
    notes = generation.notes
    assert notes["components"] == {"taxonomy": True, "feedback": True, "fact_check": True,
                                   "summarisation": True} | {switch: False}
    if switch == "taxonomy":
        assert notes["taxonomy"] == {} and notes["outline_source"] == "llm"
        assert "Taxonomy of the candidate papers" not in bodies and "Plan the related-work section" in bodies
    if switch == "feedback":
        assert notes["feedback"] is None and notes["revised"] is False
    if switch == "fact_check":
        assert notes["fact_check"] is None
    summary = "It learns graph representations useful for citation recommendation."
    if switch == "summarisation":  # the draft is asked from the abstracts, never from the contextual summaries
        abstracts = {r.abstract for r in EXAMPLE.references}
        assert set(notes["summaries"].values()) <= abstracts and summary not in bodies
    else:
        assert set(notes["summaries"].values()) == {summary} and summary in bodies  # the outline reads it


def test_garbage_answers_give_a_text_built_from_counted_fallbacks(make_client):
    with ScriptedOpenAIServer(default=Step(content="I am sorry, I cannot do that.")) as server:
        generation = _run(make_client, server)
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


@pytest.fixture
def no_llm_env(monkeypatch):
    for var in ("CREW_LLM_BASE_URL", "CREW_LLM_PROVIDER", "CREW_LLM_MODEL", "CREW_LLM_API_KEY_ENV",
                "CREW_LLM_CACHE_MODE"):
        monkeypatch.delenv(var, raising=False)


def _override(server, model: str) -> dict:
    return {"provider": "openai", "base_url": server.base_url, "model": model, "api_key_env": "", "cache_mode": "off"}


def _verdict(label: str) -> Step:
    return Step(content=json.dumps({"label": label, "explanation": "checked"}))


@pytest.mark.parametrize("second_label,resolved", [("none", True), ("Misrepresentation", False)])
def test_dual_model_fact_check_sends_checks_to_the_verifier_and_writing_to_the_generator(
        make_client, no_llm_env, scripted_server, second_label, resolved):
    with ScriptedOpenAIServer(default=Step(content=UNIVERSAL)) as writer, \
            ScriptedOpenAIServer(default=_verdict(second_label)) as checker:
        checker.push(*[_verdict("unsubstantiated")] * 4)  # the first verdicts (any case) find errors
        params = marwg_params(generator=_override(writer, "writer-model"),
                              verifier=_override(checker, "verifier-model"))
        generation = MARWG(params, make_client(scripted_server), embed_fn=bag_of_words).generate(EXAMPLE, TASK)
        writer_systems = [r["messages"][0]["content"] for r in writer.requests]
        checker_systems = [r["messages"][0]["content"] for r in checker.requests]
    assert scripted_server.requests == []  # the run's own client wrote nothing: both roles are overridden
    assert generation.notes["verification"] == {"generator": "writer-model", "verifier": "verifier-model",
                                                "dual_model": True}
    # 4 verifications + 4 re-verifications on the verifier; summaries ... corrections on the generator
    assert len(checker_systems) == 8 and set(checker_systems) == {prompts.MARWG_VERIFIER_SYSTEM}
    assert len(writer_systems) == 15 and set(writer_systems) == {prompts.MARWG_SYSTEM}
    report = generation.notes["fact_check"]
    assert report["errors"] == {"Unsubstantiated": 4} and report["corrected"] == 4
    assert (report["resolved"], report["still_wrong"]) == ((4, 0) if resolved else (0, 4))
    assert len(report["unresolved"]) == report["still_wrong"]
    # All four corrections are kept; the two paragraphs they make are the same, so the output checks keep one.
    assert generation.text.count("Graph convolutional networks aggregate neighbour features [R1].") == 2
    assert generation.notes["output_checks"]["repeated_paragraphs"] == 1
    roles = _roles(generation)
    assert roles["verify"] == 4 and roles["correction"] == 4 and roles["reverify"] == 4
    assert {r.model for r in generation.records if r.role in ("verify", "reverify")} == {"verifier-model"}
    assert {r.model for r in generation.records if r.role != "verify" and r.role != "reverify"} == {"writer-model"}


def test_a_verifier_equal_to_the_generator_is_one_model(make_client, no_llm_env, scripted_server):
    same = _override(scripted_server, "one-model")
    system = MARWG(marwg_params(generator=same, verifier=dict(same)), make_client(scripted_server))
    assert system.verifier is system.generator
    assert system.verification == {"generator": "one-model", "verifier": "one-model", "dual_model": False}


def test_an_endpoint_that_answers_nothing_raises_instead_of_a_fallback_text(make_client):
    with ScriptedOpenAIServer(default=Step(status=400, error_message="bad model name")) as server, \
            pytest.raises(EndpointError, match="refused"):
        _run(make_client, server)


def test_marwgs_own_ablation_runs_each_component_off_with_the_papers_findings_beside(no_llm_env, tmp_path):
    from crewlib.experiments.ablations import MARWG_FULL, marwg_ablation_runs, marwg_ablation_table, run_marwg_ablations

    with ScriptedOpenAIServer(default=Step(content=UNIVERSAL)) as server:
        params = load_params("quick", {"llm": _override(server, "scripted-model"),
                                       "ablations": {"marwg": {"metrics": ["citation"], "targets": 1}}})
        runs = marwg_ablation_runs(params)
        assert list(runs) == [MARWG_FULL, "w/o taxonomy (DAG)", "w/o feedback", "w/o fact-checking",
                              "w/o summarisation"]
        assert runs["w/o summarisation"].baselines.marwg.summarisation is False
        assert runs[MARWG_FULL].baselines.marwg.summarisation is True
        run = run_marwg_ablations(params, variants=["w/o feedback"], out_dir=tmp_path)  # ablations.marwg.targets
        with pytest.raises(ValueError, match="unknown MA-RWG ablation"):
            marwg_ablation_runs(params, ["w/o everything"])
    table = marwg_ablation_table(run)
    assert list(table.index) == [MARWG_FULL, "w/o feedback"] and (table.drafts == "1/1").all()
    assert table.loc["w/o feedback", "MA-RWG paper (its Table 2)"] == "less evaluative depth and clarity"
    assert table.loc[MARWG_FULL, "citation recall"] != "unavailable" and table.loc[MARWG_FULL, "CitP"] == "unavailable"
    components = run.generations.set_index("backbone").notes.map(lambda n: n["components"]["feedback"])
    assert components[MARWG_FULL] and not components["w/o feedback"]
