"""MA-RWG (docs/method.md §MA-RWG): the related-work section as the MA-RWG paper's staged pipeline.

1. **Paper selection** (no LLM, :func:`select_papers`): ``B`` papers of the pool chosen greedily by
   ``(1−λ)·rel(p_i) + λ·div(p_i)``, with ``rel`` the MiniLM cosine of a paper to the target's title
   and abstract and ``div(p_i) = 1 − min_{p_j∈S} cos(e_i, e_j)`` over the papers ``S`` already
   chosen; λ = 0 (the paper's main experiments) is pure relevance. ``B`` is the number of
   distinct gold-cited references in the pool, as in the paper; the ``budget`` setting serves
   only an example without gold citations (``notes["budget_source"]``).
2. **Top pages** (no LLM, :func:`top_pages`): each selected paper's text (title, abstract and any
   full text) cut into pages of ``page_words`` words; its ``D`` (``pages``) pages most similar to
   the target are what the next stage reads.
3. **Contextual summaries + pseudo-labels**: per paper, one or two sentences in the context of the
   target, and a label of ≤ 4 words for Task, Methodology, Dataset, Evaluation.
4. **Taxonomy** (no LLM, :func:`build_taxonomy`): per dimension, labels clustered by MiniLM
   similarity; width expansion adds a child for a label unlike every existing one, depth
   expansion splits a node of ρ ≥ δ papers with a tighter threshold, down to ``l_max``.
5. **Outline**: 2–4 topics of ≤ 10 words, each with its papers (:func:`validate_outline`), planned
   over the taxonomy and the summaries; an invalid outline falls back to the largest Methodology
   nodes (:func:`fallback_outline`).
6. **Draft → feedback → revision**: a paragraph per topic, one review of the whole draft on
   structural logic, critical analysis, prominent contribution and concise language, then a
   revision per topic.
7. **Fact-checking**: the verifier — a second model when ``verifier`` names one (dual-model check,
   ``notes["verification"]``) — labels up to ``max_verify`` citing sentences against the
   abstracts they cite (none or one of :data:`ERROR_TYPES`); each error is corrected by the
   generator and verified once more. A correction still judged wrong is kept (it is at least an
   attempt on the error) and recorded as unresolved in ``notes["fact_check"]``.

Component switches (the paper's Table 2 ablation): ``taxonomy`` off removes stage 4 (the outline
is planned from the summaries alone), ``feedback`` off removes the review and the revisions of
stage 6, ``fact_check`` off removes stage 7, ``summarisation`` off has stages 5–7 read each paper's abstract
instead of its contextual summary (stage 3 is still asked: its pseudo-labels build the taxonomy).

LLM calls per example, before the client's re-asks of invalid JSON:
``B' + 1 + T + f·(1 + T) + c·(V + 2E)`` with ``B' = min(B, pool)`` papers, ``T`` topics (2–4),
``f``/``c`` the feedback/fact-check switches (0 or 1), ``V ≤ max_verify`` sentences checked and
``E`` errors found (one correction and one re-verification each); with the quick params and
B = 6 at most 6 + 1 + 4 + 5 + 6 + 12 = 34. Independent calls of a stage run as one batch
(summaries, drafts, revisions, verifications, corrections, re-verifications).

Every LLM failure becomes a counted fallback in ``Generation.fallbacks`` (``<stage>_invalid``
for an answer still invalid after the re-ask, ``<stage>_failed`` for an endpoint error), never a
crash — except when no summary at all comes back for an endpoint reason: the endpoint is then
unusable and the error is raised rather than a text reported as if the pipeline had run.
"""

from __future__ import annotations

import dataclasses
import re
from collections import Counter
from collections.abc import Callable, Collection, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Literal

import numpy as np
import pydantic

from crewlib import prompts
from crewlib.baselines.base import Generation, System
from crewlib.citations import find_citation_keys
from crewlib.data.records import Reference, RWGExample
from crewlib.llm import ChatRequest, LLMClient, LLMError, OutputValidationError, connect_override
from crewlib.tasks import Task
from crewlib.text import sentences

DIMENSIONS = ("Task", "Methodology", "Dataset", "Evaluation")
ERROR_TYPES = ("Direct Contradiction", "Unsubstantiated", "Misrepresentation", "Incorrect Attribution", "Other")
FEEDBACK_DIMENSIONS = ("structural_logic", "critical_analysis", "prominent_contribution", "concise_language")
UNSPECIFIED = "unspecified"
# Titles of the last-resort outline, when the taxonomy has too few nodes to make topics of.
FALLBACK_TITLES = ("Closely related work", "Further related work", "Other related work", "Additional related work")

EmbedFn = Callable[[list[str]], np.ndarray]


