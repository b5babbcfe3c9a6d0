"""Executors carry out the agents' actions: one interface, an LLM and a surrogate implementation.

The :class:`SurrogateExecutor` is deterministic and LLM-free (milliseconds a round): Retrieve
keeps the reference sentences closest to the target, Disseminate shares notes, Compose writes a
segment from the most relevant unused notes with their citations, Critique flags the problems
the draft checks find. A seeded error model (wrong citations, unsupported sentences; a critic
that misses problems and raises false alarms) imitates LLM mistakes so that Critique has work
to do. Its results are reported as surrogate results, never as LLM results.
"""

from __future__ import annotations

import random
from abc import ABC, abstractmethod
from dataclasses import dataclass, field

from crewlib.actions import Action
from crewlib.data.records import Reference
from crewlib.env.checks import (
    knowledge,
    revisable_feedback,
    segment_problems,
    supporting_notes,
    uncovered_notes,
    uncovered_sources,
)
from crewlib.env.workspace import Note, Proposal, Workspace
from crewlib.tasks import Task
from crewlib.text import content_words, sentences


@dataclass(frozen=True)
class ActionRequest:
    agent: int
    action: Action
    reference: Reference | None = None  # Retrieve: the paper the environment offers this agent


@dataclass
class RoundCost:
    tokens: int = 0
    calls: int = 0
    fallbacks: int = 0
    fallback_reasons: list[str] = field(default_factory=list)
    ledger_records: list = field(default_factory=list)


class Executor(ABC):
    name = "executor"

    def reset(self, seed: int | None) -> None:  # noqa: B027 - optional hook
        """Start an episode (re-seed any randomness)."""

    @abstractmethod
    def run_round(self, ws: Workspace, task: Task, requests: list[ActionRequest], t: int) -> tuple[list[Proposal],
                                                                                                  RoundCost]:
        """One proposal per request, in request order, and what the round cost."""


@dataclass(frozen=True)
class SurrogateErrors:
    wrong_citation: float = 0.15  # a composed sentence cites the wrong paper
    invalid_key: float = 0.05  # ... or a key that resolves to nothing
    unsupported: float = 0.15  # a composed segment gains a sentence no note supports
    critic_miss: float = 0.2  # the critic overlooks a real problem
    critic_false_alarm: float = 0.1  # the critic flags a problem that is not there


