"""The shared workspace (the Dec-POMDP state, docs/method.md, "Environment") and the joint-edit merge.

Draft segments, global knowledge, feedback, each agent's local knowledge, the read log and
every agent's last action. Agents do not write here directly: an executor turns each agent's
action into a :class:`Proposal`, and :func:`merge_proposals` decides which proposals land —
on the same segment the most confident wins (ties: the lower agent index).
"""

from __future__ import annotations

import re
from collections import Counter
from dataclasses import dataclass, field

from crewlib.actions import Action
from crewlib.citations import dedupe_markers, find_citation_keys
from crewlib.sections import near_duplicate, repeats_sentence
from crewlib.text import content_words, sentences

FEEDBACK_KINDS = ("hallucinated_citation", "missing_evidence", "inconsistency", "coverage_gap", "style")


@dataclass
class Segment:
    id: int
    text: str  # Markdown with [R#] citation markers
    author: int
    version: int = 1


@dataclass(frozen=True)
class Note:
    text: str
    sources: tuple[str, ...]  # reference ids the note comes from
    contributor: int


@dataclass
class FeedbackItem:
    id: int
    kind: str
    segment_id: int | None
    text: str
    author: int
    status: str = "open"  # open | resolved
    flagged_at: int = 0  # the round it was raised
    resolved_at: int | None = None  # the round a revision fixed it
    check: str | None = None  # the deterministic check that raised it (its fix is verified); None: a judgement


@dataclass
class Proposal:
    """What an executor made of one agent's action this round."""

    agent: int
    action: Action
    confidence: float = 1.0
    segment_id: int | None = None  # compose: the segment revised (None: a new one); critique: the segment
    notes: list[Note] = field(default_factory=list)  # retrieve / disseminate
    text: str = ""  # compose
    # critique: (kind, segment, text, check) — check names the deterministic check that found it, None for a judgement
    feedback: list[tuple[str, int | None, str, str | None]] = field(default_factory=list)
    resolves: list[int] = field(default_factory=list)  # compose: feedback ids addressed
    fallback: str | None = None  # why this is a no-op, when it is one
    reference_id: str | None = None  # retrieve: the reference read

    @property
    def is_noop(self) -> bool:
        return self.fallback is not None


def merge_proposals(proposals: list[Proposal]) -> tuple[list[Proposal], list[Proposal]]:
    """Split proposals into (accepted, overruled).

    Compose proposals on the same existing segment, and critiques of the same segment, conflict:
    the highest confidence wins, ties go to the lower agent index. New segments, retrieval and
    dissemination never conflict (duplicate notes are merged when applied).
    """
    accepted, overruled = [], []
    best: dict[tuple[Action, int], Proposal] = {}
    for p in proposals:
        if p.is_noop:
            overruled.append(p)
            continue
        if p.action in (Action.COMPOSE, Action.CRITIQUE) and p.segment_id is not None:
            key = (p.action, p.segment_id)
            current = best.get(key)
            if current is None or (p.confidence, -p.agent) > (current.confidence, -current.agent):
                if current is not None:
                    overruled.append(current)
                best[key] = p
            else:
                overruled.append(p)
        else:
            accepted.append(p)
    accepted += best.values()
    accepted.sort(key=lambda p: (p.agent, p.action))
    return accepted, overruled


def _note_key(note: Note) -> frozenset[str]:
    return content_words(note.text)