@dataclass(frozen=True)
class MARWGSettings:
    """The ``baselines.marwg`` params block (values: params/quick.yaml; constraints: crewlib.schema.MARWG)."""

    budget: int  # B for an example without gold citations in its pool
    lambda_: float  # λ ("lambda" in params): 0 = pure relevance, 1 = pure diversity
    pages: int  # D: top pages per selected paper
    page_words: int  # words per page
    delta: int  # δ: a taxonomy node with ρ ≥ δ papers is split (depth expansion)
    l_max: int  # deepest taxonomy level (the root, the dimension itself, is level 0)
    max_verify: int  # citing sentences fact-checked per example
    generator: dict | None  # an llm override for the writer; None = the run's client
    verifier: dict | None  # an llm override for the fact-checker; None = the generator
    width_threshold: float  # MiniLM cosine to join an existing node; below it, a new child
    depth_step: float  # the threshold tightens by this much per level of depth expansion
    min_topics: int
    max_topics: int
    max_title_words: int
    topic_titles: bool  # start each paragraph with its bold topic title
    min_paragraph_words: int  # a paragraph asks for target_words / T words, at least this many
    target_chars: int  # the target's abstract is cut to this many characters in prompts
    evidence_chars: int  # a cited abstract, when a sentence is verified or corrected
    max_tokens: dict  # per stage: summary, outline, draft, feedback, revision, verify, correction
    taxonomy: bool  # component switches (Table 2 ablation)
    feedback: bool
    fact_check: bool
    summarisation: bool

    @classmethod
    def from_settings(cls, settings: Mapping) -> MARWGSettings:
        """Validate ``settings`` against the params schema (one place for the constraints) and read every key."""
        from crewlib.schema import MARWG as MARWGBlock
        from crewlib.schema import validation_messages

        try:
            block = MARWGBlock.model_validate(dict(settings)).model_dump()
        except pydantic.ValidationError as exc:
            raise ValueError("baselines.marwg: " + "; ".join(validation_messages(exc))) from exc
        return cls(**{f.name: block[f.name] for f in dataclasses.fields(cls)})


# ------------------------------------------------------------------------------------------ schemas
class SummaryOut(pydantic.BaseModel):
    summary: str = pydantic.Field(min_length=10)
    task: str
    methodology: str
    dataset: str
    evaluation: str


class Topic(pydantic.BaseModel):
    title: str
    keys: list[str]

    @pydantic.field_validator("title")
    @classmethod
    def _clean_title(cls, value: str) -> str:
        return value.strip().strip("*#\"'").strip().rstrip(".:").strip()

    @pydantic.field_validator("keys", mode="before")
    @classmethod
    def _clean_keys(cls, value: object) -> object:
        """Small models write "[R1]", "r1" or "R1, R2": keep the bare keys, each once."""
        if isinstance(value, str):
            value = re.split(r"[,;\s]+", value)
        if not isinstance(value, list):
            return value
        keys = [str(k).strip().strip("[]").strip().upper() for k in value]
        return list(dict.fromkeys(k for k in keys if k))


class OutlineOut(pydantic.BaseModel):
    topics: list[Topic]


class ParagraphOut(pydantic.BaseModel):
    paragraph: str = pydantic.Field(min_length=40)


class FeedbackOut(pydantic.BaseModel):
    """The review of the draft on MA-RWG's four feedback dimensions (:data:`FEEDBACK_DIMENSIONS`)."""

    structural_logic: str
    critical_analysis: str
    prominent_contribution: str
    concise_language: str


def _canonical_label(value: object) -> object:
    if not isinstance(value, str):
        return value
    squashed = re.sub(r"[^a-z]", "", value.lower())
    for label in ("none", *ERROR_TYPES):
        if squashed == re.sub(r"[^a-z]", "", label.lower()):
            return label
    return value


class VerifyOut(pydantic.BaseModel):
    label: Literal["none", "Direct Contradiction", "Unsubstantiated", "Misrepresentation", "Incorrect Attribution",
                   "Other"]
    explanation: str = ""

    @pydantic.field_validator("label", mode="before")
    @classmethod
    def _canonical(cls, value: object) -> object:
        return _canonical_label(value)


class CorrectionOut(pydantic.BaseModel):
    sentence: str = pydantic.Field(min_length=10)


# ----------------------------------------------------------------------------------------- stages 1-2
def select_papers(relevance: np.ndarray, vectors: np.ndarray | None, k: int, lam: float) -> list[int]:
    """Indices of ``k`` papers in the order MA-RWG's greedy selection picks them.

    score_i = (1−λ)·relevance_i + λ·div_i with div_i = 1 − min_{j∈S} cos(e_i, e_j) over the papers
    ``S`` already picked (the paper's definition: a minimum, not a maximum). On an empty ``S`` the
    diversity term is the same for every paper. Ties — and so the first pick at λ = 1 — go to the
    more relevant paper, then to the lower index. ``vectors``: unit rows; unused (may be None) at λ = 0.
    """
    rel = np.asarray(relevance, dtype=float)
    sims = vectors @ vectors.T if vectors is not None and lam > 0 else None
    nearest = np.ones(len(rel))  # min cosine to S; div = 1 − nearest, 0 for every paper while S is empty
    remaining = list(range(len(rel)))
    chosen: list[int] = []
    while remaining and len(chosen) < k:
        score = (1 - lam) * rel + (lam * (1 - nearest) if sims is not None else 0.0)
        best = max(remaining, key=lambda i: (score[i], rel[i], -i))
        chosen.append(best)
        remaining.remove(best)
        if sims is not None:
            nearest = sims[best].copy() if len(chosen) == 1 else np.minimum(nearest, sims[best])
    return chosen


