"""The LLM executor: role prompts, JSON outputs validated against schemas, concurrent calls.

All agents' calls of a round go to the project's client in one batch (concurrently). An answer
that stays invalid after the client's one re-ask, or a failed call, becomes a *counted* no-op
(``Proposal.fallback``), never a crash and never a silent loss.
"""

from __future__ import annotations

import re
from collections import Counter
from dataclasses import dataclass
from typing import ClassVar, Literal

import pydantic

from crewlib import prompts
from crewlib.actions import Action
from crewlib.citations import find_citation_keys
from crewlib.data.records import Reference
from crewlib.env.checks import TEXT_CHECKS, revisable_feedback, segment_findings, uncovered_notes, uncovered_sources
from crewlib.env.closing import fallback_position
from crewlib.env.compose_forms import (  # noqa: F401  (attribute_sentences, with_citation: the forms' API, here too)
    FEEDBACK_CHARS,
    NOTE_CHARS,
    ComposeOut,
    Confidence,
    attribute_sentences,
    compose_length,
    compose_schema,
    one_paragraph,
    sentences_schema,
    with_citation,
)
from crewlib.env.executors import ActionRequest, Executor, RoundCost
from crewlib.env.notes_finish import complete_from_notes, one_work_notes, theme_paragraph, work_texts
from crewlib.env.themed_compose import COUNTS, extended_paragraph, revised_paragraph, themed_schema
from crewlib.env.themes import Theme, group_themes
from crewlib.env.workspace import FEEDBACK_KINDS, Note, Proposal, Workspace
from crewlib.llm import Caller, ChatRequest, LLMClient, LLMError
from crewlib.positioning import target_name
from crewlib.prompts.parts import Filled, fill, parts_text
from crewlib.schema import ExecutorBlock, Params
from crewlib.sections import CLOSING_REPEAT, OutputChecks, is_truncated, paragraphs, repeats_sentence, sentence_gate
from crewlib.tasks import Task, title_only
from crewlib.text import approx_tokens, content_words, sentences, support


class NotesOut(pydantic.BaseModel):
    notes: list[str] = pydantic.Field(min_length=1, max_length=4)
    confidence: Confidence = 0.5
    max_chars: ClassVar[dict[str, int]] = {"notes": NOTE_CHARS}


class FeedbackOut(pydantic.BaseModel):
    kind: Literal[FEEDBACK_KINDS]  # type: ignore[valid-type]
    segment_id: int | None = None
    text: str


class CritiqueOut(pydantic.BaseModel):
    feedback: list[FeedbackOut] = pydantic.Field(max_length=6)
    confidence: Confidence = 0.5
    max_chars: ClassVar[dict[str, int]] = {"text": FEEDBACK_CHARS}


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


def outline_block(ws: Workspace, task: Task) -> str:
    """One line per paragraph: its id and the works it cites (key and short title). Titles, not the
    paragraph's opening words, which a small model copies into the next paragraph."""
    lines = []
    for s in ws.draft:
        keys = [k for k in dict.fromkeys(find_citation_keys(s.text)) if k in task.reference_by_key]
        works = "; ".join(f"[{k}] {_short(task.reference_by_key[k].title, 8)}" for k in keys) or "no citation"
        lines.append(f"paragraph {s.id}: {works}")
    return "\n".join(lines) or "(empty: this is the first paragraph)"


def related_sources(seed: str, candidates: list[str], task: Task, n: int) -> list[str]:
    """``seed`` and the ``n - 1`` candidates whose title and abstract share the most content words
    with it (Jaccard, so that a short text is not close to everything): the works one paragraph
    groups (ties keep the candidates' relevance order)."""
    words = {r.id: content_words(f"{r.title}. {r.abstract}") for r in task.references}

    def similarity(c: str) -> float:
        union = words[seed] | words[c]
        return len(words[seed] & words[c]) / len(union) if union else 0.0

    others = sorted((c for c in candidates if c != seed), key=lambda c: -similarity(c))
    return [seed, *others[: n - 1]]


def _short(text: str, words: int = 60) -> str:
    parts = text.split()
    return text if len(parts) <= words else " ".join(parts[:words]) + " ..."


