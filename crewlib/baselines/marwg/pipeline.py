"""MA-RWG's settings and the system that runs its stages (the pipeline of :mod:`crewlib.baselines.marwg`)."""

from __future__ import annotations

import dataclasses
import re
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np
import pydantic

from crewlib import prompts
from crewlib.baselines.base import Generation, System
from crewlib.baselines.marwg.answers import (
    DIMENSIONS,
    UNSPECIFIED,
    CorrectionOut,
    FeedbackOut,
    ParagraphOut,
    SummaryOut,
    Topic,
    VerifyOut,
)
from crewlib.baselines.marwg.outline import fallback_outline, outline_schema
from crewlib.baselines.marwg.selection import paper_pages, select_papers, top_pages
from crewlib.baselines.marwg.taxonomy import EmbedFn, TaxonomyNode, build_taxonomy, unit_rows
from crewlib.citations import find_citation_keys
from crewlib.data.records import RWGExample
from crewlib.llm import ChatRequest, LLMClient, LLMError, OutputValidationError, connect_override
from crewlib.schema import Params
from crewlib.tasks import Task
from crewlib.text import sentences


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

    def __init__(self, params: Params, client: LLMClient | None = None, *, embed_fn: EmbedFn | None = None) -> None:
        super().__init__(params, client)
        self.config = cfg = self.settings  # baselines.marwg: the constraints checked by crewlib.schema.MARWGBlock
        ledger, wording = client.ledger, params.llm.task_wording

        def second(override: dict) -> LLMClient:  # a model of its own, sharing the ledger
            return prompts.for_task(connect_override(self.params, override, ledger=ledger), wording)

        self.generator = second(cfg.generator) if cfg.generator else self.client
        # A verifier named apart from the generator is a second client (the dual-model check).
        self.verifier = second(cfg.verifier) if cfg.verifier and cfg.verifier != cfg.generator else self.generator
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
        rows = unit_rows(self.embed([task.target_text, *(r.text for r in task.references)]))
        relevance = rows[1:] @ rows[0]  # MiniLM cosine to the target's title and abstract
        chosen = select_papers(relevance, rows[1:], budget, self.config.lambda_)
        return [task.keys[i] for i in chosen]

    # ---------------------------------------------------------------- stage 2
    def pages(self, task: Task, keys: Sequence[str]) -> dict[str, list[str]]:
        """Each paper's top ``D`` pages by MiniLM cosine to the target (one embedding batch for all)."""
        cfg = self.config
        by_key = task.reference_by_key
        split = {k: paper_pages(by_key[k], cfg.page_words) for k in keys}
        rows = unit_rows(self.embed([task.target_text, *(p for k in keys for p in split[k])]))
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
                                max_tokens=getattr(self.config.max_tokens, max_tokens_key or stage)) for m in messages]
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
        levels = cfg.l_max - cfg.root_level  # levels below the dimension: the paper counts the dimension as level 1
        return {d: build_taxonomy({k: c.labels[d] for k, c in cards.items()}, d, cfg.delta, levels, self.embed,
                                  width_threshold=cfg.width_threshold, depth_step=cfg.depth_step,
                                  shape=cfg.taxonomy_shape)
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
            papers=self._papers_block(task, cards, t.keys), feedback=comments, words=words,
            aspects=prompts.MARWG_REVISE_ASPECTS if self.config.revision_aspects else ""))
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
