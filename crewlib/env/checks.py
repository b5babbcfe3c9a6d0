"""Checks of the draft against knowledge and the pool: support, citation validity, problems.

The same checks serve the observation (feature 13), the surrogate critic (which sees them
through a seeded noise model) and the reward's judgement of whether feedback is real.
"""

from __future__ import annotations

from dataclasses import dataclass

from crewlib.citations import find_citation_keys
from crewlib.env.workspace import Note, Segment, Workspace
from crewlib.positioning import refers_to_paper, relates_works
from crewlib.sections import describes_target, is_first_person_copy, is_meta, near_duplicate
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


# Checks whose finding needs no judgement: Critique raises them without asking an LLM. Whether a
# paraphrase is supported, or cites the right paper, is left to the LLM critic (and the reward).
TEXT_CHECKS = frozenset({"unknown_key", "meta", "first_person", "describes_target", "uncited_claim",
                         "repeated_sentence", "repeated_paragraph"})


@dataclass(frozen=True)
class Finding:
    kind: str  # the feedback kind (FEEDBACK_KINDS)
    check: str  # the check that found it
    text: str  # what is wrong, quoting the sentence, and what to do


def segment_findings(segment: Segment, ws: Workspace, task: Task) -> list[Finding]:
    """The real problems of one segment, from deterministic checks.

    Critique raises those of :data:`TEXT_CHECKS` before it asks an LLM anything, and a revision
    counts as fixing one only when its check no longer finds it.
    """
    notes = knowledge(ws)
    found: list[Finding] = []
    seen: list[frozenset[str]] = []
    sents = sentences(segment.text)
    for i, sent in enumerate(sents):
        quoted = f'"{sent[:90]}"'
        check = check_sentence(sent, notes, task, ws.check_cache)
        if check.invalid_keys:
            found.append(Finding("hallucinated_citation", "unknown_key",
                                 f"{quoted} cites unknown keys {', '.join(check.invalid_keys)}"))
        elif check.wrong_citation:
            found.append(Finding("hallucinated_citation", "wrong_citation", f"{quoted} cites a paper that does not "
                                                                            "support it"))
        if is_meta(sent):
            found.append(Finding("style", "meta", f"{quoted} talks about the writing process; remove it"))
            continue
        if ws.positioning and refers_to_paper(sent, task.title) and relates_works(sent):
            # The paper's place among the works (output.repairs: positioning): the output checks hold it to the
            # paper's own text; as a claim about a work it would be flagged uncited or a description of the target.
            seen.append(content_words(strip_markers(sent)))
            continue
        if is_first_person_copy(sent, task):
            found.append(Finding("style", "first_person", f"{quoted} copies a cited abstract's first person; "
                                                          "rewrite it in the third person"))
        elif describes_target(sent, task):
            found.append(Finding("inconsistency", "describes_target",
                                 f"{quoted} describes the target paper itself, not related work"))
        elif not check.supported:
            found.append(Finding("missing_evidence", "unsupported", f"{quoted} is not supported by any note"))
        # A paragraph may open with an uncited topic sentence; any later claim needs its source.
        if not check.cited_ids and not check.invalid_keys and (i > 0 or len(sents) == 1):
            found.append(Finding("style", "uncited_claim", f"{quoted} makes a claim without a citation"))
        words = content_words(strip_markers(sent))
        if words and any(len(words & w) / len(words | w) > 0.8 for w in seen):
            found.append(Finding("inconsistency", "repeated_sentence", f"{quoted} repeats an earlier sentence"))
        seen.append(words)
    for other in ws.draft:
        if other.id != segment.id and near_duplicate(segment.text, other.text, ws.duplicate_threshold):
            found.append(Finding("inconsistency", "repeated_paragraph",
                                 f"paragraph {segment.id} repeats paragraph {other.id}; merge or remove it"))
    return found


def segment_problems(segment: Segment, ws: Workspace, task: Task) -> set[str]:
    """Feedback kinds that would point at a real problem in this segment."""
    return {f.kind for f in segment_findings(segment, ws, task)}


def uncovered_sources(ws: Workspace, task: Task) -> set[str]:
    """Pool papers the team has read or shared knowledge of that the draft never cites (a coverage gap)."""
    key_to_id = task.key_to_id
    cited = {key_to_id[k] for k in find_citation_keys(ws.draft_text) if k in key_to_id}
    known = {s for n in knowledge(ws) for s in n.sources}
    return known - cited


def uncovered_notes(ws: Workspace, task: Task, agent: int) -> list[Note]:
    """What ``agent`` may compose from that the draft does not cite yet: global knowledge and its
    own local notes whose sources are all uncited, most relevant source first."""
    missing = uncovered_sources(ws, task)
    pool = ws.global_notes + ws.local_notes[agent]
    out = list(dict.fromkeys(n for n in pool if n.sources and set(n.sources) <= missing))
    return sorted(out, key=lambda n: -max(task.relevance.get(s, 0.0) for s in n.sources))


def n_sources(notes: list[Note]) -> int:
    return len({s for n in notes for s in n.sources})


def revisable_feedback(ws: Workspace) -> list:
    """Open feedback on a segment still in the draft: what a revision can fix."""
    return [f for f in ws.open_feedback() if f.segment_id is not None and ws.segment(f.segment_id)]


def fixed_feedback(ws: Workspace, task: Task) -> list[int]:
    """Open feedback raised by a check that no longer finds the problem (a revision fixed it), and
    coverage gaps once the draft cites everything the team knows of."""
    fixed = []
    found: dict[int, set[str]] = {}  # segment id → the checks that still find something (computed once)
    covered = None
    for item in ws.open_feedback():
        if item.kind == "coverage_gap" and item.segment_id is None:
            covered = not uncovered_sources(ws, task) if covered is None else covered
            if covered:
                fixed.append(item.id)
        elif item.check:
            segment = ws.segment(item.segment_id) if item.segment_id is not None else None
            if segment is None:
                continue
            if segment.id not in found:
                found[segment.id] = {f.check for f in segment_findings(segment, ws, task)}
            if item.check not in found[segment.id]:
                fixed.append(item.id)
    return fixed


def feedback_is_real(kind: str, segment_id: int | None, ws: Workspace, task: Task) -> bool:
    if kind == "coverage_gap":
        return bool(uncovered_sources(ws, task))
    segment = ws.segment(segment_id) if segment_id is not None else None
    return segment is not None and kind in segment_problems(segment, ws, task)