def mend_notes(texts: list[str]) -> list[str]:
    """Notes as whole sentences: a note that a length cap cut mid-sentence ("... and sentences. The") is joined
    with the next when that one continues it (starts in lower case), and a cut last sentence left is dropped."""
    joined: list[str] = []
    for text in texts:
        if joined and is_truncated(joined[-1]) and text[:1].islower():
            joined[-1] = f"{joined[-1]} {text}"
        else:
            joined.append(text)
    out = []
    for text in joined:
        parts = sentences(text)
        if len(parts) > 1 and is_truncated(text):
            text = " ".join(parts[:-1])
        out.append(text)
    return out


def about_target(note: str, task: Task, reference: Reference) -> bool:
    """A note taken on ``reference`` that is about the target instead: it names the target (its short name,
    absent from the reference's text), or the target's title and abstract hold more of it than the reference's."""
    name = target_name(task.title)
    own = f"{reference.title} {reference.abstract}"
    if name and re.search(rf"\b{re.escape(name)}\b", note) and not re.search(rf"\b{re.escape(name)}\b", own):
        return True
    return support(note, f"{task.title} {task.abstract}") > max(support(note, own), 0.5)


@dataclass(frozen=True)
class Job:
    """One action that needs an LLM call; for Compose, the paragraph to revise or the notes to write from."""

    req: ActionRequest
    segment_id: int | None = None
    notes: tuple[Note, ...] = ()
    theme: Theme | None = None  # a themed Compose: the theme (of the whole pool) its works were taken from
    extends: int | None = None  # a themed Compose on a theme the draft has a paragraph on: that paragraph's id


