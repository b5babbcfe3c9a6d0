"""Long-document summarisers: SQ2E and its baselines, Direct Generation and HERA (docs/method.md, "SQ2E").

Each is built from params (the ``sq2e`` block) and an :class:`~crewlib.llm.LLMClient` — the same
client, cache and ledger as every other system — and turns a :class:`LongDocument` into a
:class:`~crewlib.baselines.base.Generation` (no citation keys) whose ``notes`` say what it did:
SQ2E's whole questioning trace, DG's cut, HERA's topics.

- **DG**: one prompt with the document, cut to the context (the cut is recorded in ``notes``).
- **HERA**: the document in segments, grouped by topic (Ward clustering of their MiniLM embeddings
  into one topic per ``segments_per_topic`` segments, at least 2, at most ``max_topics``), the topics
  reordered by where each first appears with their segments in document order, each topic
  summarised, the topic summaries aggregated.
- **SQ2E**: a local summary per part of each section, aggregated; then per round the Expert plans up
  to ``expert_questions`` content questions from the bank and the Writer answers each from the
  relevant parts (:mod:`.evidence`) and names what the summary lacks, revising when it names
  something; the Evaluator sees the previous and the revised summary in a seeded shuffled order
  (recorded) and keeps the better; then
  the Editor does the same with up to ``editor_questions`` yes/no questions ("yes" → revise, "no" →
  no change). A *valid* question is one whose revision the Evaluator kept.

An answer that stays invalid after the client's re-ask is a counted fallback (``fallbacks``), never
a crash: a plan falls back to the bank's first questions, an answer or a verdict to no change.
"""

from __future__ import annotations

import random
import re
import time
from collections import Counter
from typing import ClassVar

import numpy as np
import pydantic

from crewlib import prompts
from crewlib.baselines.base import Generation
from crewlib.data.records import LongDocument
from crewlib.llm import Caller, ChatRequest, LLMClient, OutputValidationError
from crewlib.schema import Params
from crewlib.sq2e.bank import BANKS, Question, bank_lines
from crewlib.sq2e.evidence import Part, document_parts, select_parts, show
from crewlib.text import approx_tokens, fit_words

ROLES = ("expert", "editor")


class Plan(pydantic.BaseModel):
    questions: list[str]


class ExpertAnswer(pydantic.BaseModel):
    answer: str
    missing: str = ""  # what the summary lacks or gets wrong; "" when nothing (asked concretely: a boolean
    #                    "does your answer show a gap?" was answered false to all 5 questions by the 1.5B)

    @property
    def gap(self) -> bool:
        text = self.missing.strip().strip(".").lower()
        return bool(text) and text not in {"none", "nothing", "n/a", "no", "nothing is missing"}


class EditorAnswer(pydantic.BaseModel):
    answer: str  # "yes" or "no"; not a Literal: its schema example "yes | no" was copied by the 1.5B
    explanation: str = ""

    @pydantic.field_validator("answer")
    @classmethod
    def _yes_or_no(cls, value: str) -> str:
        value = value.strip().strip(".").lower()
        if value not in ("yes", "no"):
            raise ValueError(f'answer must be exactly "yes" or "no", not {value!r}')
        return value


class Verdict(pydantic.BaseModel):
    reason: str = ""
    better: str  # "A" or "B"; not a Literal: the schema example then showed "A | B", which the 1.5B copied

    @pydantic.field_validator("better")
    @classmethod
    def _a_or_b(cls, value: str) -> str:
        value = value.strip().strip(".").removeprefix("Summary ").strip().upper()
        if value not in ("A", "B"):
            raise ValueError(f'better must be exactly "A" or "B", not {value!r}')
        return value


_LABEL = re.compile(r"^\s*(#+\s*.*|\*\*[^*]{0,80}\*\*:?|(here is|here's|below is)?[^.!?\n]{0,60}"
                    r"(summary|abstract)[^.!?\n]{0,30}:)\s*$", re.IGNORECASE)


