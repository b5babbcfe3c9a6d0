"""The parts of a long document a prompt shows (docs/method.md, "SQ2E").

A document longer than a model's context is never cut silently. It is split into *parts*: each
named section (or, without sections, the article's paragraphs) in pieces of at most
``part_words`` words, in document order. A question is answered from the parts most relevant to
it — TF-IDF cosine of each part to the question joined with the current summary (so that a
generic question such as "which results are missing?" finds the parts the summary is about and
the ones it is not) — taken best first until ``budget_words``, then shown in document order with
their section names.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from crewlib.data.records import LongDocument
from crewlib.relevance import tfidf_relevance


@dataclass(frozen=True)
class Part:
    index: int  # position in the document
    section: str
    text: str

    @property
    def words(self) -> int:
        return len(self.text.split())


def document_parts(doc: LongDocument, part_words: int) -> list[Part]:
    """The document in order, as pieces of at most ``part_words`` words, each within one section."""
    if doc.sections:
        blocks = [(s.name or f"section {i + 1}", s.text) for i, s in enumerate(doc.sections) if s.text.strip()]
    else:
        blocks = [("article", p) for p in re.split(r"\n\s*\n|\n", doc.article) if p.strip()]
    parts: list[Part] = []
    for name, text in blocks:
        words = text.split()
        for start in range(0, len(words), part_words):
            parts.append(Part(len(parts), name, " ".join(words[start:start + part_words])))
    return parts


def select_parts(parts: list[Part], query: str, budget_words: int) -> list[Part]:
    """The most relevant parts to ``query`` (best first) within ``budget_words``, returned in document order.

    The best part is always kept, even alone over the budget, so the answer has evidence.
    """
    if not parts:
        return []
    scores = tfidf_relevance(query, [p.text for p in parts])
    ranked = sorted(range(len(parts)), key=lambda i: (-float(scores[i]), i))
    chosen, used = [], 0
    for i in ranked:
        if chosen and used + parts[i].words > budget_words:
            continue
        chosen.append(parts[i])
        used += parts[i].words
    return sorted(chosen, key=lambda p: p.index)


def show(parts: list[Part]) -> str:
    return "\n\n".join(f"[{p.section}] {p.text}" for p in parts)