def paper_pages(reference: Reference, page_words: int) -> list[str]:
    """A paper's available text — title, abstract, then any full-text sections — as pages of ``page_words`` words."""
    parts = [reference.text, *(f"{heading}. {text}" for heading, text in reference.sections)]
    words = " ".join(parts).split()
    return [" ".join(words[i:i + page_words]) for i in range(0, len(words), page_words)]


def top_pages(pages: Sequence[str], page_vectors: np.ndarray, target_vector: np.ndarray, d: int) -> list[str]:
    """The ``d`` pages most similar to the target (cosine of unit rows; ties to the earlier page), in text order."""
    if len(pages) <= d:
        return list(pages)
    sims = np.asarray(page_vectors) @ np.asarray(target_vector)
    best = sorted(range(len(pages)), key=lambda i: (-sims[i], i))[:d]
    return [pages[i] for i in sorted(best)]


# ------------------------------------------------------------------------------------------ stage 4
@dataclass
class TaxonomyNode:
    """A node of a dimension's taxonomy: the root (level 0) is the dimension itself."""

    name: str
    level: int
    papers: list[str]
    children: list[TaxonomyNode] = field(default_factory=list)

    def walk(self) -> Iterator[TaxonomyNode]:
        yield self
        for child in self.children:
            yield from child.walk()

    @property
    def depth(self) -> int:
        return max(node.level for node in self.walk())

    @property
    def size(self) -> int:
        return sum(1 for _ in self.walk())

    def leaves(self) -> list[TaxonomyNode]:
        return [node for node in self.walk() if not node.children]

    def to_dict(self) -> dict:
        return {"name": self.name, "level": self.level, "papers": list(self.papers),
                "children": [child.to_dict() for child in self.children]}

    def render(self) -> str:
        """The tree as indented lines ``- name: R1, R3`` (for prompts)."""
        lines = [self.name]
        for node in self.walk():
            if node.level:
                lines.append(f"{'  ' * (node.level - 1)}- {node.name}: {', '.join(node.papers)}")
        return "\n".join(lines)


def _unit(vectors: np.ndarray) -> np.ndarray:
    vectors = np.atleast_2d(np.asarray(vectors, dtype=float))
    return vectors / np.maximum(np.linalg.norm(vectors, axis=1, keepdims=True), 1e-12)


def _threshold_clusters(papers: list[str], vector: Mapping[str, np.ndarray], threshold: float) -> list[list[str]]:
    """Greedy leader clustering in input order: join the nearest centroid if cosine ≥ threshold,
    else open a new cluster (width expansion). Deterministic."""
    groups: list[list[str]] = []
    sums: list[np.ndarray] = []
    for paper in papers:
        v = vector[paper]
        if groups:
            sims = _unit(np.stack(sums)) @ v
            best = int(np.argmax(sims))
            if sims[best] >= threshold:
                groups[best].append(paper)
                sums[best] = sums[best] + v
                continue
        groups.append([paper])
        sums.append(v.copy())
    return groups


def _split_in_two(papers: list[str], vector: Mapping[str, np.ndarray]) -> list[list[str]]:
    """Split around the two least similar labels (a paper equally close to both joins the smaller
    group); one group if every label is the same."""
    matrix = np.stack([vector[p] for p in papers])
    sims = matrix @ matrix.T
    a, b = np.unravel_index(int(np.argmin(sims)), sims.shape)
    if sims[a, b] >= 1 - 1e-6:
        return [list(papers)]
    groups: list[list[str]] = [[], []]
    for i, paper in enumerate(papers):
        gap = sims[i, a] - sims[i, b]
        side = (0 if len(groups[0]) <= len(groups[1]) else 1) if abs(gap) < 1e-9 else (0 if gap > 0 else 1)
        groups[side].append(paper)
    return groups


def _representative(papers: list[str], labels: Mapping[str, str], vector: Mapping[str, np.ndarray]) -> str:
    """The member label closest to the cluster's centroid (first on ties)."""
    matrix = np.stack([vector[p] for p in papers])
    centroid = _unit(matrix.sum(axis=0))[0]
    return labels[papers[int(np.argmax(matrix @ centroid))]]