class LLMExecutor(Executor):
    """Prompts are kept short (abstracts cut, at most ``max_notes`` notes) for small local models.

    Settings come from the ``executor`` block of params: answer lengths per action, the notes
    shown, and ``context_tokens``, the budget of one action's prompt + answer (the paper caps it
    at 6,144, Appendix D.1): a prompt over budget first shows fewer notes, then is cut, and every
    cut is counted in :attr:`context_cuts`.
    """

    name = "llm"

    def __init__(self, client: LLMClient, settings: ExecutorBlock, system: str = "crew", *,
                 edition: str = prompts.RECORDED_EDITION, checks: OutputChecks | None = None) -> None:
        """``settings``: the ``executor`` block of params; ``system``: the name the ledger records the calls under;
        ``edition``: the prompts' edition (``llm.prompt_edition``); ``checks``: the output checks (the ``output``
        block; required by ``compose_form: themed``), which a themed paragraph's sentences meet as they are written,
        its closing with the support a cited sentence needs (``output.support_threshold``)."""
        if settings.compose_form == "themed" and checks is None:
            raise ValueError("executor.compose_form themed needs the output checks (the params' output block)")
        self.client = client
        self.edition = edition
        self.rules = prompts.SECTION_RULES[edition]
        self.checks = checks
        self.themes: dict[str, list[Theme]] = {}  # target → the grouping of its pool this episode (themed Compose)
        self.paragraphs: list[dict] = []  # themed Compose: each new paragraph's theme, works, relation, closing
        self.themed_counts = Counter()  # comparisons dropped, closing sentences replaced, closings kept on revision
        self.max_tokens = settings.max_tokens.model_dump()
        self.max_notes = settings.max_notes
        self.context_tokens = settings.context_tokens
        self.context_cuts = 0
        self.compose_sources = settings.compose_sources
        self.attribute_uncited = settings.attribute_uncited
        self.keep_opening_markers = settings.keep_opening_markers
        self.salvage_paragraphs = settings.salvage_paragraphs
        self.own_notes_first = settings.own_notes_first
        self.compose_form = settings.compose_form
        self.check_notes = settings.check_notes
        self.finish_from_notes = settings.finish_from_notes
        self.share_as_is = settings.share_as_is
        self.notes_dropped = 0  # Retrieve notes about the target instead of the work read (check_notes)
        self.attributed = 0  # sentences of new paragraphs given their source's key (attribute_uncited)
        self.dropped = 0  # sentences of paragraphs citing keys they were not given, dropped (salvage_paragraphs)
        self.system = system
        self._read: dict[tuple[str, str], list[str]] = {}

    @classmethod
    def from_params(cls, client: LLMClient, params: Params, system: str = "crew") -> LLMExecutor:
        return cls(client, params.executor, system, edition=params.llm.prompt_edition,
                   checks=OutputChecks.from_params(params))

    def reset(self, seed: int | None) -> None:
        self._read: dict[tuple[str, str], list[str]] = {}  # (target, reference) → its notes, read once per episode
        self.paragraphs, self.themed_counts, self.themes = [], Counter(), {}
        self._reviewed: set[tuple[int, int]] = set()  # (paragraph id, version) a Critique has seen

    def prompt(self, ws: Workspace, task: Task, req: ActionRequest,
               job: Job | None = None) -> tuple[list[dict[str, str]], tuple[tuple[str, int], ...]]:
        """The chat messages for one agent's action, within ``context_tokens`` (never the gold: not in ``task``), and
        their parts' estimated tokens (:mod:`crewlib.prompts.parts`), for the ledger."""
        job = job or Job(req)
        budget = None
        if self.context_tokens:
            budget = self.context_tokens - self.max_tokens[ROLE[req.action]] - approx_tokens(prompts.AGENT_SYSTEM)
        notes = self.max_notes
        user = self._user_prompt(ws, task, job, notes)
        while budget is not None and approx_tokens(user.text) > budget and notes > 0:
            notes //= 2
            user = self._user_prompt(ws, task, job, notes)
        text = user.text
        if budget is not None and approx_tokens(text) > budget:
            self.context_cuts += 1
            text = text[:max(0, budget) * 4] + " ..."
        messages = [{"role": "system", "content": prompts.AGENT_SYSTEM}, {"role": "user", "content": text}]
        return messages, user.with_system(prompts.AGENT_SYSTEM)

    def _user_prompt(self, ws: Workspace, task: Task, job: Job, max_notes: int) -> Filled:
        keys, req = task.id_to_key, job.req
        topic = task.title
        if req.action == Action.RETRIEVE:
            ref = req.reference
            return fill(prompts.RETRIEVE, title=task.title, abstract=_short(task.abstract), key=keys[ref.id],
                        ref_title=ref.title, ref_abstract=ref.abstract)
        if req.action == Action.DISSEMINATE:
            return fill(prompts.DISSEMINATE, title=task.title, notes=_notes_block(ws.unshared(req.agent), keys))
        if req.action == Action.COMPOSE and job.segment_id is not None:
            segment = ws.segment(job.segment_id)
            problems = "\n".join(f"- ({f.id}) {f.text}" for f in ws.open_feedback() if f.segment_id == segment.id)
            cited = set(task.key_to_id[k] for k in find_citation_keys(segment.text) if k in task.key_to_id)
            notes = [n for n in ws.global_notes + ws.local_notes[req.agent] if set(n.sources) & cited]
            return fill(prompts.REVISE, topic=topic, title=task.title, segment_id=segment.id, text=segment.text,
                        problems=problems, knowledge=_notes_block(notes[:max_notes], keys), rules=self.rules)
        if req.action == Action.COMPOSE:
            cited = ", ".join(dict.fromkeys(keys[s] for n in job.notes for s in n.sources))
            knowledge = _notes_block(list(job.notes)[:max_notes], keys)
            if self.compose_form == "themed":
                comparison = prompts.COMPOSE_COMPARISON if len(set(s for n in job.notes for s in n.sources)) > 1 else ""
                return fill(prompts.COMPOSE_THEMED, topic=topic, title=task.title, paper=task.abstract,
                            outline=outline_block(ws, task), knowledge=knowledge, keys=cited, comparison=comparison,
                            rules=self.rules)
            if self.compose_form == "sentences":
                return fill(prompts.COMPOSE_SENTENCES, topic=topic, outline=outline_block(ws, task), keys=cited,
                            knowledge=knowledge, rules=self.rules)
            n_sentences, words = compose_length(self.compose_sources)
            return fill(prompts.COMPOSE, topic=topic, abstract=_short(task.abstract, 50),
                        outline=outline_block(ws, task), keys=cited, sentences=n_sentences, words=words,
                        rules=self.rules, knowledge=knowledge)
        if self.edition == prompts.RECORDED_EDITION:
            return fill(prompts.CRITIQUE, title=task.title, keys=", ".join(task.keys), draft=_draft_block(ws),
                        knowledge=_notes_block(ws.global_notes[-max_notes:] if max_notes > 0 else [], keys))
        # Since edition 2026-12-06.1: the paragraphs not reviewed in the form they have now, and the notes on the
        # works they cite (a paragraph reviewed and unchanged is not paid for again).
        shown = [s for s in ws.draft if (s.id, s.version) not in self._reviewed] or list(ws.draft)
        cited = {task.key_to_id[k] for s in shown for k in find_citation_keys(s.text) if k in task.key_to_id}
        notes = [n for n in ws.global_notes if set(n.sources) & cited]
        return fill(prompts.CRITIQUE, title=task.title, keys=", ".join(task.keys),
                    draft="\n".join(f"{s.id}: {s.text}" for s in shown),
                    knowledge=_notes_block(notes[:max_notes], keys))

    # ------------------------------------------------------------------ one round
    def plan(self, ws: Workspace, task: Task, requests: list[ActionRequest]) -> list[Job | Proposal]:
        """What each request needs: an LLM call (a :class:`Job`), or a proposal made without one —
        a paper already read this episode or known by its title only, the text checks' findings,
        or nothing new to compose from (a counted no-op)."""
        out: list[Job | Proposal] = []
        claimed_segments: set[int] = set()
        claimed_sources: set[str] = set()
        findings_raised = reviewing = False
        for req in requests:
            if req.action == Action.RETRIEVE:
                out.append(self._plan_retrieve(task, req))
            elif req.action == Action.COMPOSE:
                out.append(self._plan_compose(ws, task, req, claimed_segments, claimed_sources))
            elif req.action == Action.DISSEMINATE and len(ws.unshared(req.agent)) <= self.share_as_is:
                # One-sentence notes, few enough to share as they are: nothing to condense, no call.
                out.append(Proposal(req.agent, req.action, 1.0, notes=list(ws.unshared(req.agent))))
            elif req.action == Action.CRITIQUE:
                checked = None if findings_raised else self._checked_critique(ws, task, req)
                findings_raised = findings_raised or checked is not None
                out.append(checked or self._plan_critique(ws, req, reviewing))
                reviewing = reviewing or isinstance(out[-1], Job)
            else:
                out.append(Job(req))
        return out

    def _plan_critique(self, ws: Workspace, req: ActionRequest, reviewing: bool) -> Job | Proposal:
        """A Critique's call, or since edition 2026-12-06.1 a counted no-op where it would review what a Critique saw:
        a teammate's this round (``reviewing``), or every paragraph in its present form."""
        if self.edition == prompts.RECORDED_EDITION:
            return Job(req)
        if reviewing:
            return Proposal(req.agent, req.action, fallback="a teammate reviews the draft this round")
        if ws.draft and all((s.id, s.version) in self._reviewed for s in ws.draft):
            return Proposal(req.agent, req.action, fallback="the draft was reviewed as it stands")
        return Job(req)

    def _plan_retrieve(self, task: Task, req: ActionRequest) -> Job | Proposal:
        ref = req.reference
        if ref is None:
            return Proposal(req.agent, req.action, fallback="nothing left to read")
        if title_only(ref):  # nothing to read beyond the title: a note that claims no more than it
            note = Note(f"{ref.title.rstrip('.')} (known by its title only) [{task.id_to_key[ref.id]}].", (ref.id,),
                        req.agent)
            return Proposal(req.agent, req.action, 1.0, notes=[note], reference_id=ref.id)
        known = self._read.get((task.target_id, ref.id))
        if known is not None:  # a teammate read it earlier this episode: the same notes, no second call
            notes = [Note(text, (ref.id,), req.agent) for text in known]
            return Proposal(req.agent, req.action, 1.0, notes=notes, reference_id=ref.id)
        return Job(req)

    def _plan_compose(self, ws: Workspace, task: Task, req: ActionRequest, claimed_segments: set[int],
                      claimed_sources: set[str]) -> Job | Proposal:
        """A revision of a flagged paragraph first; else a new paragraph on works the draft does not cite
        yet (each composer of a round gets its own works, so no two write the same paragraph).

        ``own_notes_first``: an agent that holds the only notes on an uncited work (read, not shared) writes
        its new paragraph before taking a revision, which a teammate can do as well.
        """
        if self.own_notes_first and self._holds_unshared_uncited(ws, task, req.agent):
            job = self._new_paragraph(ws, task, req, claimed_sources, claimed_segments)
            if job is not None:
                return job
        for item in revisable_feedback(ws):
            if item.segment_id not in claimed_segments:
                claimed_segments.add(item.segment_id)
                return Job(req, segment_id=item.segment_id)
        return (self._new_paragraph(ws, task, req, claimed_sources, claimed_segments)
                or Proposal(req.agent, req.action, fallback="nothing new to compose from"))

    def _holds_unshared_uncited(self, ws: Workspace, task: Task, agent: int) -> bool:
        shared = {s for n in ws.global_notes for s in n.sources}
        return any(set(n.sources) - shared for n in uncovered_notes(ws, task, agent) if n in ws.local_notes[agent])

    def _new_paragraph(self, ws: Workspace, task: Task, req: ActionRequest, claimed_sources: set[str],
                       claimed_segments: set[int]) -> Job | None:
        """Works the draft does not cite yet, for one new paragraph — or, themed, for the paragraph the draft
        already has on their theme (one theme, one paragraph: the new works extend it; ``extends``); while another
        agent revises or extends that paragraph this round, for a second one that the finished section joins to it."""
        notes = [n for n in uncovered_notes(ws, task, req.agent) if not set(n.sources) & claimed_sources]
        available = list(dict.fromkeys(s for n in notes for s in n.sources))  # most relevant first
        theme, extends, paragraph = None, None, None
        if self.compose_form == "themed":  # a work known by its title only has no sentence the checks keep: a job
            available = [s for s in available if s in task.readable_ids]  # of such works alone was lost (re-asked)
        if self.compose_form == "themed" and available:
            theme, sources = self._theme_sources(ws, task, available)
            paragraph = theme_paragraph(ws, task, theme)
            # while a teammate revises or extends the theme's paragraph this round, a second paragraph on the theme,
            # joined to it when the section is finished (Trace.finish)
            extends = paragraph if paragraph not in claimed_segments else None
        else:
            sources = related_sources(available[0], available, task, self.compose_sources) if available else []
        chosen = tuple(n for n in notes if set(n.sources) <= set(sources))
        if not chosen or len(sources) < (1 if theme is not None and paragraph is not None
                                         else ws.compose_min_sources):
            return None
        claimed_sources.update(sources)
        if extends is not None:
            claimed_segments.add(extends)
        return Job(req, notes=chosen, theme=theme, extends=extends)

    def pool_themes(self, task: Task) -> list[Theme]:
        """The pool's themes (crewlib.env.themes), grouped once an episode: a theme keeps its paragraph throughout."""
        if task.target_id not in self.themes:
            texts = {k: f"{r.title}. {r.abstract}" for k, r in task.reference_by_key.items()}
            self.themes[task.target_id] = group_themes(
                task.keys, texts, {k: frozenset(r.citations) for k, r in task.reference_by_key.items()},
                task.key_to_id, self.compose_sources)
        return self.themes[task.target_id]

    def _theme_sources(self, ws: Workspace, task: Task, available: list[str]) -> tuple[Theme, list[str]]:
        """The theme to write about and the works of it a paragraph is written from. First the themes that can be
        written without another theme's works: a paragraph on them to extend (or, while a teammate revises or
        extends it this round, to join at the end), or ``env.compose_min_sources`` works ready (read, not cited,
        not claimed); among them the most works ready (ties: the most relevant work). Only when no theme can, the
        one chosen is filled up with the closest other ready works (demo target 0 put PPO beside an attention paper
        that way while the attention paper's theme had a paragraph to join). The themes: :meth:`pool_themes`."""
        themes = self.pool_themes(task)
        rank = {s: i for i, s in enumerate(available)}
        ready = [[s for s in available if task.id_to_key[s] in t.keys] for t in themes]
        paragraph = [theme_paragraph(ws, task, t) for t in themes]
        whole = [bool(ready[i]) and (len(ready[i]) >= ws.compose_min_sources or paragraph[i] is not None)
                 for i in range(len(themes))]
        best = max(range(len(themes)), key=lambda i: (whole[i], len(ready[i]),
                                                      -min((rank[s] for s in ready[i]), default=0)))
        members = ready[best][: self.compose_sources + 1]
        if len(members) < ws.compose_min_sources and paragraph[best] is None:
            others = [s for s in available if s not in members]
            members += related_sources(members[0], [members[0], *others], task, ws.compose_min_sources)[1:]
        return themes[best], members

    def _checked_critique(self, ws: Workspace, task: Task, req: ActionRequest) -> Proposal | None:
        """The text checks' findings not yet raised, as feedback without an LLM call; None if there are none."""
        raised = {(f.segment_id, f.check) for f in ws.open_feedback()}
        items = []
        for segment in ws.draft:
            for finding in segment_findings(segment, ws, task):
                if finding.check in TEXT_CHECKS and (segment.id, finding.check) not in raised:
                    items.append((finding.kind, segment.id, finding.text, finding.check))
                    raised.add((segment.id, finding.check))
        missing = uncovered_sources(ws, task)
        if missing and (None, "uncited_read") not in raised:
            keys = ", ".join(sorted((task.id_to_key[s] for s in missing), key=lambda k: int(k[1:])))
            items.append(("coverage_gap", None, f"works the team read are not cited yet: {keys}", "uncited_read"))
        if not items:
            return None
        target = next((seg for _, seg, _, _ in items if seg is not None), None)
        return Proposal(req.agent, req.action, 1.0, segment_id=target, feedback=items)

    def schema(self, ws: Workspace, task: Task, job: Job) -> type[pydantic.BaseModel]:
        """The answer's schema; a paragraph must cite the works it is written from (a revision: any known work;
        with ``salvage_paragraphs``, a revision citing nothing has its sentences given the key of the paragraph's
        work that holds them, as ``attribute_uncited`` does for new paragraphs)."""
        if job.req.action != Action.COMPOSE:
            return SCHEMAS[job.req.action]
        keys = task.id_to_key
        if job.segment_id is None:
            allowed = {keys[s] for n in job.notes for s in n.sources}
            if self.compose_form == "themed":
                earlier = [s for seg in ws.draft for s in sentences(seg.text)]
                own = one_work_notes(job.notes)
                # a work's sentence rests on what the reader can check, its abstract and text, not on the team's
                # notes: a note-only sentence was the unsupported one of `crew write --tex` (the benchmark's count)
                return themed_schema(frozenset(allowed), task.title, task.abstract,
                                     work_texts(own, allowed, task), self.checks.support_threshold, earlier,
                                     {k: task.reference_by_key[k].title for k in allowed},
                                     sentence_gate(task, self.checks, None, earlier))
            if self.compose_form == "sentences":
                return sentences_schema(frozenset(allowed))
            if self.attribute_uncited:
                sources = work_texts(job.notes, allowed, task)
                return compose_schema(frozenset(allowed), sources, compose_length(self.compose_sources)[1],
                                      self.salvage_paragraphs)
            return compose_schema(frozenset(allowed), max_words=compose_length(self.compose_sources)[1],
                                  salvage=self.salvage_paragraphs)
        known = {s for n in ws.global_notes + ws.local_notes[job.req.agent] for s in n.sources}
        cited = set(find_citation_keys(ws.segment(job.segment_id).text)) & set(task.keys)
        allowed = {keys[s] for s in known} | cited
        sources = None
        if self.salvage_paragraphs:  # a revision that lost every citation: each sentence gets its source's key back
            sources = work_texts(ws.global_notes + ws.local_notes[job.req.agent], cited, task)
        return compose_schema(frozenset(allowed), sources or None, salvage=self.salvage_paragraphs)

    def run_round(self, ws, task, requests, t):
        """Turn one round's action requests into proposals (the :class:`~crewlib.env.executors.Executor` interface).

        Inputs: the workspace and task (read, never changed here), the agents' ``requests`` and the round ``t``.
        Each request that needs the LLM becomes one chat request with its action's schema and token budget,
        and the round's requests are sent as one batch; a request with nothing to do, or an LLM error, becomes a
        no-op proposal with its counted ``fallback`` reason. Returns the proposals (in request order) and the
        round's cost: calls, tokens, fallbacks and the ledger records."""
        mark = self.client.ledger.mark()
        planned = self.plan(ws, task, requests)
        jobs = [p for p in planned if isinstance(p, Job)]
        schemas = [self.schema(ws, task, j) for j in jobs]
        # Compose's wording and Critique's content differ by edition; Retrieve and Disseminate keep their cache keys.
        batch = []
        for j, schema in zip(jobs, schemas, strict=True):
            messages, parts = self.prompt(ws, task, j.req, j)
            batch.append(ChatRequest(messages, caller=Caller(self.system, ROLE[j.req.action], j.req.agent, t,
                                                             parts_text(parts)),
                                     schema=schema, max_tokens=self.max_tokens[ROLE[j.req.action]],
                                     prompt_version=(self.edition if j.req.action in (Action.COMPOSE, Action.CRITIQUE)
                                                     else prompts.PROMPT_VERSION),
                                     sample_index=t))
        answered = iter(schemas)  # read after the batch: a compose schema counts what its validator changed
        outcomes = iter(self.client.batch(batch, return_exceptions=True))
        proposals, closings = [], []  # closings: this round's themed paragraphs' closing sentences
        cost = RoundCost()
        for item in planned:
            if isinstance(item, Proposal):
                proposals.append(item)
            else:
                outcome, schema = next(outcomes), next(answered)
                if isinstance(outcome, LLMError):
                    reason = f"{type(outcome).__name__}: {str(outcome)[:120]}"
                    proposals.append(Proposal(item.req.agent, item.req.action, fallback=reason))
                else:
                    if item.req.action == Action.CRITIQUE:
                        self._reviewed |= {(s.id, s.version) for s in ws.draft}
                    if item.theme is not None:
                        self._distinct_closing(ws, task, item, outcome.parsed, closings)
                    proposals.append(self._proposal(ws, task, item, outcome.parsed))
                    self.attributed += getattr(schema, "attributed", 0)
                    self.dropped += getattr(schema, "dropped", 0)
                    if item.theme is not None:
                        self._record_paragraph(task, item, outcome.parsed, schema)
            if proposals[-1].is_noop:
                cost.fallbacks += 1
                cost.fallback_reasons.append(proposals[-1].fallback)
        cost.ledger_records = self.client.ledger.since(mark)
        cost.calls = len(cost.ledger_records)
        cost.tokens = sum(r.prompt_tokens + r.completion_tokens for r in cost.ledger_records)
        return proposals, cost

    def _distinct_closing(self, ws: Workspace, task: Task, job: Job, out, closings: list[str]) -> None:
        """A themed paragraph's closing that repeats one a teammate wrote in the same round (neither saw the other's;
        the final checks would remove the second) replaced by the paper's next sentence (``positions_replaced``)."""
        position = out.parts.position
        if position and any(repeats_sentence(position, c, CLOSING_REPEAT) for c in closings):
            keys = {task.id_to_key[s] for n in job.notes for s in n.sources}
            texts = list(work_texts(job.notes, keys, task).values())
            earlier = [*closings, *(s for seg in ws.draft for s in sentences(seg.text))]
            out.reclose(fallback_position(out.relation, task.abstract, " ".join(texts), earlier, texts) or "")
            self.themed_counts["positions_replaced"] += 1
        closings.append(out.parts.position)

    def complete_draft(self, ws: Workspace, task: Task) -> list[str] | None:
        """The draft's paragraphs at the episode's end completed from the team's notes
        (:func:`~crewlib.env.notes_finish.complete_from_notes`; ``executor.finish_from_notes``, themed Compose only;
        counted ``finished_from_notes``); None when the setting is off."""
        if not (self.finish_from_notes and self.compose_form == "themed"):
            return None
        return complete_from_notes(ws, task, self.themes.get(task.target_id, []), self.checks, self.themed_counts)

    def _record_paragraph(self, task: Task, job: Job, out: pydantic.BaseModel, schema) -> None:
        """A themed paragraph's theme (the grouping's works and the composer's name for it), its works, the
        relation and closing sentence, for the trace and summary.json; its validator's counts."""
        self.paragraphs.append({
            "round_agent": job.req.agent, "theme_works": list(job.theme.keys), "theme": out.theme.strip(),
            "extends": job.extends,
            "works": sorted({task.id_to_key[s] for n in job.notes for s in n.sources}, key=lambda k: (len(k), k)),
            "relation": out.relation, "closing": out.position_sentence})
        for name in COUNTS[1:]:  # its dropped sentences count in ``dropped``
            self.themed_counts[name] += getattr(schema, name, 0)
        self.themed_counts["paragraphs_extended"] += job.extends is not None

    def theme_report(self, task: Task, section: str = "") -> dict:
        """The pool's last grouping into themes, each themed paragraph written, and how many paragraphs of the
        finished ``section`` cite works of more than one theme (``mixed_paragraphs``: found, not repaired) —
        for ``trace.json`` and ``summary.json``."""
        themes = self.themes.get(task.target_id, [])
        mixed = sum(len({t.id for t in themes for k in find_citation_keys(block) if k in t.keys}) > 1
                    for block in paragraphs(section))
        return {"themes": [list(t.keys) for t in themes], "paragraphs": list(self.paragraphs),
                "counts": {**self.themed_counts, "mixed_paragraphs": mixed}}

    def _kept_structure(self, ws: Workspace, segment_id: int, new: str, task: Task) -> str:
        """A revision of a themed paragraph keeps the structure its Compose validated
        (:func:`crewlib.env.themed_compose.revised_paragraph`; the open feedback on it may remove a part)."""
        if self.compose_form != "themed":
            return new
        flagged = " ".join(f.text for f in ws.open_feedback() if f.segment_id == segment_id)
        return revised_paragraph(ws.segment(segment_id).text, new, flagged, task.title, self.themed_counts)

    def _proposal(self, ws: Workspace, task: Task, job: Job, out: pydantic.BaseModel) -> Proposal:
        key_to_id, req = task.key_to_id, job.req
        if req.action == Action.RETRIEVE:
            texts = [n.strip() for n in out.notes if n.strip()]
            if self.check_notes:
                texts = mend_notes(texts)
                kept = [n for n in texts if not about_target(n, task, req.reference)]
                self.notes_dropped += len(texts) - len(kept)
                texts = kept
            self._read[(task.target_id, req.reference.id)] = texts
            if not texts:
                return Proposal(req.agent, req.action, fallback="every note was about the target, not the work read",
                                reference_id=req.reference.id)
            notes = [Note(text, (req.reference.id,), req.agent) for text in texts]
            return Proposal(req.agent, req.action, out.confidence, notes=notes, reference_id=req.reference.id)
        if req.action == Action.DISSEMINATE:
            fallback_sources = tuple(dict.fromkeys(s for n in ws.unshared(req.agent) for s in n.sources))
            notes = []
            for text in out.notes:
                sources = tuple(dict.fromkeys(key_to_id[k] for k in find_citation_keys(text) if k in key_to_id))
                notes.append(Note(text.strip(), sources or fallback_sources, req.agent))
            return Proposal(req.agent, req.action, out.confidence, notes=notes)
        if req.action == Action.COMPOSE:
            # The paragraph is the one the job named (a revision) or a new one, whatever id the model wrote.
            open_ids = {f.id for f in ws.open_feedback() if f.segment_id == job.segment_id}
            text = one_paragraph(out.text, self.keep_opening_markers)
            if job.segment_id is not None:
                text = self._kept_structure(ws, job.segment_id, text, task)
            if job.extends is not None and ws.segment(job.extends) is not None:
                body = one_paragraph(" ".join(out.parts.body), self.keep_opening_markers)
                return Proposal(req.agent, req.action, out.confidence, segment_id=job.extends,
                                text=extended_paragraph(ws.segment(job.extends).text, body, out.parts.position,
                                                        task.title))
            return Proposal(req.agent, req.action, out.confidence, segment_id=job.segment_id, text=text,
                            resolves=[i for i in out.resolves if i in open_ids] if job.segment_id is not None else [])
        items = [(f.kind, f.segment_id if f.segment_id is None or ws.segment(f.segment_id) else None, f.text,
                  None) for f in out.feedback]
        if not items:
            return Proposal(req.agent, req.action, fallback="the critic found no problems")
        target = next((seg for _, seg, _, _ in items if seg is not None), None)
        return Proposal(req.agent, req.action, out.confidence, segment_id=target, feedback=items)