def summary_text(answer: str, title: str = "") -> str:
    """A written answer as summary text: leading headings, labels ("Revised summary:", "## Summary",
    "**Abstract**") and a first line that only repeats the document's ``title`` dropped, lines joined."""
    lines = [line.strip() for line in answer.strip().splitlines() if line.strip()]
    bare = title.strip().strip("*#. ").lower()
    while len(lines) > 1 and (_LABEL.match(lines[0]) or (bare and lines[0].strip("*#. ").lower() == bare)):
        lines.pop(0)
    if lines and (m := re.match(r"^(?:revised |updated |final )?summary:\s*", lines[0], re.IGNORECASE)):
        lines[0] = lines[0][m.end():]
    return " ".join(lines).strip()


class Summariser:
    """Base class: subclasses set ``name`` and implement :meth:`_summarise` → (text, notes)."""

    name: ClassVar[str] = "summariser"

    def __init__(self, params: Params, client: LLMClient) -> None:
        if client is None:
            raise ValueError(f"{self.name} needs an LLM client (crewlib.llm.connect(params))")
        self.params = params
        self.settings = self.params.sq2e
        self.client = client
        self.fallbacks: Counter = Counter()

    @property
    def words(self) -> int:
        return int(self.settings.summary_words)

    @property
    def section_words(self) -> int:
        return int(self.settings.section_summary_words)

    @staticmethod
    def limit(words: int) -> dict:
        """A prompt's length fields: the word limit and a sentence count (a small model keeps a sentence count
        better than a word count)."""
        return {"words": words, "sentences": max(2, round(words / 25))}

    def max_tokens(self, kind: str) -> int:
        return int(getattr(self.settings.max_tokens, kind))

    def summarise(self, doc: LongDocument) -> Generation:
        """The summary of ``doc``; its LLM calls, counted fallbacks and notes are on the result."""
        mark = self.client.ledger.mark()
        self.fallbacks = Counter()
        t0 = time.perf_counter()
        text, notes = self._summarise(doc)
        generation = Generation(self.name, doc.id, text.strip(), {}, notes=notes, fallbacks=self.fallbacks)
        generation.wall_s = time.perf_counter() - t0
        generation.records = self.client.ledger.since(mark)
        return generation

    def _summarise(self, doc: LongDocument) -> tuple[str, dict]:
        raise NotImplementedError

    # ------------------------------------------------------------------ calls
    def _request(self, prompt: str, role: str, kind: str, schema=None) -> ChatRequest:
        messages = [{"role": "system", "content": prompts.SUMMARY_WRITER_SYSTEM}, {"role": "user", "content": prompt}]
        return ChatRequest(messages, caller=Caller(self.name, role), max_tokens=self.max_tokens(kind), schema=schema,
                           prompt_version=prompts.PROMPT_VERSION)

    def fit(self, text: str, words: int) -> str:
        """A written text within its word limit: cut at whole sentences, counted (``summary_cut``).

        The 1.5B overruns a word limit (an aggregate of 400 tokens copied its part summaries and stopped
        mid-sentence), and a longer summary would win ROUGE recall and the Evaluator's "more complete"."""
        fitted, cut = fit_words(text, words)
        if cut:
            self.fallbacks["summary_cut"] += 1
        return fitted

    def write(self, prompt: str, role: str, kind: str = "summary", title: str = "", words: int | None = None) -> str:
        """The summary written for ``prompt``, within ``words`` (default ``summary_words``)."""
        return self.fit(summary_text(self.client.run(self._request(prompt, role, kind)).content, title),
                        words or self.words)

    def write_all(self, prompts_: list[str], role: str, kind: str, words: int) -> list[str]:
        """Independent prompts answered concurrently (``llm.concurrency``), in order, each within ``words``."""
        return [self.fit(summary_text(r.content), words)
                for r in self.client.batch([self._request(p, role, kind) for p in prompts_])]

    def ask_json(self, prompt: str, role: str, kind: str, schema, fallback: str):
        """The parsed answer, or None with ``fallback`` counted when it stays invalid after the re-ask."""
        try:
            return self.client.run(self._request(prompt, role, kind, schema)).parsed
        except OutputValidationError:
            self.fallbacks[fallback] += 1
            return None

    def aggregate(self, doc: LongDocument, summaries: list[tuple[str, str]], words: int) -> str:
        parts = "\n".join(f"- [{name}] {text}" for name, text in summaries)
        return self.write(prompts.AGGREGATE_SUMMARY.format(title=doc.title or "(untitled)", parts=parts,
                                                           **self.limit(words)), "writer", title=doc.title,
                          words=words)