def build_taxonomy(labels: Mapping[str, str], dimension: str, delta: int, l_max: int, embed_fn: EmbedFn, *,
                   width_threshold: float, depth_step: float) -> TaxonomyNode:
    """The taxonomy of one dimension from the papers' pseudo-labels.

    Args:
        labels: paper key → its label on this dimension (order = the order papers are placed).
        dimension: the root's name (e.g. "Methodology").
        delta: δ; a node with ρ ≥ δ papers is split (depth expansion) if its level < ``l_max``.
        l_max: the deepest level; the root is level 0, its children level 1.
        embed_fn: texts → embedding rows (MiniLM ``crewlib.relevance.embed`` in the pipeline).
        width_threshold: the cosine to a node's centroid needed to join it at level 1; at level ℓ
            the threshold is ``width_threshold + depth_step·(ℓ−1)`` (tighter deeper down).

    A node that the tighter threshold leaves whole is split in two around its two least similar
    labels; only a node whose labels are all identical stays a leaf with δ or more papers
    above ``l_max`` (no similarity can split it).
    """
    if delta < 1 or l_max < 1:
        raise ValueError(f"build_taxonomy needs delta >= 1 and l_max >= 1 (got {delta}, {l_max})")
    papers = list(labels)
    root = TaxonomyNode(dimension, 0, papers)
    if not papers:
        return root
    unique = list(dict.fromkeys(labels[p] for p in papers))
    rows = _unit(embed_fn(unique))
    vector = {p: rows[unique.index(labels[p])] for p in papers}

    def expand(members: list[str], level: int) -> list[TaxonomyNode]:
        groups = _threshold_clusters(members, vector, min(width_threshold + depth_step * (level - 1), 0.99))
        if len(groups) == 1 and level > 1:  # depth expansion the threshold could not split
            groups = _split_in_two(members, vector)
            if len(groups) == 1:
                return []
        nodes = []
        for group in groups:
            node = TaxonomyNode(_representative(group, labels, vector), level, group)
            if len(group) >= delta and level < l_max:  # ρ ≥ δ (the paper)
                node.children = expand(group, level + 1)
            nodes.append(node)
        return nodes

    root.children = expand(papers, 1)
    return root


# ------------------------------------------------------------------------------------------ stage 5
def validate_outline(topics: Sequence[Topic | Mapping], known_keys: Collection[str], *, min_topics: int,
                     max_topics: int, max_words: int) -> list[str]:
    """Problems of an outline (empty when valid): the number of topics, a title of more than
    ``max_words`` words (or none), a topic without keys, or keys outside ``known_keys``."""
    topics = [Topic.model_validate(t) if isinstance(t, Mapping) else t for t in topics]
    problems = []
    if not min_topics <= len(topics) <= max_topics:
        problems.append(f"{len(topics)} topics given, {min_topics} to {max_topics} needed")
    for i, topic in enumerate(topics, 1):
        words = len(topic.title.split())
        if not words:
            problems.append(f"topic {i} has no title")
        elif words > max_words:
            problems.append(f"the title of topic {i} has {words} words, at most {max_words} allowed")
        if not topic.keys:
            problems.append(f"topic {i} lists no keys")
        unknown = [k for k in topic.keys if k not in known_keys]
        if unknown:
            problems.append(f"topic {i} names unknown keys {unknown}; use only {', '.join(known_keys)}")
    return problems


def outline_schema(known_keys: Sequence[str], *, min_topics: int, max_topics: int,
                   max_words: int) -> type[OutlineOut]:
    """:class:`OutlineOut` that also runs :func:`validate_outline`, so the client's one re-ask
    tells the model what was wrong."""

    class Outline(OutlineOut):
        @pydantic.model_validator(mode="after")
        def _valid(self) -> Outline:
            problems = validate_outline(self.topics, known_keys, min_topics=min_topics, max_topics=max_topics,
                                        max_words=max_words)
            if problems:
                raise ValueError("; ".join(problems))
            return self

    return Outline


def _title(name: str, max_words: int) -> str:
    words = name.split()[:max_words]
    text = " ".join(words)
    return text[:1].upper() + text[1:]


def fallback_outline(taxonomies: Mapping[str, TaxonomyNode], candidates: Sequence[str], embed_fn: EmbedFn, *,
                     min_topics: int, max_topics: int, max_words: int) -> list[Topic]:
    """Topics from the taxonomy: the largest ``min_topics``–``max_topics`` Methodology nodes.

    Level-1 nodes first; while there are too few, the largest node with children is replaced by
    them; then the Task tree is tried; last (also with no taxonomy at all), the candidates are cut
    into ``min_topics`` runs.
    Papers of nodes beyond ``max_topics`` join the topic whose name is most similar to theirs.
    """
    order = {k: i for i, k in enumerate(candidates)}
    min_topics = min(min_topics, len(candidates))
    nodes: list[TaxonomyNode] = []
    for dimension in ("Methodology", "Task"):
        root = taxonomies.get(dimension)
        nodes = list(root.children) if root else []
        while len(nodes) < min_topics and any(n.children for n in nodes):
            big = max((n for n in nodes if n.children), key=lambda n: len(n.papers))
            at = nodes.index(big)
            nodes[at:at + 1] = big.children
        if len(nodes) >= min_topics and any(n.name != UNSPECIFIED for n in nodes):
            break
    else:
        runs = np.array_split(np.arange(len(candidates)), max(min_topics, 1))
        return [Topic(title=FALLBACK_TITLES[i % len(FALLBACK_TITLES)], keys=[candidates[j] for j in run])
                for i, run in enumerate(runs) if len(run)]
    nodes = sorted(nodes, key=lambda n: -len(n.papers))  # stable: taxonomy order on ties
    chosen, rest = nodes[:max_topics], nodes[max_topics:]
    members = [list(n.papers) for n in chosen]
    if rest:
        names = _unit(embed_fn([n.name for n in chosen] + [n.name for n in rest]))
        for i, node in enumerate(rest):
            members[int(np.argmax(names[: len(chosen)] @ names[len(chosen) + i]))] += node.papers
    used: set[str] = set()
    topics = []
    for node, keys in zip(chosen, members, strict=True):
        title = _title(node.name if node.name != UNSPECIFIED else FALLBACK_TITLES[2], max_words)
        if title in used:
            title = _title(f"{title} (continued)", max_words)
        used.add(title)
        topics.append(Topic(title=title, keys=sorted(dict.fromkeys(keys), key=lambda k: order.get(k, len(order)))))
    return topics