class SurrogateExecutor(Executor):
    name = "surrogate"

    def __init__(self, errors: SurrogateErrors = SurrogateErrors(), notes_per_reference: int = 2,
                 sentences_per_segment: int = 2, seed: int = 0) -> None:
        self.errors = errors
        self.notes_per_reference = notes_per_reference
        self.sentences_per_segment = sentences_per_segment
        self._rng = random.Random(seed)
        self._claimed: set[str] = set()  # notes already used by an earlier composer this round
        self._claimed_segments: set[int] = set()  # segments an earlier composer of this round revises

    def reset(self, seed: int | None) -> None:
        self._rng = random.Random(seed)

    def run_round(self, ws, task, requests, t):
        handlers = {Action.RETRIEVE: self._retrieve, Action.DISSEMINATE: self._disseminate,
                    Action.COMPOSE: self._compose, Action.CRITIQUE: self._critique}
        self._claimed, self._claimed_segments = set(), set()
        proposals = [handlers[r.action](ws, task, r) for r in requests]
        cost = RoundCost()
        for p in proposals:
            if p.is_noop:
                cost.fallbacks += 1
                cost.fallback_reasons.append(p.fallback)
        return proposals, cost

    # ------------------------------------------------------------ actions
    def _retrieve(self, ws: Workspace, task: Task, req: ActionRequest) -> Proposal:
        ref = req.reference
        if ref is None:
            return Proposal(req.agent, req.action, fallback="nothing left to read")
        target_words = content_words(task.target_text)
        ranked = sorted(sentences(ref.abstract),
                        key=lambda s: -len(content_words(s) & target_words) / (len(content_words(s)) or 1))
        notes = [Note(s, (ref.id,), req.agent) for s in ranked[: self.notes_per_reference]]
        return Proposal(req.agent, req.action, notes=notes, reference_id=ref.id)

    def _disseminate(self, ws: Workspace, task: Task, req: ActionRequest) -> Proposal:
        notes = ws.unshared(req.agent)
        if not notes:
            return Proposal(req.agent, req.action, fallback="no unshared notes")
        return Proposal(req.agent, req.action, notes=list(notes))

    def _sentence_for(self, note: Note, task: Task) -> str:
        keys = task.id_to_key
        key = keys[note.sources[0]]
        roll = self._rng.random()
        if roll < self.errors.invalid_key:
            key = f"R{len(task.references) + 1 + self._rng.randrange(9)}"
        elif roll < self.errors.invalid_key + self.errors.wrong_citation and len(keys) > 1:
            key = self._rng.choice([k for k in task.keys if k != key])
        return f"{note.text.rstrip('. ')} [{key}]."

    def _compose(self, ws: Workspace, task: Task, req: ActionRequest) -> Proposal:
        open_items = [f for f in revisable_feedback(ws) if f.segment_id not in self._claimed_segments]
        if open_items:
            self._claimed_segments.add(open_items[0].segment_id)
            return self._revise(ws, task, req, open_items[0].segment_id)
        unused = [n for n in uncovered_notes(ws, task, req.agent) if n.text not in self._claimed]
        if not unused:
            return Proposal(req.agent, req.action, fallback="no unused knowledge to compose from")
        unused.sort(key=lambda n: -task.relevance.get(n.sources[0], 0.0))
        chosen = list(dict.fromkeys(unused))[: self.sentences_per_segment]
        self._claimed.update(n.text for n in chosen)
        text = " ".join(self._sentence_for(n, task) for n in chosen)
        if self._rng.random() < self.errors.unsupported:
            key = self._rng.choice(task.keys)
            text += f" Many other studies have examined {task.title.split(':')[0].lower()} in depth [{key}]."
        return Proposal(req.agent, req.action, confidence=0.6, segment_id=None, text=text)

    def _revise(self, ws: Workspace, task: Task, req: ActionRequest, segment_id: int) -> Proposal:
        """Fix a flagged segment: correct citations to the supporting note's source, drop unsupported claims."""
        notes = knowledge(ws)
        keys = task.id_to_key
        kept = []
        for sent in sentences(ws.segment(segment_id).text):
            support = supporting_notes(sent, notes)
            if support:
                kept.append(f"{support[0].text.rstrip('. ')} [{keys[support[0].sources[0]]}].")
        resolves = [f.id for f in ws.open_feedback() if f.segment_id == segment_id]
        text = " ".join(dict.fromkeys(kept))  # also drops duplicate sentences
        return Proposal(req.agent, req.action, confidence=0.8, segment_id=segment_id, text=text, resolves=resolves)

    def _critique(self, ws: Workspace, task: Task, req: ActionRequest) -> Proposal:
        if not ws.draft:
            return Proposal(req.agent, req.action, fallback="no draft to critique")
        open_keys = {(f.kind, f.segment_id) for f in ws.open_feedback()}
        items = []
        for segment in ws.draft:
            for kind in sorted(segment_problems(segment, ws, task)):
                if (kind, segment.id) not in open_keys and self._rng.random() >= self.errors.critic_miss:
                    items.append((kind, segment.id, f"{kind.replace('_', ' ')} in segment {segment.id}", None))
        if uncovered_sources(ws, task) and ("coverage_gap", None) not in open_keys:
            items.append(("coverage_gap", None, "shared knowledge is not yet cited in the draft", None))
        if self._rng.random() < self.errors.critic_false_alarm:
            segment = self._rng.choice(ws.draft)
            items.append((self._rng.choice(["style", "inconsistency"]), segment.id, "a doubtful remark", None))
        if not items:
            return Proposal(req.agent, req.action, fallback="no problems found")
        target = max((i[1] for i in items if i[1] is not None), key=lambda s: sum(i[1] == s for i in items),
                     default=None)
        return Proposal(req.agent, req.action, confidence=min(1.0, 0.5 + 0.1 * len(items)), segment_id=target,
                        feedback=items)
