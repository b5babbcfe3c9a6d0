"""Checks of the draft against knowledge and the pool: support, citation validity, problems.

The same checks serve the observation (feature 13), the surrogate critic (which sees them
through a seeded noise model) and the reward's judgement of whether feedback is real.
"""

from __future__ import annotations

from dataclasses import dataclass

from crewlib.citations import find_citation_keys
from crewlib.env.workspace import Note, Segment, Workspace
from crewlib.tasks import Task
from crewlib.text import containment, content_words, sentences, strip_markers

SUPPORT_THRESHOLD = 0.5  # share of a sentence's content words that a supporting note must contain


def knowledge(ws: Workspace) -> list[Note]:
    return ws.global_notes + [n for notes in ws.local_notes for n in notes]


def supporting_notes(sentence: str, notes: list[Note]) -> list[Note]:
    return [n for n in notes if containment(sentence, n.text) >= SUPPORT_THRESHOLD]


@dataclass(frozen=True)
class SentenceCheck:
    text: str
    supported: bool  # some note backs the claim
    cited_ids: tuple[str, ...]
    invalid_keys: tuple[str, ...]  # markers that resolve to no pool paper
    wrong_citation: bool  # supported, cites something, but none of the cited papers is a source of its support


def check_sentence(sentence: str, notes: list[Note], task: Task, cache: dict | None = None) -> SentenceCheck:
    """Support and citation checks of one sentence. ``cache`` (keyed by sentence and the number of
    notes, which only grows during an episode) spares re-checking unchanged sentences every step."""
    key = (sentence, len(notes))
    if cache is not None and key in cache:
        return cache[key]
    keys = find_citation_keys(sentence)
    key_to_id = task.key_to_id
    cited = tuple(key_to_id[k] for k in keys if k in key_to_id)
    invalid = tuple(k for k in keys if k not in key_to_id)
    support = supporting_notes(sentence, notes)
    sources = {s for n in support for s in n.sources}
    wrong = bool(support) and bool(cited) and not (set(cited) & sources)
    result = SentenceCheck(sentence, bool(support), cited, invalid, wrong)
    if cache is not None:
        cache[key] = result
    return result


def segment_problems(segment: Segment, ws: Workspace, task: Task) -> set[str]:
    """Feedback kinds that would point at a real problem in this segment."""
    notes = knowledge(ws)
    problems: set[str] = set()
    seen: list[frozenset[str]] = []
    for sent in sentences(segment.text):
        check = check_sentence(sent, notes, task, ws.check_cache)
        if check.invalid_keys or check.wrong_citation:
            problems.add("hallucinated_citation")
        if not check.supported:
            problems.add("missing_evidence")
        words = content_words(strip_markers(sent))
        if words and any(len(words & w) / len(words | w) > 0.8 for w in seen):
            problems.add("inconsistency")  # a near-duplicate sentence
        seen.append(words)
    if not find_citation_keys(segment.text):
        problems.add("style")  # a related-work paragraph that cites nothing
    return problems


def uncovered_sources(ws: Workspace, task: Task) -> set[str]:
    """Pool papers behind global knowledge that the draft never cites (a coverage gap)."""
    key_to_id = task.key_to_id
    cited = {key_to_id[k] for k in find_citation_keys(ws.draft_text) if k in key_to_id}
    return {s for n in ws.global_notes for s in n.sources} - cited


def feedback_is_real(kind: str, segment_id: int | None, ws: Workspace, task: Task) -> bool:
    if kind == "coverage_gap":
        return bool(uncovered_sources(ws, task))
    segment = ws.segment(segment_id) if segment_id is not None else None
    return segment is not None and kind in segment_problems(segment, ws, task)
