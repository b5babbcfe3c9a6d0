"""SQ2E's written question bank (docs/method.md, "SQ2E").

The Expert asks about content, grouped by the four criteria of the method — completeness,
coherence, relevance and factual consistency — and the Writer answers in words. The Editor asks
yes/no questions about surface errors and consistency with the source, each phrased so that
"yes" means a problem to fix (and "no" means no change).
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Question:
    id: str
    criterion: str
    text: str


EXPERT = (
    Question("E1", "completeness", "What problem or question does the document address, and does the summary "
                                   "state it?"),
    Question("E2", "completeness", "What are the main results, with their numbers, and which of them does the "
                                   "summary leave out?"),
    Question("E3", "completeness", "What method, data or study design does the document use, and does the "
                                   "summary describe it accurately enough?"),
    Question("E4", "completeness", "What conclusion or implication does the document draw that the summary "
                                   "omits?"),
    Question("E5", "coherence", "Does the summary follow the document's line from problem to method to results "
                                "to conclusion, or is something out of order?"),
    Question("E6", "coherence", "Which statements in the summary lack the context a reader needs to understand "
                                "them?"),
    Question("E7", "relevance", "Which parts of the summary are minor details or background that should give way "
                                "to more important content?"),
    Question("E8", "relevance", "What limitation or condition does the document attach to its results that the "
                                "summary should mention?"),
    Question("E9", "factual consistency", "Which numbers, names or comparisons in the summary does the document "
                                          "not support?"),
    Question("E10", "factual consistency", "Does the summary overstate or misattribute any finding of the "
                                           "document?"),
)

EDITOR = (
    Question("D1", "factual consistency", "Does the summary contain a number, name or unit that differs from the "
                                          "document?"),
    Question("D2", "factual consistency", "Does the summary contain a claim that the document does not make?"),
    Question("D3", "surface", "Does the summary contain a grammatical error, an unfinished sentence or a repeated "
                              "sentence?"),
    Question("D4", "surface", "Does the summary use a term or abbreviation without the definition the document "
                              "gives it?"),
    Question("D5", "consistency", "Does the summary contradict itself anywhere?"),
    Question("D6", "surface", "Does the summary contain text that is not part of a summary (a heading, a preamble, "
                              "a note to the reader)?"),
)

BANKS = {"expert": EXPERT, "editor": EDITOR}


def bank_lines(questions: tuple[Question, ...]) -> str:
    return "\n".join(f"{q.id}: {q.text}" for q in questions)