# ------------------------------------------------------------------------------------------ helpers
@dataclass
class PaperCard:
    """What stage 3 knows of a paper: its contextual summary and its four pseudo-labels."""

    key: str
    summary: str
    labels: dict[str, str]


def _cut(text: str, chars: int) -> str:
    return text if len(text) <= chars else text[:chars].rsplit(" ", 1)[0] + " ..."


def _short_label(text: str, max_words: int = 4) -> str:
    words = re.sub(r"[\"'*`]", "", text).strip().rstrip(".").split()[:max_words]
    return " ".join(words) or UNSPECIFIED


def _one_paragraph(text: str) -> str:
    """A model's paragraph as one line: headings and markdown emphasis dropped, whitespace collapsed."""
    lines = [line for line in text.splitlines() if not line.lstrip().startswith("#")]
    return re.sub(r"\s+", " ", " ".join(lines).replace("**", "")).strip()


def _citing_sentences(paragraphs: Sequence[str], limit: int) -> list[tuple[int, str]]:
    """Up to ``limit`` (paragraph, sentence) pairs with a citation, round-robin over the paragraphs
    so that the check is spread over the whole section."""
    per = [[s for s in sentences(p) if find_citation_keys(s)] for p in paragraphs]
    picked: list[tuple[int, str]] = []
    for rank in range(max((len(s) for s in per), default=0)):
        for p, items in enumerate(per):
            if rank < len(items) and len(picked) < limit:
                picked.append((p, items[rank]))
    return picked


