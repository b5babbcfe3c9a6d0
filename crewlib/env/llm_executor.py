"""The LLM executor: role prompts, JSON outputs validated against schemas, concurrent calls.

All agents' calls of a round go to the project's client in one batch (concurrently). An answer
that stays invalid after the client's one re-ask, or a failed call, becomes a *counted* no-op
(``Proposal.fallback``), never a crash and never a silent loss.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Literal

import pydantic

from crewlib import prompts
from crewlib.citations import find_citation_keys
from crewlib.config import default
from crewlib.env.executors import ActionRequest, Executor, RoundCost
from crewlib.env.workspace import FEEDBACK_KINDS, Action, Note, Proposal, Workspace
from crewlib.llm import Caller, ChatRequest, LLMClient, LLMError
from crewlib.tasks import Task
from crewlib.text import approx_tokens

Confidence = pydantic.confloat(ge=0.0, le=1.0)


class NotesOut(pydantic.BaseModel):
    notes: list[str] = pydantic.Field(min_length=1, max_length=4)
    confidence: Confidence = 0.5


class ComposeOut(pydantic.BaseModel):
    segment_id: int | None = None
    text: str = pydantic.Field(min_length=20)
    resolves: list[int] = []
    confidence: Confidence = 0.5


class FeedbackOut(pydantic.BaseModel):
    kind: Literal[FEEDBACK_KINDS]  # type: ignore[valid-type]
    segment_id: int | None = None
    text: str


class CritiqueOut(pydantic.BaseModel):
    feedback: list[FeedbackOut] = pydantic.Field(max_length=6)
    confidence: Confidence = 0.5


SCHEMAS = {Action.RETRIEVE: NotesOut, Action.DISSEMINATE: NotesOut, Action.COMPOSE: ComposeOut,
           Action.CRITIQUE: CritiqueOut}
ROLE = {Action.RETRIEVE: "retrieve", Action.DISSEMINATE: "disseminate", Action.COMPOSE: "compose",
        Action.CRITIQUE: "critique"}


def _notes_block(notes: list[Note], id_to_key: dict[str, str]) -> str:
    if not notes:
        return "(none)"
    return "\n".join(f"- {n.text} [{', '.join(id_to_key.get(s, '?') for s in n.sources)}]" for n in notes)


def _draft_block(ws: Workspace) -> str:
    return "\n".join(f"{s.id}: {s.text}" for s in ws.draft) or "(empty)"


def _newest(notes: list[Note], n: int) -> list[Note]:
    return notes[-n:] if n > 0 else []


def _short(text: str, words: int = 60) -> str:
    parts = text.split()
    return text if len(parts) <= words else " ".join(parts[:words]) + " ..."


class LLMExecutor(Executor):
    """Prompts are kept short (abstracts cut, at most ``max_notes`` notes) for small local models.

    Settings come from the ``executor`` block of params: answer lengths per action, the notes
    shown, and ``context_tokens``, the budget of one action's prompt + answer (the paper caps it
    at 6,144, Appendix D.1): a prompt over budget first shows fewer notes, then is cut, and every
    cut is counted in :attr:`context_cuts`.
    """

    name = "llm"

    def __init__(self, client: LLMClient, max_tokens: Mapping[str, int] | None = None, system: str = "crew", *,
                 max_notes: int | None = None, context_tokens: int | None = None) -> None:
        self.client = client
        self.max_tokens = {**default("executor.max_tokens"), **(max_tokens or {})}
        self.max_notes = default("executor.max_notes") if max_notes is None else max_notes
        self.context_tokens = context_tokens
        self.context_cuts = 0
        self.system = system

    @classmethod
    def from_params(cls, client: LLMClient, params: Mapping, system: str = "crew") -> LLMExecutor:
        block = params["executor"]
        return cls(client, block["max_tokens"], system, max_notes=block["max_notes"],
                   context_tokens=block["context_tokens"])

    def messages(self, ws: Workspace, task: Task, req: ActionRequest) -> list[dict[str, str]]:
        """The chat messages for one agent's action, within ``context_tokens`` (never the gold: not in ``task``)."""
        budget = None
        if self.context_tokens:
            budget = self.context_tokens - self.max_tokens[ROLE[req.action]] - approx_tokens(prompts.AGENT_SYSTEM)
        notes = self.max_notes
        user = self._user_prompt(ws, task, req, notes)
        while budget is not None and approx_tokens(user) > budget and notes > 0:
            notes //= 2
            user = self._user_prompt(ws, task, req, notes)
        if budget is not None and approx_tokens(user) > budget:
            self.context_cuts += 1
            user = user[:max(0, budget) * 4] + " ..."
        return [{"role": "system", "content": prompts.AGENT_SYSTEM}, {"role": "user", "content": user}]

    def _user_prompt(self, ws: Workspace, task: Task, req: ActionRequest, max_notes: int) -> str:
        keys = task.id_to_key
        if req.action == Action.RETRIEVE:
            ref = req.reference
            user = prompts.RETRIEVE.format(title=task.title, abstract=_short(task.abstract), key=keys[ref.id],
                                           ref_title=ref.title, ref_abstract=ref.abstract)
        elif req.action == Action.DISSEMINATE:
            user = prompts.DISSEMINATE.format(title=task.title, notes=_notes_block(ws.unshared(req.agent), keys))
        elif req.action == Action.COMPOSE:
            feedback = "\n".join(f"{f.id}, {f.kind}, {f.segment_id}: {f.text}" for f in ws.open_feedback()) or "(none)"
            user = prompts.COMPOSE.format(
                title=task.title, draft=_draft_block(ws), feedback=feedback,
                knowledge=_notes_block(_newest(ws.global_notes + ws.unshared(req.agent), max_notes), keys))
        else:
            user = prompts.CRITIQUE.format(title=task.title, keys=", ".join(task.keys), draft=_draft_block(ws),
                                           knowledge=_notes_block(_newest(ws.global_notes, max_notes), keys))
        return user

    def run_round(self, ws, task, requests, t):
        mark = self.client.ledger.mark()
        batch = [ChatRequest(self.messages(ws, task, r), caller=Caller(self.system, ROLE[r.action], r.agent),
                             schema=SCHEMAS[r.action], max_tokens=self.max_tokens[ROLE[r.action]],
                             prompt_version=prompts.PROMPT_VERSION, sample_index=t)
                 for r in requests]
        outcomes = self.client.batch(batch, return_exceptions=True)
        proposals = []
        cost = RoundCost()
        for req, outcome in zip(requests, outcomes, strict=True):
            if isinstance(outcome, LLMError):
                reason = f"{type(outcome).__name__}: {str(outcome)[:120]}"
                proposals.append(Proposal(req.agent, req.action, fallback=reason))
            else:
                proposals.append(self._proposal(ws, task, req, outcome.parsed))
            if proposals[-1].is_noop:
                cost.fallbacks += 1
                cost.fallback_reasons.append(proposals[-1].fallback)
        cost.ledger_records = self.client.ledger.since(mark)
        cost.calls = len(cost.ledger_records)
        cost.tokens = sum(r.prompt_tokens + r.completion_tokens for r in cost.ledger_records)
        return proposals, cost

    def _proposal(self, ws: Workspace, task: Task, req: ActionRequest, out: pydantic.BaseModel) -> Proposal:
        key_to_id = task.key_to_id
        if req.action == Action.RETRIEVE:
            notes = [Note(n.strip(), (req.reference.id,), req.agent) for n in out.notes if n.strip()]
            return Proposal(req.agent, req.action, out.confidence, notes=notes, reference_id=req.reference.id)
        if req.action == Action.DISSEMINATE:
            fallback_sources = tuple(dict.fromkeys(s for n in ws.unshared(req.agent) for s in n.sources))
            notes = []
            for text in out.notes:
                sources = tuple(dict.fromkeys(key_to_id[k] for k in find_citation_keys(text) if k in key_to_id))
                notes.append(Note(text.strip(), sources or fallback_sources, req.agent))
            return Proposal(req.agent, req.action, out.confidence, notes=notes)
        if req.action == Action.COMPOSE:
            segment_id = out.segment_id if out.segment_id is not None and ws.segment(out.segment_id) else None
            open_ids = {f.id for f in ws.open_feedback()}
            return Proposal(req.agent, req.action, out.confidence, segment_id=segment_id, text=out.text,
                            resolves=[i for i in out.resolves if i in open_ids])
        items = [(f.kind, f.segment_id if f.segment_id is None or ws.segment(f.segment_id) else None, f.text)
                 for f in out.feedback]
        if not items:
            return Proposal(req.agent, req.action, fallback="the critic found no problems")
        target = next((seg for _, seg, _ in items if seg is not None), None)
        return Proposal(req.agent, req.action, out.confidence, segment_id=target, feedback=items)