@dataclass
class Workspace:
    n_agents: int
    draft: list[Segment] = field(default_factory=list)
    global_notes: list[Note] = field(default_factory=list)
    feedback: list[FeedbackItem] = field(default_factory=list)
    local_notes: list[list[Note]] = field(default_factory=list)
    shared_upto: list[int] = field(default_factory=list)  # local notes [0, k) are disseminated
    read_log: list[list[str]] = field(default_factory=list)
    last_action: list[int | None] = field(default_factory=list)
    last_draft_change: int = 0
    last_critique: int = -1  # the round the last critique landed (Critique waits for a changed draft)
    # The settings (the environment passes them from params: output.duplicate_threshold, env.compose_min_sources,
    # env.revision_guard, output.sentence_threshold).
    duplicate_threshold: float = field(kw_only=True)  # a new segment overlapping an existing one this much repeats it
    compose_min_sources: int = field(kw_only=True)  # uncited works a new paragraph needs (fewer: read and share first)
    revision_guard: bool = field(kw_only=True)  # reject a revision that loses a cited work or adds a repeated sentence
    sentence_threshold: float = field(kw_only=True)  # overlap at which a sentence repeats another (the revision guard)
    positioning: bool = field(kw_only=True)  # a sentence relating the paper to the works is no fault (output.repairs)
    edits: Counter = field(default_factory=Counter)  # what write_segment did: merged / rejected repeats, markers
    ever_cited: set[str] = field(default_factory=set)  # every key the draft has cited at some point
    _next_segment: int = 0
    _next_feedback: int = 0
    check_cache: dict = field(default_factory=dict, repr=False)  # sentence checks (crewlib.env.checks)

    def __post_init__(self) -> None:
        self.local_notes = self.local_notes or [[] for _ in range(self.n_agents)]
        self.shared_upto = self.shared_upto or [0] * self.n_agents
        self.read_log = self.read_log or [[] for _ in range(self.n_agents)]
        self.last_action = self.last_action or [None] * self.n_agents

    # ---------------------------------------------------------------- views
    @property
    def draft_text(self) -> str:
        return "\n\n".join(s.text for s in self.draft)

    @property
    def global_text(self) -> str:
        return " ".join(n.text for n in self.global_notes)

    def local_text(self, agent: int) -> str:
        return " ".join(n.text for n in self.local_notes[agent])

    def unshared(self, agent: int) -> list[Note]:
        return self.local_notes[agent][self.shared_upto[agent]:]

    def open_feedback(self) -> list[FeedbackItem]:
        return [f for f in self.feedback if f.status == "open"]

    def segment(self, segment_id: int) -> Segment | None:
        return next((s for s in self.draft if s.id == segment_id), None)

    # ---------------------------------------------------------------- edits
    def add_local(self, agent: int, notes: list[Note]) -> int:
        known = {_note_key(n) for n in self.local_notes[agent]}
        added = 0
        for note in notes:
            if note.text.strip() and _note_key(note) not in known:
                self.local_notes[agent].append(note)
                known.add(_note_key(note))
                added += 1
        return added

    def disseminate(self, agent: int, notes: list[Note]) -> int:
        """Add notes to global knowledge (duplicates merged) and mark the agent's local notes shared."""
        known = {_note_key(n) for n in self.global_notes}
        added = 0
        for note in notes:
            if note.text.strip() and _note_key(note) not in known:
                self.global_notes.append(note)
                known.add(_note_key(note))
                added += 1
        self.shared_upto[agent] = len(self.local_notes[agent])
        return added

    def write_segment(self, agent: int, text: str, segment_id: int | None, t: int) -> Segment | None:
        """Write a new segment or revise one; None when nothing changed.

        Invariants: no marker repeated inside one citation; no two near-identical segments. A new
        segment that repeats an existing one becomes a revision of it when it cites a work the
        existing one does not (``edits["merged_repeat"]``), else it is rejected
        (``edits["rejected_repeat"]``); a revision that repeats another segment is rejected.
        """
        text, removed = dedupe_markers(text.strip())
        self.edits["duplicated_markers"] += removed
        existing = self.segment(segment_id) if segment_id is not None else None
        if not text:
            if existing is None:
                return None
            # A revision that keeps nothing removes the segment; what was flagged on it is settled.
            self.draft.remove(existing)
            self.resolve([f.id for f in self.feedback if f.segment_id == existing.id], t)
            self.edits["removed"] += 1
            self.last_draft_change = t
            return existing
        repeats = next((s for s in self.draft if s is not existing
                        and near_duplicate(text, s.text, self.duplicate_threshold)), None)
        if repeats is not None:
            if existing is None and set(find_citation_keys(text)) - set(find_citation_keys(repeats.text)):
                existing = repeats
                self.edits["merged_repeat"] += 1
            else:
                self.edits["rejected_repeat"] += 1
                return None
        if existing is not None:
            if existing.text == text:
                return None
            if self.revision_guard and (reason := self._revision_loses(existing, text)):
                self.edits[reason] += 1
                return None
            existing.text, existing.author, existing.version = text, agent, existing.version + 1
            segment = existing
        else:
            segment = Segment(self._next_segment, text, agent)
            self._next_segment += 1
            self.draft.append(segment)
        self.ever_cited.update(find_citation_keys(text))
        self.last_draft_change = t
        return segment

    def _revision_loses(self, existing: Segment, text: str) -> str | None:
        """Why revising ``existing`` into ``text`` would make the draft worse, or None: a work it cited is cited
        nowhere afterwards — unless a critique flagged the segment's citations (open feedback of kind
        ``hallucinated_citation``) or names that key — or a sentence it adds repeats one already in the draft."""
        others = [s.text for s in self.draft if s is not existing]
        still_cited = set(find_citation_keys(" ".join([*others, text])))
        feedback = [f for f in self.open_feedback() if f.segment_id == existing.id]
        if any(f.kind == "hallucinated_citation" for f in feedback):
            still_cited |= set(find_citation_keys(existing.text))  # a flagged citation may go
        flagged = " ".join(f.text for f in feedback)
        lost = [k for k in dict.fromkeys(find_citation_keys(existing.text))
                if k not in still_cited and not re.search(rf"\b{k}\b", flagged)]
        if lost:
            return "rejected_lost_citation"
        old = set(sentences(existing.text))
        seen = [s for t in others for s in sentences(t)]
        for sent in sentences(text):
            if sent not in old and any(repeats_sentence(sent, s, self.sentence_threshold) for s in seen):
                return "rejected_repeated_sentence"
            seen.append(sent)
        return None

    def add_feedback(self, kind: str, segment_id: int | None, text: str, author: int, *, t: int = 0,
                     check: str | None = None) -> FeedbackItem:
        item = FeedbackItem(self._next_feedback, kind, segment_id, text, author, flagged_at=t, check=check)
        self._next_feedback += 1
        self.feedback.append(item)
        return item

    def resolve(self, feedback_ids: list[int], t: int = 0) -> int:
        resolved = 0
        for item in self.feedback:
            if item.id in feedback_ids and item.status == "open":
                item.status, item.resolved_at = "resolved", t
                resolved += 1
        return resolved
