"""One entry point: score a table of system outputs on chosen metrics → tidy (system, example, metric, value).

>>> from crewlib.eval import Evaluator
>>> scores = Evaluator(params).score(outputs, examples, metrics=["citation", "rouge", "judge"])

``outputs`` has one row per system × example: ``system``, ``example``, ``text`` and optionally
``key_to_id`` (the keys that system showed its LLM) and cost columns (``prompt_tokens``,
``completion_tokens``, ``calls``, ``wall_s``). A metric that cannot be computed for a row (no
gold citations, no reference texts, no citation markers, an empty output ...) yields no value;
it is listed in ``scores.attrs["unavailable"]`` with its group, its metric (``"*"`` for the whole
group) and the reason. LLM judgements that failed after retries are listed in
``scores.attrs["missing"]``. ``scores.attrs["timing_s"]`` holds seconds per group.

Metric groups and their papers (definitions in the modules named, and docs/method.md §Metrics):

- ``citation`` — CREW's citation verification (share of citations — markers and stray
  author–year citations — that resolve to a reference; **unavailable** for a text with no
  citation at all, never 1.0), the markers and stray citations counted; MA-RWG's CC and RC
  (:mod:`crewlib.eval.marwg_metrics`); RWGBench's citation precision, recall, density ratio and balance
  (:mod:`crewlib.eval.rwgbench`).
- ``rouge``, ``bertscore`` — against the gold section (:mod:`crewlib.eval.text_metrics`).
- ``topical_relevance``, ``soft_recall_cosine``, ``pss`` — RWGBench, MiniLM embeddings.
- ``sn`` — MA-RWG sentence matching, MiniLM embeddings.
- ``grounding`` — ours, from the output checks (:func:`crewlib.sections.count_faults`): the share of cited
  sentences that the cited works' titles and abstracts support lexically (``output.support_threshold``) and
  their mean lexical support (``support``; 0 when nothing is cited), per sentence the rates of repeated,
  first-person and uncited-claim sentences, whether the text ends inside a sentence (``truncated``), and the
  local coherence of adjacent sentences (``coherence``, :func:`crewlib.eval.section_measures.local_coherence`),
  the share of the numbers cited sentences state that their cited abstracts state too (``number_support``), how far the
  text is cut into paragraphs (``paragraphing``, ``eval.paragraph_sentences``) and the rate of sentences copied
  from an abstract (``copied_sentences_rate``, ``eval.copy_words`` consecutive words).
- ``judge`` (CREW: Coverage, Logic, Relevance), ``rwgbench_judge`` (RWGBench: Coherence,
  Organisation, Fluency, Academic style), ``tq`` (MA-RWG text quality) — LLM judges, 1–5.
- ``soft_recall`` (RWGBench: alternatives judged on titles and abstracts), ``claim_support`` (with MA-RWG's
  ClaP and CitP), ``frame_alignment`` (RWGBench) — LLM labels.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from functools import cached_property

import numpy as np
import pandas as pd
from tqdm import tqdm  # plain text bars: no widget (and no IProgress warning) in notebooks

from crewlib.citations import CitationCheck, check_citations, find_citation_keys
from crewlib.eval import marwg_metrics, rwgbench
from crewlib.eval.examples import EvalExample
from crewlib.eval.llm_metrics import (
    CREW_DIMENSIONS,
    NLI_VALUE,
    RWGBENCH_DIMENSIONS,
    TQ_DIMENSIONS,
    AlternativeAnswer,
    FunctionAnswer,
    Judge,
    JudgeAnswer,
    NLIAnswer,
    alternative_messages,
    ask,
    function_messages,
    judge_messages,
    judges_from_params,
    nli_messages,
    parallel,
    rwgbench_judge_messages,
)
from crewlib.eval.relating import relating_scores
from crewlib.eval.section_measures import (
    citation_content,
    cited_support,
    copied_sentences,
    local_coherence,
    number_support,
    paragraphing,
    repeated_sentences,
    saturated_support,
    section_sentences,
    uncited_claims,
    voice_copies,
)
from crewlib.eval.text_metrics import BERTSCORE_LABEL, bertscore, rouge
from crewlib.llm import Caller, Ledger
from crewlib.schema import Params
from crewlib.sections import OutputChecks, is_truncated
from crewlib.text import sentences, strip_markers

REFERENCE_METRICS = ("citation", "rouge", "bertscore", "soft_recall_cosine", "topical_relevance", "pss", "sn",
                     "grounding", "cost")
LLM_METRICS = ("judge", "rwgbench_judge", "tq", "soft_recall", "claim_support", "frame_alignment")
COST_COLUMNS = ("prompt_tokens", "completion_tokens", "calls", "wall_s")


class Unavailable(Exception):
    """A metric (raised: its whole group; returned as a value: that metric) cannot be computed; the message says why."""


@dataclass
class Item:
    system: str
    example: EvalExample
    text: str
    key_to_id: Mapping[str, str]
    cost: dict = field(default_factory=dict)

    @cached_property
    def check(self) -> CitationCheck:
        return check_citations(self.text, self.key_to_id, self.example.citation_style)

    @property
    def cited_with_repeats(self) -> list[str]:
        return [self.key_to_id[k] for k in find_citation_keys(self.text, self.example.citation_style)
                if k in self.key_to_id]


class Evaluator:
    """Scores outputs; holds the judges, an embedding cache and the records of the last run."""

    def __init__(self, params: Params, *, judges: Sequence[Judge] | None = None, ledger: Ledger | None = None) -> None:
        """``params``: the run's settings (``eval`` block: thresholds, retries, workers; ``output``: the checks
        ``grounding`` counts; ``eval.judges``: the judges, unless ``judges`` are given)."""
        self.params = params
        self.settings = params.eval
        self.ledger = ledger or Ledger()
        self._judges = list(judges) if judges is not None else None
        self._vectors: dict[str, np.ndarray] = {}
        self._gold_functions: dict[str, list[str]] = {}
        self.groups: dict[str, Callable[[Item], dict[str, float]]] = {
            "citation": self._citation, "rouge": self._rouge, "soft_recall_cosine": self._soft_recall_cosine,
            "topical_relevance": self._topical_relevance, "pss": self._pss, "sn": self._sn, "cost": self._cost,
            "grounding": self._grounding, "relating": self._relating,
            "judge": self._judge, "rwgbench_judge": self._rwgbench_judge, "tq": self._tq,
            "soft_recall": self._soft_recall, "claim_support": self._claim_support,
            "frame_alignment": self._frame_alignment,
        }
        self.missing: list[dict] = []
        self.judgements: list[dict] = []

    # ------------------------------------------------------------------ entry point
    @property
    def judges(self) -> list[Judge]:
        if self._judges is None:
            self._judges = judges_from_params(self.params, ledger=self.ledger)
        return self._judges

    def score(self, outputs: pd.DataFrame | Iterable[Mapping],
              examples: Mapping[str, EvalExample] | Iterable[EvalExample],
              metrics: Sequence[str] = REFERENCE_METRICS, *, progress: bool = True) -> pd.DataFrame:
        """Tidy scores ``system, example, metric, value`` of every output on the metric groups named."""
        unknown = [m for m in metrics if m not in self.groups and m != "bertscore"]
        if unknown:
            raise ValueError(f"unknown metric groups {unknown}; known: {sorted([*self.groups, 'bertscore'])}")
        items, unavailable = self._items(outputs, examples)
        rows: list[dict] = []
        timing: dict[str, float] = {}
        self.missing, self.judgements = [], []
        bar = tqdm(total=len(metrics) * len(items), desc="scoring", disable=not progress)
        for group in metrics:
            t0 = time.perf_counter()
            if group == "bertscore":  # one batched model pass over every pair
                results = self._bertscore(items)
                bar.update(len(items))
            else:
                fn = self.groups[group]
                results = []
                for item in items:
                    try:
                        results.append(fn(item))
                    except Unavailable as exc:
                        results.append(exc)
                    bar.update(1)
            for item, result in zip(items, results, strict=True):
                where = {"system": item.system, "example": item.example.example_id, "group": group}
                if isinstance(result, Unavailable):
                    unavailable.append({**where, "metric": "*", "reason": str(result)})
                    continue
                for name, value in result.items():
                    if isinstance(value, Unavailable):  # one metric of the group: counted, never a number
                        unavailable.append({**where, "metric": name, "reason": str(value)})
                    else:
                        rows.append({"system": item.system, "example": item.example.example_id, "metric": name,
                                     "value": float(value)})
            timing[group] = time.perf_counter() - t0
        bar.close()
        frame = pd.DataFrame(rows, columns=["system", "example", "metric", "value"])
        frame.attrs.update(timing_s=timing, unavailable=unavailable, missing=list(self.missing),
                           judgements=list(self.judgements), labels={"bertscore_minilm": BERTSCORE_LABEL})
        return frame

    def _items(self, outputs, examples) -> tuple[list[Item], list[dict]]:
        by_id = dict(examples) if isinstance(examples, Mapping) else {e.example_id: e for e in examples}
        records = outputs.to_dict("records") if isinstance(outputs, pd.DataFrame) else [dict(r) for r in outputs]
        items, unavailable = [], []
        for row in records:
            for column in ("system", "example", "text"):
                if column not in row:
                    raise ValueError(f"an output row has no {column!r} column: {sorted(row)}")
            example = by_id.get(str(row["example"]))
            if example is None:
                raise ValueError(f"output of {row['system']!r} for unknown example {row['example']!r}")
            text = row["text"] if isinstance(row["text"], str) else ""
            if not text.strip():
                # An unavailable system (e.g. PRIMERA offline) or an empty generation: no metric for it.
                reason = row.get("error") or "no output"
                unavailable.append({"system": row["system"], "example": example.example_id, "group": "*",
                                    "metric": "*", "reason": str(reason)})
                continue
            key_to_id = row.get("key_to_id")
            key_to_id = dict(key_to_id) if isinstance(key_to_id, Mapping) else dict(example.default_keys)
            cost = {c: float(row[c]) for c in COST_COLUMNS if c in row and pd.notna(row[c])}
            items.append(Item(str(row["system"]), example, text, key_to_id, cost))
        return items, unavailable

    # ------------------------------------------------------------------ embeddings
    def _embed(self, texts: Sequence[str]) -> np.ndarray:
        from crewlib.relevance import embed

        todo = [t for t in dict.fromkeys(texts) if t not in self._vectors]
        if todo:
            self._vectors.update(zip(todo, embed(todo), strict=True))
        return np.array([self._vectors[t] for t in texts])

    def _cosine(self, texts: Mapping[str, str], missing: float) -> Callable[[str, str], float]:
        """MiniLM cosine between two ids' ``texts`` (embedded once); ``missing`` for an id without one."""
        vectors = dict(zip(texts, self._embed(list(texts.values())), strict=True))
        return lambda a, b: float(vectors[a] @ vectors[b]) if a in vectors and b in vectors else missing

    # ------------------------------------------------------------------ reference-based groups
    def _citation(self, item: Item) -> dict[str, float | Unavailable]:
        check, ex = item.check, item.example
        no_gold = Unavailable("the example has no gold cited ids")
        out: dict[str, float | Unavailable] = {
            "citation_verification": check.resolved / check.citations if check.citations
            else Unavailable("the text has no citation to verify"),
            "citation_markers": check.markers, "stray_citations": len(check.stray),
        }
        per_sentence = [ids for _, ids in rwgbench.citing_sentences(item.text, item.key_to_id, ex.citation_style)]
        out["cc"] = marwg_metrics.citation_count(per_sentence) if per_sentence else Unavailable("no sentence cites")
        if ex.gold_cited_ids:
            out["rc"] = marwg_metrics.reference_coverage(check.cited_ids, ex.gold_cited_ids)
            out["citation_precision"] = rwgbench.citation_precision(check.cited_ids, ex.gold_cited_ids)
            out["citation_recall"] = rwgbench.citation_recall(check.cited_ids, ex.gold_cited_ids)
        else:
            out.update(rc=no_gold, citation_precision=no_gold, citation_recall=no_gold)
        if ex.gold_cited_ids and ex.gold.strip():
            gold_density = rwgbench.citation_density(len(ex.gold_cited_ids), ex.gold)
            density = rwgbench.citation_density(len(check.cited_ids), item.text)
            out["citation_density_ratio"] = density / gold_density
        else:
            out["citation_density_ratio"] = Unavailable("the example has no gold section or gold cited ids")
        out["citation_balance"] = (rwgbench.citation_balance(item.cited_with_repeats) if check.cited_ids
                                   else Unavailable("the text cites no known reference"))
        return out

    def _need_gold(self, item: Item) -> str:
        if not item.example.gold.strip():
            raise Unavailable("the example has no gold section")
        return item.example.gold

    def _rouge(self, item: Item) -> dict[str, float]:
        return rouge(strip_markers(item.text), strip_markers(self._need_gold(item)))

    def _bertscore(self, items: list[Item]) -> list[dict | Unavailable]:
        usable = [i for i in items if i.example.gold.strip()]
        scores = iter(bertscore([strip_markers(i.text) for i in usable],
                                [strip_markers(i.example.gold) for i in usable]))
        no_gold = Unavailable("the example has no gold section")
        return [next(scores) if i.example.gold.strip() else no_gold for i in items]

    def _soft_recall_cosine(self, item: Item) -> dict[str, float]:
        ex = item.example
        if not ex.gold_cited_ids:
            raise Unavailable("the example has no gold cited ids")
        if not ex.has_reference_texts:
            raise Unavailable("the references have no titles or abstracts to compare")
        refs = ex.reference_by_id
        ids = [i for i in dict.fromkeys([*ex.gold_cited_ids, *item.check.cited_ids]) if i in refs]
        similarity = self._cosine({i: refs[i].text for i in ids}, missing=0.0)
        return {"soft_recall_cosine": rwgbench.soft_recall_cosine(item.check.cited_ids, ex.gold_cited_ids, similarity,
                                                                  self.settings.soft_recall_threshold)}

    def _topical_relevance(self, item: Item) -> dict[str, float]:
        ex = item.example
        if not ex.target_abstract.strip():
            raise Unavailable("the example has no target abstract")
        refs = ex.reference_by_id
        cited = [refs[i].text for i in item.check.cited_ids if i in refs and (refs[i].title or refs[i].abstract)]
        if not cited:
            raise Unavailable("the text cites no reference with a title or abstract")
        vectors = self._embed([*cited, ex.target_abstract])
        return {"topical_relevance": rwgbench.topical_relevance(vectors[:-1], vectors[-1])}

    def _block_similarity(self, a: Sequence[str], b: Sequence[str]) -> np.ndarray:
        return self._embed([strip_markers(x) for x in a]) @ self._embed([strip_markers(x) for x in b]).T

    def _pss(self, item: Item) -> dict[str, float]:
        gold = self._need_gold(item)
        return {"pss": rwgbench.positioning_structure_similarity(rwgbench.blocks(item.text), rwgbench.blocks(gold),
                                                                 self._block_similarity)}

    def _sn(self, item: Item) -> dict[str, float]:
        gold = self._need_gold(item)
        cand = [strip_markers(s) for s in sentences(item.text)]
        ref = [strip_markers(s) for s in sentences(gold)]
        return marwg_metrics.sentence_matching(self._embed(cand) if cand else np.zeros((0, 1)),
                                       self._embed(ref) if ref else np.zeros((0, 1)), self.settings.sn_threshold)

    def _grounding(self, item: Item) -> dict[str, float | Unavailable]:
        """Measures of the text alone (coherence, paragraphing, a cut end, repeated sentences, uncited claims),
        and, where the cited works' titles or abstracts are known, of the text against them (docs/method.md,
        "Grounding")."""
        ex = item.example
        checks = OutputChecks.from_params(self.params)
        n = max(len(section_sentences(item.text)), 1)
        coherence = local_coherence(item.text)
        structure = paragraphing(item.text, self.settings.paragraph_sentences)
        out: dict[str, float | Unavailable] = {
            "coherence": coherence if coherence is not None else Unavailable("no paragraph holds two sentences"),
            "truncated": float(is_truncated(item.text)),
            "paragraphing": structure if structure is not None else Unavailable("the text is empty"),
            "repeated_sentences_rate": repeated_sentences(item.text, checks.sentence_threshold) / n,
            "uncited_claims_rate": uncited_claims(item.text, ex.target_title) / n}
        refs = ex.reference_by_id
        sources = {k: refs[i].text for k, i in item.key_to_id.items() if i in refs and refs[i].text}
        if not sources:
            missing = Unavailable("the references have no titles or abstracts to compare")
            return out | dict.fromkeys(("supported_share", "support", "number_support", "copied_sentences_rate",
                                        "first_person_rate"), missing)
        supports = cited_support(item.text, sources)
        numbers_ = number_support(item.text, sources)
        return out | {
            "supported_share": sum(v >= checks.support_threshold for v in supports) / len(supports) if supports
            else Unavailable("no sentence cites a known reference"),
            "support": saturated_support(supports, checks.support_threshold),
            "number_support": numbers_ if numbers_ is not None
            else Unavailable("no cited sentence states a number"),
            "copied_sentences_rate": copied_sentences(item.text, sources, self.settings.copy_words) / n,
            "first_person_rate": voice_copies(item.text, sources) / n}

    def _relating(self, item: Item) -> dict[str, float | Unavailable]:
        """Positioning, synthesis, theme coherence and content per citation (crewlib.eval.relating), the works'
        titles and abstracts as their texts, the paper's abstract and introduction (where known) as its text; and
        ``citation_content``, content per citation on [0, 1] (``eval.citation_content_words``)."""
        ex = item.example
        id_to_key = {v: k for k, v in item.key_to_id.items()}
        works = {id_to_key[r.ref_id]: r.text for r in ex.references if r.ref_id in id_to_key and r.text}
        paper = "\n\n".join(t for t in (ex.target_abstract, ex.target_introduction) if t.strip())
        scores = relating_scores(item.text, ex.target_title, paper, works, self.params.output.support_threshold,
                                 self.settings.paragraph_sentences)
        scores["citation_content"] = citation_content(item.text, self.settings.citation_content_words)
        return {name: Unavailable(f"{name} is undefined for this text") if value is None else value
                for name, value in scores.items()}

    def _cost(self, item: Item) -> dict[str, float]:
        if not item.cost:
            raise Unavailable(f"the output row has none of the cost columns {COST_COLUMNS}")
        return dict(item.cost)

    # ------------------------------------------------------------------ LLM groups
    def _judge_messages(self, item: Item, dimension: str) -> list[dict]:
        """CREW's and MA-RWG's rubric prompt, which lists the papers the section may cite."""
        ex = item.example
        id_to_key = {v: k for k, v in item.key_to_id.items()}
        listing = "\n".join(f"[{id_to_key.get(r.ref_id, r.ref_id)}] {r.title or '(no title)'}" for r in ex.references)
        return judge_messages(dimension, title=ex.target_title or "(not given)", abstract=ex.target_abstract,
                              references=listing or "(not given)", text=item.text)

    def _judge_dimensions(self, item: Item, dimensions: Sequence[str], caller_role: str,
                          build: Callable[[Item, str], list[dict]] | None = None) -> dict[str, float]:
        ex = item.example
        messages = {d: (build or self._judge_messages)(item, d) for d in dimensions}
        jobs = [(judge, d) for judge in self.judges for d in dimensions]

        def run(job):
            judge, dim = job
            return ask(judge.client, messages[dim], JudgeAnswer, retries=self.settings.judge_retries,
                       caller=Caller("judge", f"{caller_role}:{dim}"), max_tokens=self.settings.judge_max_tokens)

        scores: dict[str, list[float]] = {d: [] for d in dimensions}
        for (judge, dim), asked in zip(jobs, parallel(run, jobs, self.settings.workers), strict=True):
            base = {"system": item.system, "example": ex.example_id, "judge": judge.name, "dimension": dim}
            if asked.parsed is None:
                self.missing.append({**base, "metric": caller_role, "reason": asked.reason})
                continue
            scores[dim].append(asked.parsed.score)
            self.judgements.append({**base, "score": asked.parsed.score, "rationale": asked.parsed.rationale})
        return {d: float(np.mean(v)) for d, v in scores.items() if v}

    def _rubric_scores(self, item: Item, dimensions: Sequence[str], prefix: str, total: str,
                       build: Callable[[Item, str], list[dict]] | None = None) -> dict[str, float]:
        """``<prefix>_<dimension>`` means over the judges, and ``total`` only from a complete set of dimensions."""
        means = self._judge_dimensions(item, dimensions, prefix, build)
        if not means:
            raise Unavailable("every judgement is missing (see attrs['missing'])")
        out = {f"{prefix}_{d}": v for d, v in means.items()}
        if len(means) == len(dimensions):
            out[total] = float(np.mean(list(means.values())))
        return out

    def _judge(self, item: Item) -> dict[str, float]:
        return self._rubric_scores(item, CREW_DIMENSIONS, "judge", "judge_overall")

    def _rwgbench_judge(self, item: Item) -> dict[str, float]:
        """RWGBench's judge score: its four dimensions with their own prompt; the mean only when all four came."""
        ex = item.example

        def build(it: Item, dimension: str) -> list[dict]:
            return rwgbench_judge_messages(dimension, title=ex.target_title or "(not given)",
                                           abstract=ex.target_abstract, text=it.text)

        means = self._judge_dimensions(item, RWGBENCH_DIMENSIONS, "rwgbench_judge", build)
        if not means:
            raise Unavailable("every judgement is missing (see attrs['missing'])")
        out = {f"rwgbench_judge_{d}": v for d, v in means.items()}
        if len(means) == len(RWGBENCH_DIMENSIONS):
            out["rwgbench_judge_score"] = rwgbench.judge_score(means)
        return out

    def _tq(self, item: Item) -> dict[str, float]:
        return self._rubric_scores(item, TQ_DIMENSIONS, "tq", "tq")

    def _labeller(self):
        return self.judges[0].client  # the NLI / citation-function labeller: the first judge

    def _soft_recall(self, item: Item) -> dict[str, float | Unavailable]:
        """RWGBench soft recall: each gold paper the text does not cite, paired with a cited non-gold paper
        (:func:`~crewlib.eval.rwgbench.alternative_pairs`), is judged on the two titles and abstracts (see
        :mod:`crewlib.eval.rwgbench`); a missing judgement is counted and earns no credit."""
        ex = item.example
        if not ex.gold_cited_ids:
            raise Unavailable("the example has no gold cited ids")
        refs = ex.reference_by_id
        cited = item.check.cited_ids  # none: no pair, the soft recall is 0 as the hard one
        ids = [i for i in dict.fromkeys([*ex.gold_cited_ids, *cited]) if i in refs and refs[i].text]
        similarity = self._cosine({i: refs[i].text for i in ids}, missing=-1.0)
        pairs = [(g, a) for g, a, score in rwgbench.alternative_pairs(cited, ex.gold_cited_ids, similarity, -0.5)]
        pairs = pairs[: self.settings.soft_recall_max_pairs]  # papers without a text (-1) are never paired
        client = self._labeller()

        def run(pair: tuple[str, str]):
            gold, alternative = pair
            return ask(client, alternative_messages(title=ex.target_title or "(not given)", cited=refs[gold].text,
                                                    alternative=refs[alternative].text), AlternativeAnswer,
                       caller=Caller("judge", "alternative"), retries=self.settings.judge_retries, max_tokens=90)

        compatible, missing = 0, 0
        for (gold, alternative), asked in zip(pairs, parallel(run, pairs, self.settings.workers), strict=True):
            if asked.parsed is None:
                missing += 1
                self.missing.append({"system": item.system, "example": ex.example_id, "judge": "alternative",
                                     "dimension": f"{gold}/{alternative}", "metric": "soft_recall",
                                     "reason": asked.reason})
            else:
                compatible += asked.parsed.compatible == "yes"
                self.judgements.append({"system": item.system, "example": ex.example_id, "judge": "alternative",
                                        "dimension": f"{gold}/{alternative}",
                                        "score": float(asked.parsed.compatible == "yes"),
                                        "rationale": asked.parsed.reason})
        return {"soft_recall": rwgbench.soft_recall(cited, ex.gold_cited_ids, compatible,
                                                    self.settings.soft_recall_credit),
                "soft_recall_pairs": float(len(pairs)), "soft_recall_compatible": float(compatible),
                "soft_recall_missing": float(missing)}

    def _claim_support(self, item: Item) -> dict[str, float]:
        refs = item.example.reference_by_id
        if not item.example.has_reference_texts:
            raise Unavailable("the references have no titles or abstracts to check claims against")
        cited = rwgbench.citing_sentences(item.text, item.key_to_id, item.example.citation_style)
        pairs = [(i, sentence, rid) for i, (sentence, ids) in enumerate(cited) for rid in ids if rid in refs]
        pairs = pairs[: self.settings.max_nli_pairs]
        if not pairs:
            raise Unavailable("no citing sentence cites a reference with a text")
        client = self._labeller()

        def run(pair):
            _, sentence, rid = pair
            return ask(client, nli_messages(refs[rid].text, strip_markers(sentence)), NLIAnswer,
                       caller=Caller("judge", "nli"), retries=self.settings.judge_retries, max_tokens=90)

        per_sentence: dict[int, list[str]] = {}
        labels: list[str] = []
        for (i, _, rid), asked in zip(pairs, parallel(run, pairs, self.settings.workers), strict=True):
            if asked.parsed is None:
                self.missing.append({"system": item.system, "example": item.example.example_id, "judge": "nli",
                                     "dimension": rid, "metric": "claim_support", "reason": asked.reason})
                continue
            labels.append(asked.parsed.label)
            per_sentence.setdefault(i, []).append(asked.parsed.label)
        if not labels:
            raise Unavailable("every NLI label is missing (see attrs['missing'])")
        return {"claim_support": float(np.mean([NLI_VALUE[label] for label in labels])),
                "clap": marwg_metrics.claim_precision(list(per_sentence.values())),
                "citp": marwg_metrics.citation_precision_nli(labels), "nli_pairs": float(len(labels))}

    def _functions(self, sentences_: Sequence[str], who: tuple[str, str]) -> list[str]:
        """The citation function of each sentence (one call each); a missing label is counted, not guessed."""
        sentences_ = list(sentences_)[: self.settings.max_function_sentences]
        client = self._labeller()

        def run(sentence: str):
            return ask(client, function_messages(strip_markers(sentence)), FunctionAnswer,
                       caller=Caller("judge", "citation_function"), retries=self.settings.judge_retries,
                       max_tokens=30)

        labels = []
        for i, asked in enumerate(parallel(run, sentences_, self.settings.workers)):
            if asked.parsed is None:
                self.missing.append({"system": who[0], "example": who[1], "judge": "functions", "dimension": str(i),
                                     "metric": "frame_alignment", "reason": asked.reason})
            else:
                labels.append(asked.parsed.function)
        return labels

    def _frame_alignment(self, item: Item) -> dict[str, float]:
        ex = item.example
        gold = self._need_gold(item)
        mine = [s for s, _ in rwgbench.citing_sentences(item.text, item.key_to_id, ex.citation_style)]
        if not mine:
            raise Unavailable("the output has no citing sentence")
        if ex.example_id not in self._gold_functions:
            gold_cited = [s for s, _ in rwgbench.citing_sentences(gold, ex.default_keys, ex.citation_style)]
            # A gold section stored without citation markers (OARelatedWork): every sentence counts.
            self._gold_functions[ex.example_id] = self._functions(gold_cited or sentences(gold),
                                                                  ("gold", ex.example_id))
        gold_labels = self._gold_functions[ex.example_id]
        labels = self._functions(mine, (item.system, ex.example_id))
        if not gold_labels or not labels:
            raise Unavailable("citation functions could not be labelled (see attrs['missing'])")
        return {"frame_alignment": rwgbench.frame_alignment(labels, gold_labels)}


def summarise(scores: pd.DataFrame) -> pd.DataFrame:
    """Mean, standard deviation and count per system × metric (rows: system, columns: metric)."""
    return scores.groupby(["system", "metric"])["value"].agg(["mean", "std", "count"]).reset_index()