# ------------------------------------------------------------------------------------------ system
class MARWG(System):
    """MA-RWG: ``MARWG(params, client)``; ``embed_fn`` replaces MiniLM (tests)."""

    name = "marwg"

    def __init__(self, params: Mapping, client: LLMClient | None = None, *, embed_fn: EmbedFn | None = None) -> None:
        super().__init__(params, client)
        self.config = cfg = MARWGSettings.from_settings(self.settings)
        ledger = client.ledger
        self.generator = connect_override(self.params, cfg.generator, ledger=ledger) if cfg.generator else client
        # A verifier named apart from the generator is a second client (the dual-model check).
        self.verifier = (connect_override(self.params, cfg.verifier, ledger=ledger)
                         if cfg.verifier and cfg.verifier != cfg.generator else self.generator)
        self._embed_fn = embed_fn

    def embed(self, texts: list[str]) -> np.ndarray:
        """Unit-length MiniLM embeddings (offline), or the injected ``embed_fn``."""
        if self._embed_fn is not None:
            return self._embed_fn(texts)
        from crewlib import relevance

        return relevance.embed(texts)

    @property
    def verification(self) -> dict:
        """Which models write and which check: ``dual_model`` when the verifier is a model of its own."""
        generator, verifier = self.generator.model, self.verifier.model
        return {"generator": generator, "verifier": verifier,
                "dual_model": self.verifier is not self.generator and verifier != generator}

    # ---------------------------------------------------------------- stage 1
    def budget(self, example: RWGExample, task: Task) -> tuple[int, str]:
        """B and where it came from: the gold-cited references in the pool (``"gold"``), else the setting.

        Only the number of gold citations is read — the paper's B — never which papers they are.
        """
        gold = {i for i in example.gold_cited_ids if i in task.id_to_key}
        return (len(gold), "gold") if gold else (self.config.budget, "setting")

    def select_candidates(self, task: Task, budget: int) -> list[str]:
        """Keys (``R3``) of the ``budget`` papers, in the order :func:`select_papers` picked them."""
        rows = _unit(self.embed([task.target_text, *(r.text for r in task.references)]))
        relevance = rows[1:] @ rows[0]  # MiniLM cosine to the target's title and abstract
        chosen = select_papers(relevance, rows[1:], budget, self.config.lambda_)
        return [task.keys[i] for i in chosen]

    # ---------------------------------------------------------------- stage 2
    def pages(self, task: Task, keys: Sequence[str]) -> dict[str, list[str]]:
        """Each paper's top ``D`` pages by MiniLM cosine to the target (one embedding batch for all)."""
        cfg = self.config
        by_key = task.reference_by_key
        split = {k: paper_pages(by_key[k], cfg.page_words) for k in keys}
        rows = _unit(self.embed([task.target_text, *(p for k in keys for p in split[k])]))
        out, at = {}, 1
        for k in keys:
            n = len(split[k])
            out[k] = top_pages(split[k], rows[at:at + n], rows[0], cfg.pages)
            at += n
        return out

    # ---------------------------------------------------------------- LLM plumbing
    def _ask(self, client: LLMClient, stage: str, messages: list[list[dict]], schema: type[pydantic.BaseModel],
             fallbacks: Counter, *, max_tokens_key: str | None = None) -> tuple[list, list[LLMError]]:
        """One batch of JSON requests; a failed one is None in the answers and counted in ``fallbacks``."""
        requests = [ChatRequest(m, caller=self.caller(stage), schema=schema, prompt_version=prompts.PROMPT_VERSION,
                                max_tokens=self.config.max_tokens[max_tokens_key or stage]) for m in messages]
        answers, errors = [], []
        for outcome in client.batch(requests, return_exceptions=True):
            if isinstance(outcome, LLMError):
                kind = "invalid" if isinstance(outcome, OutputValidationError) else "failed"
                fallbacks[f"{stage}_{kind}"] += 1
                errors.append(outcome)
                answers.append(None)
            else:
                answers.append(outcome.parsed)
        return answers, errors

    @staticmethod
    def _messages(user: str, system: str = prompts.MARWG_SYSTEM) -> list[dict]:
        return [{"role": "system", "content": system}, {"role": "user", "content": user}]

    # ---------------------------------------------------------------- stage 3
    def summarize(self, task: Task, pages: Mapping[str, list[str]], fallbacks: Counter) -> dict[str, PaperCard]:
        """A contextual summary and four pseudo-labels per paper, from its top pages."""
        by_key = task.reference_by_key
        keys = list(pages)
        messages = [self._messages(prompts.MARWG_SUMMARY.format(
            title=task.title, abstract=_cut(task.abstract, self.config.target_chars), key=k, ref_title=by_key[k].title,
            pages="\n".join(pages[k]))) for k in keys]
        answers, errors = self._ask(self.generator, "summary", messages, SummaryOut, fallbacks)
        if errors and len(errors) == len(keys) and not any(isinstance(e, OutputValidationError) for e in errors):
            raise errors[0]  # the endpoint answered nothing: no pipeline ran, so no text to report
        cards = {}
        for key, out in zip(keys, answers, strict=True):
            if out is None:
                first = (sentences(by_key[key].abstract) or [by_key[key].title])[0]
                cards[key] = PaperCard(key, " ".join(first.split()[:40]), dict.fromkeys(DIMENSIONS, UNSPECIFIED))
            else:
                labels = [out.task, out.methodology, out.dataset, out.evaluation]
                cards[key] = PaperCard(key, " ".join(out.summary.split()),
                                       {d: _short_label(v) for d, v in zip(DIMENSIONS, labels, strict=True)})
        return cards

    # ---------------------------------------------------------------- stage 4
    def taxonomies(self, cards: Mapping[str, PaperCard]) -> dict[str, TaxonomyNode]:
        cfg = self.config
        return {d: build_taxonomy({k: c.labels[d] for k, c in cards.items()}, d, cfg.delta, cfg.l_max, self.embed,
                                  width_threshold=cfg.width_threshold, depth_step=cfg.depth_step)
                for d in DIMENSIONS}

    # ---------------------------------------------------------------- stage 5
    def outline(self, task: Task, cards: Mapping[str, PaperCard], trees: Mapping[str, TaxonomyNode],
                fallbacks: Counter) -> tuple[list[Topic], str]:
        """Topics over the taxonomy and the summaries (the summaries alone when ``trees`` is empty)."""
        cfg = self.config
        keys = list(cards)
        min_topics = min(cfg.min_topics, len(keys))
        schema = outline_schema(keys, min_topics=min_topics, max_topics=cfg.max_topics,
                                max_words=cfg.max_title_words)
        fields = {"title": task.title, "abstract": _cut(task.abstract, cfg.target_chars),
                  "papers": self._papers_block(task, cards, keys), "min_topics": min_topics,
                  "max_topics": cfg.max_topics, "max_words": cfg.max_title_words}
        if trees:
            user = prompts.MARWG_OUTLINE.format(
                taxonomy=f"{trees['Methodology'].render()}\n{trees['Task'].render()}", **fields)
        else:
            user = prompts.MARWG_OUTLINE_NO_TAXONOMY.format(**fields)
        (answer,), _ = self._ask(self.generator, "outline", [self._messages(user)], schema, fallbacks)
        if answer is not None:
            return list(answer.topics), "llm"
        return fallback_outline(trees, keys, self.embed, min_topics=min_topics, max_topics=cfg.max_topics,
                                max_words=cfg.max_title_words), "fallback"

    # ---------------------------------------------------------------- stage 6
    @staticmethod
    def _papers_block(task: Task, cards: Mapping[str, PaperCard], keys: Sequence[str]) -> str:
        by_key = task.reference_by_key
        return "\n".join(f"[{k}] {by_key[k].title}: {cards[k].summary}" for k in keys)

    @staticmethod
    def _outline_block(topics: Sequence[Topic]) -> str:
        return "\n".join(f"{i}. {t.title} ({', '.join(t.keys)})" for i, t in enumerate(topics, 1))

    @staticmethod
    def _summary_paragraph(topic: Topic, cards: Mapping[str, PaperCard]) -> str:
        """The fallback paragraph: each paper's summary with its key."""
        return " ".join(f"{cards[k].summary.rstrip('. ')} [{k}]." for k in topic.keys)

    def draft(self, task: Task, cards: Mapping[str, PaperCard], topics: list[Topic],
              fallbacks: Counter) -> list[str]:
        words = max(self.config.min_paragraph_words, task.target_words // len(topics))
        messages = [self._messages(prompts.MARWG_DRAFT.format(
            title=task.title, abstract=_cut(task.abstract, self.config.target_chars),
            outline=self._outline_block(topics), index=i, n=len(topics), topic=t.title,
            papers=self._papers_block(task, cards, t.keys), words=words))
            for i, t in enumerate(topics, 1)]
        answers, _ = self._ask(self.generator, "draft", messages, ParagraphOut, fallbacks)
        return [_one_paragraph(a.paragraph) if a is not None else self._summary_paragraph(t, cards)
                for t, a in zip(topics, answers, strict=True)]

    def feedback(self, task: Task, cards: Mapping[str, PaperCard], topics: list[Topic], paragraphs: list[str],
                 fallbacks: Counter) -> FeedbackOut | None:
        """One review of the whole draft on :data:`FEEDBACK_DIMENSIONS`; None when no valid review came back."""
        draft = "\n\n".join(f"Topic {i}: {t.title}\n{p}" for i, (t, p) in enumerate(zip(topics, paragraphs,
                                                                                          strict=True), 1))
        user = prompts.MARWG_FEEDBACK.format(title=task.title, abstract=_cut(task.abstract, self.config.target_chars),
                                             papers=self._papers_block(task, cards, list(cards)), draft=draft)
        (answer,), _ = self._ask(self.generator, "feedback", [self._messages(user)], FeedbackOut, fallbacks)
        return answer

    def revise(self, task: Task, cards: Mapping[str, PaperCard], topics: list[Topic], paragraphs: list[str],
               feedback: FeedbackOut, fallbacks: Counter) -> list[str]:
        """One revision per topic, so the outline's topics and order survive by construction."""
        words = max(self.config.min_paragraph_words, task.target_words // len(topics))
        comments = "\n".join(f"- {name.replace('_', ' ')}: {text}" for name, text in feedback.model_dump().items())
        messages = [self._messages(prompts.MARWG_REVISE.format(
            title=task.title, index=i, n=len(topics), topic=t.title, paragraph=p,
            papers=self._papers_block(task, cards, t.keys), feedback=comments, words=words))
            for i, (t, p) in enumerate(zip(topics, paragraphs, strict=True), 1)]
        answers, _ = self._ask(self.generator, "revision", messages, ParagraphOut, fallbacks)
        return [_one_paragraph(a.paragraph) if a is not None else p
                for p, a in zip(paragraphs, answers, strict=True)]

    # ---------------------------------------------------------------- stage 7
    def _cited_block(self, task: Task, keys: Sequence[str]) -> str:
        by_key = task.reference_by_key
        chars = self.config.evidence_chars
        return "\n".join(f"[{k}] {by_key[k].title}: {_cut(by_key[k].abstract, chars)}" for k in keys)

    def _verify(self, task: Task, items: list[str], stage: str, fallbacks: Counter) -> list[VerifyOut | None]:
        """Verdicts for sentences; one citing no key of the pool is an Incorrect Attribution without a call."""
        verdicts: list[VerifyOut | None] = [None] * len(items)
        asked, messages = [], []
        for i, sentence in enumerate(items):
            known = [k for k in dict.fromkeys(find_citation_keys(sentence)) if k in task.key_to_id]
            if not known:
                verdicts[i] = VerifyOut(label="Incorrect Attribution", explanation="cites no paper of the pool")
                continue
            asked.append(i)
            messages.append(self._messages(prompts.MARWG_VERIFY.format(cited=self._cited_block(task, known),
                                                                       sentence=sentence),
                                           system=prompts.MARWG_VERIFIER_SYSTEM))
        answers, _ = self._ask(self.verifier, stage, messages, VerifyOut, fallbacks, max_tokens_key="verify")
        for i, answer in zip(asked, answers, strict=True):
            verdicts[i] = answer
        return verdicts

    def fact_check(self, task: Task, cards: Mapping[str, PaperCard], topics: list[Topic], paragraphs: list[str],
                   fallbacks: Counter) -> tuple[list[str], dict]:
        """Verify, correct and re-verify citing sentences; returns the paragraphs and the counts."""
        paragraphs = list(paragraphs)
        picked = _citing_sentences(paragraphs, self.config.max_verify)
        verdicts = self._verify(task, [s for _, s in picked], "verify", fallbacks)
        report: dict = {"checked": sum(v is not None for v in verdicts),
                        "unverifiable": sum(v is None for v in verdicts),
                        "errors": dict(Counter(v.label for v in verdicts if v is not None and v.label != "none")),
                        "corrected": 0, "resolved": 0, "still_wrong": 0, "unresolved": []}
        wrong = [(p, s, v) for (p, s), v in zip(picked, verdicts, strict=True) if v is not None and v.label != "none"]
        if not wrong:
            return paragraphs, report
        messages = []
        for p, sentence, verdict in wrong:
            cited = [k for k in dict.fromkeys(find_citation_keys(sentence)) if k in task.key_to_id]
            messages.append(self._messages(prompts.MARWG_CORRECT.format(
                title=task.title, label=verdict.label, explanation=verdict.explanation or "(none given)",
                sentence=sentence, cited=self._cited_block(task, cited) or "(no paper of the pool)",
                papers=self._papers_block(task, cards, topics[p].keys))))
        answers, _ = self._ask(self.generator, "correction", messages, CorrectionOut, fallbacks)
        rewritten = []  # (paragraph, new sentence, first label)
        for (p, sentence, verdict), answer in zip(wrong, answers, strict=True):
            new = " ".join(answer.sentence.split()) if answer is not None else ""
            if new and not any(k in task.key_to_id for k in find_citation_keys(new)):
                fallbacks["correction_uncited"] += 1
                new = ""
            if not new:
                report["still_wrong"] += 1
                report["unresolved"].append({"sentence": sentence, "label": verdict.label, "corrected": False})
                continue
            paragraphs[p] = paragraphs[p].replace(sentence, new, 1)
            rewritten.append((p, new, verdict.label))
        report["corrected"] = len(rewritten)
        for (_, new, first), again in zip(rewritten, self._verify(task, [n for _, n, _ in rewritten], "reverify",
                                                                  fallbacks), strict=True):
            if again is not None and again.label == "none":
                report["resolved"] += 1
            else:  # kept: a rewrite aimed at the error, still recorded as unresolved
                report["still_wrong"] += 1
                report["unresolved"].append({"sentence": new, "label": again.label if again else "unverified",
                                             "first_label": first, "corrected": True})
        return paragraphs, report

    # ---------------------------------------------------------------- the pipeline
    def _generate(self, example: RWGExample, task: Task) -> Generation:
        cfg = self.config
        fallbacks: Counter = Counter()
        budget, budget_source = self.budget(example, task)
        candidates = self.select_candidates(task, budget)
        keys = sorted(candidates, key=task.keys.index)  # prompts list papers in the pool's relevance order
        pages = self.pages(task, keys)
        cards = self.summarize(task, pages, fallbacks)
        if not cfg.summarisation:  # the draft from the abstracts: no contextual summary reaches stages 5-7
            by_key = task.reference_by_key
            cards = {k: dataclasses.replace(c, summary=" ".join(
                _cut(by_key[k].abstract or by_key[k].title, cfg.evidence_chars).split())) for k, c in cards.items()}
        trees = self.taxonomies(cards) if cfg.taxonomy else {}
        topics, outline_source = self.outline(task, cards, trees, fallbacks)
        paragraphs = self.draft(task, cards, topics, fallbacks)
        comments = self.feedback(task, cards, topics, paragraphs, fallbacks) if cfg.feedback else None
        if comments is not None:
            paragraphs = self.revise(task, cards, topics, paragraphs, comments, fallbacks)
        report = None
        if cfg.fact_check:
            paragraphs, report = self.fact_check(task, cards, topics, paragraphs, fallbacks)
        if cfg.topic_titles:
            paragraphs = [f"**{t.title}.** {p}" for t, p in zip(topics, paragraphs, strict=True)]
        text = "\n\n".join(paragraphs)
        covered = {k for t in topics for k in t.keys}
        notes = {
            "budget": budget, "budget_source": budget_source, "candidates": candidates,
            "components": {"taxonomy": cfg.taxonomy, "feedback": cfg.feedback, "fact_check": cfg.fact_check,
                           "summarisation": cfg.summarisation},
            "pages": {k: len(p) for k, p in pages.items()},
            "summaries": {k: c.summary for k, c in cards.items()},
            "labels": {k: c.labels for k, c in cards.items()},
            "taxonomy": {d: {"nodes": t.size, "depth": t.depth, "leaves": len(t.leaves()), "tree": t.to_dict()}
                         for d, t in trees.items()},
            "outline": [t.model_dump() for t in topics], "outline_source": outline_source,
            "uncovered": [k for k in keys if k not in covered],
            "feedback": comments.model_dump() if comments is not None else None, "revised": comments is not None,
            "verification": self.verification, "fact_check": report,
            "unknown_keys": sorted(set(k for k in find_citation_keys(text) if k not in task.key_to_id)),
        }
        return Generation(system=self.name, example_id=example.target_id, text=text, key_to_id=task.key_to_id,
                          fallbacks=fallbacks, notes=notes)