class DirectGeneration(Summariser):
    """One prompt with the document, cut to the model's context; the cut is recorded in ``notes``."""

    name = "dg"

    @property
    def context_tokens(self) -> int:
        from crewlib.baselines.single import context_tokens

        return context_tokens(self.params, self.settings.dg.context_tokens, "dg: set sq2e.dg.context_tokens")

    def _summarise(self, doc: LongDocument) -> tuple[str, dict]:
        parts = document_parts(doc, int(self.settings.part_words))
        shell = prompts.DIRECT_SUMMARY.format(title=doc.title or "(untitled)", text="", **self.limit(self.words))
        # approx_tokens counts 4 characters a token; a tokenizer may count more, so a tenth of the room is kept free
        room = int(0.9 * (self.context_tokens - self.max_tokens("summary")
                          - approx_tokens(shell + prompts.SUMMARY_WRITER_SYSTEM)))
        kept: list[Part] = []
        for part in parts:
            if approx_tokens(show([*kept, part])) > room:
                break
            kept.append(part)
        if not kept:
            raise ValueError(f"dg: no part of document {doc.id} fits in {self.context_tokens} context tokens")
        text = self.write(prompts.DIRECT_SUMMARY.format(title=doc.title or "(untitled)", text=show(kept),
                                                        **self.limit(self.words)), "writer", title=doc.title)
        total = sum(p.words for p in parts)
        shown = sum(p.words for p in kept)
        return text, {"words_total": total, "words_shown": shown, "truncated": shown < total,
                      "context_tokens": self.context_tokens}


def group_segments(embeddings: np.ndarray, n_topics: int) -> list[list[int]]:
    """HERA's topics: segment indices grouped, topics ordered by first appearance, segments in document order.

    Ward agglomerative clustering of the unit-length embeddings into ``n_topics`` (at most one per
    segment). A greedy threshold on centroid similarity, tried first, put 13 to 17 of a sample
    document's segments in one topic: the MiniLM embeddings of one paper's segments are all alike.
    """
    n = len(embeddings)
    if n == 0:
        return []
    k = max(1, min(n_topics, n))
    if k == 1:
        return [list(range(n))]
    from sklearn.cluster import AgglomerativeClustering

    unit = embeddings / np.maximum(np.linalg.norm(embeddings, axis=1, keepdims=True), 1e-12)
    labels = AgglomerativeClustering(n_clusters=k, linkage="ward").fit_predict(unit)
    order = list(dict.fromkeys(int(label) for label in labels))
    return [[i for i in range(n) if labels[i] == label] for label in order]


class HERA(Summariser):
    """Segment, group by topic, reorder, summarise each topic, aggregate."""

    name = "hera"

    def _summarise(self, doc: LongDocument) -> tuple[str, dict]:
        from crewlib.relevance import embed

        hera = self.settings.hera
        segments = document_parts(doc, int(hera.segment_words))
        n_topics = min(int(hera.max_topics), max(2, -(-len(segments) // int(hera.segments_per_topic))))
        topics = group_segments(embed([s.text for s in segments]), n_topics)
        groups: list[tuple[str, list[Part]]] = []
        for n, topic in enumerate(topics, start=1):
            chunk: list[Part] = []
            for part in (segments[i] for i in topic):  # a large topic is summarised in pieces of group_words
                if chunk and sum(p.words for p in chunk) + part.words > int(hera.group_words):
                    groups.append((f"topic {n}", chunk))
                    chunk = []
                chunk.append(part)
            groups.append((f"topic {n}", chunk))
        texts = self.write_all([prompts.HERA_TOPIC_SUMMARY.format(title=doc.title or "(untitled)", text=show(chunk),
                                                                  **self.limit(self.section_words))
                                for _, chunk in groups], "topic writer", "section",
                               self.section_words)
        summary = self.aggregate(doc, [(name, text) for (name, _), text in zip(groups, texts, strict=True)], self.words)
        order = [i for topic in topics for i in topic]  # the segments as the summaries read them
        notes = {"segments": len(segments), "topics": topics, "reordered": order != sorted(order)}
        return summary, notes


class SQ2E(Summariser):
    """Expert–editor stepwise questioning (module docstring)."""

    name = "sq2e"

    def _summarise(self, doc: LongDocument) -> tuple[str, dict]:
        parts = document_parts(doc, int(self.settings.part_words))
        if not parts:
            raise ValueError(f"sq2e: document {doc.id} has no text")
        title = doc.title or "(untitled)"
        names = [p.section + (f" (part {k})" if k > 1 else "") for p, k in _numbered(parts)]
        local = self.write_all([prompts.SECTION_SUMMARY.format(title=title, name=name, text=p.text,
                                                               **self.limit(self.section_words))
                                for p, name in zip(parts, names, strict=True)], "section writer", "section",
                               self.section_words)
        # the initial summary leaves room for what the questions add: a revision is cut at summary_words, and the
        # 1.5B revises by appending, so a revision of a full-length summary was cut back to the summary itself
        summary = initial = self.aggregate(doc, list(zip(names, local, strict=True)),
                                           int(self.settings.initial_words))
        steps: list[dict] = []
        for round_ in range(int(self.settings.rounds)):
            for role in ROLES:
                for question in self.plan(role, summary, title):
                    step = self.step(doc, parts, role, question, summary, round_)
                    steps.append(step)
                    if step["kept"] == "revised":
                        summary = step["revised"]
        valid = Counter(s["role"] for s in steps if s["valid"])
        asked = Counter(s["role"] for s in steps)
        notes = {"initial": initial, "section_summaries": dict(zip(names, local, strict=True)), "steps": steps,
                 "asked": {r: asked[r] for r in ROLES}, "valid": {r: valid[r] for r in ROLES}}
        return summary, notes

    def plan(self, role: str, summary: str, title: str) -> list[Question]:
        """The role's questions, in its chosen order: known ids, no repeats, at most the role's limit."""
        bank = BANKS[role]
        n = int(getattr(self.settings, f"{role}_questions"))
        if n == 0:  # the role is switched off (an ablation): no plan, no call
            return []
        kind = "content questions" if role == "expert" else "yes/no questions; \"yes\" means a problem to fix"
        prompt = prompts.QUESTION_PLAN.format(role=role, title_part=f' ("{title}")', summary=summary, kind=kind,
                                              bank=bank_lines(bank), n=n)
        answer = self.ask_json(prompt, role, "plan", Plan, "plan_invalid")
        by_id = {q.id.upper(): q for q in bank}
        chosen: list[Question] = []
        for raw in answer.questions if answer else []:
            q = by_id.get(str(raw).strip().upper())
            if q is None:
                self.fallbacks["plan_unknown_id"] += 1
            elif q not in chosen and len(chosen) < n:
                chosen.append(q)
        if not chosen:  # no usable plan: the bank's first questions, counted
            self.fallbacks["plan_default"] += 1
            chosen = list(bank[:n])
        return chosen

    def step(self, doc: LongDocument, parts: list[Part], role: str, question: Question, summary: str,
             round_: int) -> dict:
        """One question: the answer, a revision when it calls for one, the Evaluator's verdict."""
        title = doc.title or "(untitled)"
        evidence = show(select_parts(parts, f"{question.text} {summary}", int(self.settings.evidence_words)))
        step = {"round": round_, "role": role, "question": question.id, "text": question.text, "answer": None,
                "revise": False, "revised": None, "shown": None, "verdict": None, "kept": "previous", "valid": False}
        if role == "expert":
            reply = self.ask_json(prompts.EXPERT_ANSWER.format(title=title, evidence=evidence, summary=summary,
                                                               question=question.text),
                                  "writer", "answer", ExpertAnswer, "answer_invalid")
            if reply is not None:
                gap = reply.gap
                if gap and _echoes(reply.missing, question.text):  # "missing" copied the prompt: no gap named
                    self.fallbacks["answer_echoes_question"] += 1
                    gap = False
                step["answer"] = reply.answer + (f" Missing: {reply.missing.strip()}" if gap else "")
                step["revise"] = gap
                change = reply.missing.strip()
        else:
            reply = self.ask_json(prompts.EDITOR_ANSWER.format(title=title, evidence=evidence, summary=summary,
                                                               question=question.text),
                                  "writer", "answer", EditorAnswer, "answer_invalid")
            if reply is not None:
                step["answer"] = f"{reply.answer}: {reply.explanation}".strip(": ")
                step["revise"] = reply.answer == "yes"
                change = reply.explanation.strip() or question.text
        if not step["revise"]:
            return step
        revised = self.write(prompts.REVISE_SUMMARY.format(title=title, evidence=evidence, summary=summary,
                                                           change=prompts.REVISE_CHANGE[role].format(answer=change),
                                                           **self.limit(self.words)), "writer")
        step["revised"] = revised
        if not revised or revised == summary:
            self.fallbacks["revision_unchanged"] += 1
            return step
        if _echoes(revised, question.text):  # the 1.5B appended "The expert asked: … The answer: …"
            self.fallbacks["revision_echoes_question"] += 1
            return step
        shown = ["previous", "revised"]
        random.Random(f"{self.settings.seed}|{doc.id}|{round_}|{role}|{question.id}").shuffle(shown)
        texts = {"previous": summary, "revised": revised}
        verdict = self.ask_json(prompts.COMPARE_SUMMARIES.format(evidence=evidence, a=texts[shown[0]],
                                                                 b=texts[shown[1]]),
                                "evaluator", "verdict", Verdict, "verdict_invalid")
        step["shown"] = shown
        if verdict is not None:
            step["verdict"] = verdict.better
            step["kept"] = shown[0] if verdict.better == "A" else shown[1]
            step["valid"] = step["kept"] == "revised"
        return step


_FRAME = re.compile(r"\b(expert|editor) ask(s|ed)?\b|\bthe answer:|as \"missing\"|with this change made")


def _echoes(text: str, question: str) -> bool:
    """Whether a text repeats the question or the prompt's frame (the 1.5B did, in answers and revisions)."""
    lowered = text.lower()
    return question.lower().rstrip("?") in lowered or bool(_FRAME.search(lowered))


def _numbered(parts: list[Part]):
    """(part, its number within its section)."""
    seen: Counter = Counter()
    for part in parts:
        seen[part.section] += 1
        yield part, seen[part.section]


SUMMARISERS: dict[str, type[Summariser]] = {cls.name: cls for cls in (DirectGeneration, HERA, SQ2E)}


def make_summariser(name: str, params: Params, client: LLMClient) -> Summariser:
    if name not in SUMMARISERS:
        raise ValueError(f"unknown summariser {name!r}; known: {sorted(SUMMARISERS)}")
    return SUMMARISERS[name](params, client)
