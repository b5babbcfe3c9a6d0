"""The episode trace: every round's actions, masks, proposals, rewards, edits, feedback and LLM calls.

Saved as JSON; the final draft is rendered as Markdown with its citations resolved to the pool
and citation verification computed.
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path

import pydantic

from crewlib.citations import check_citations, find_citation_keys
from crewlib.env.themed_compose import merge_theme_paragraphs
from crewlib.sections import OutputChecks, finish_section, overlap
from crewlib.text import sentences


@dataclass
class EpisodeTrace:
    target_id: str
    title: str
    executor: str
    config: dict
    reference_keys: dict[str, str]  # R# -> reference id
    reference_titles: dict[str, str]
    rounds: list[dict] = field(default_factory=list)
    final_draft: str = ""
    citation_check: dict = field(default_factory=dict)
    output_checks: dict = field(default_factory=dict)  # what the final section's checks repaired or found
    edits: dict = field(default_factory=dict)  # repeats merged / rejected, markers de-duplicated, segments removed
    # keys the draft cited at some point and no longer cites when the episode ends (the final checks' removals of
    # unsupported citations are counted in output_checks, not here)
    lost_citations: list = field(default_factory=list)
    themes: dict = field(default_factory=dict)  # themed Compose: the pool's themes and each paragraph's theme
    feedback: list[dict] = field(default_factory=list)  # every item raised: flagged → fixed, with its rounds

    @classmethod
    def start(cls, example, task, executor_name: str, config) -> EpisodeTrace:
        return cls(example.target_id, example.title, executor_name, _jsonable(dataclasses.asdict(config)),
                   task.key_to_id, {r.id: r.title for r in task.references})

    def add_round(self, t, actions, masks, proposals, accepted, overruled, terms, quality, counts, cost, ws,
                  wall_s) -> None:
        self.rounds.append({
            "t": t,
            "actions": {a: None if v is None else int(v) for a, v in actions.items()},  # None: idle
            "masks": {a: m.tolist() for a, m in masks.items()},
            "proposals": [_proposal(p, p in accepted) for p in proposals],
            "overruled": [p.agent for p in overruled if not p.is_noop],
            "reward": dataclasses.asdict(terms),
            "quality": dataclasses.asdict(quality),
            "feedback_counts": counts,
            "open_feedback": [dataclasses.asdict(f) for f in ws.open_feedback()],
            "draft_words": len(ws.draft_text.split()),
            "llm": {"calls": cost.calls, "tokens": cost.tokens, "fallbacks": cost.fallbacks,
                    "fallback_reasons": cost.fallback_reasons,
                    "records": [dataclasses.asdict(r) for r in cost.ledger_records]},
            "wall_s": round(wall_s, 4),
        })

    def finish(self, ws, task, checks: OutputChecks, themes: Iterable[tuple[str, ...]] = (),
               texts: list[str] | None = None) -> None:
        """The final section: paragraphs on one theme joined into one (``themes``: the keys of each theme of a
        themed Compose; two agents may write on one theme in the same round), one-sentence segments joined to their
        closest paragraph, the paragraphs in thematic order, through the output checks every system passes (the
        team's notes are evidence beside the abstracts). ``texts``: the draft's paragraphs as the executor completed
        them (``LLMExecutor.complete_draft``), else the draft's own."""
        rank = {k: i for i, k in enumerate(task.keys)}
        drafted = [s.text for s in ws.draft] if texts is None else texts
        texts, merged = merge_theme_paragraphs(drafted, list(themes), task.title)
        blocks, joined = join_short_paragraphs(texts)
        ordered = "\n\n".join(order_paragraphs(blocks, rank))
        self.final_draft, report = finish_section(ordered, task, checks, notes_by_key(ws, task))
        self.output_checks = report.to_dict()
        self.edits = {**ws.edits, "joined_paragraphs": joined, "theme_paragraphs_merged": merged}
        self.lost_citations = sorted(ws.ever_cited - set(find_citation_keys(ws.draft_text)), key=lambda k: (len(k), k))
        self.feedback = [dataclasses.asdict(f) for f in ws.feedback]
        check = check_citations(self.final_draft, task.key_to_id)
        self.citation_check = {"markers": check.markers, "resolved": check.resolved,
                               "verification": check.verification, "unresolved_keys": list(check.unresolved_keys),
                               "cited_ids": list(check.cited_ids), "stray": list(check.stray)}

    @property
    def actions_matrix(self) -> list[list[int]]:
        """rounds × agents action indices."""
        return [list(r["actions"].values()) for r in self.rounds]

    @property
    def totals(self) -> dict:
        return {
            "rounds": len(self.rounds),
            "return": sum(r["reward"]["total"] for r in self.rounds),
            "llm_calls": sum(r["llm"]["calls"] for r in self.rounds),
            "tokens": sum(r["llm"]["tokens"] for r in self.rounds),
            "fallbacks": sum(r["llm"]["fallbacks"] for r in self.rounds),
            "wall_s": sum(r["wall_s"] for r in self.rounds),
            "final_quality": self.rounds[-1]["quality"] if self.rounds else {},
        }

    def to_markdown(self) -> str:
        key_titles = {k: self.reference_titles[i] for k, i in self.reference_keys.items()}
        cited = [k for k, i in self.reference_keys.items() if i in self.citation_check.get("cited_ids", [])]
        lines = [f"# Related work — {self.title}", "", self.final_draft or "_(empty draft)_", "", "## References", ""]
        lines += [f"- [{k}] {key_titles[k]}" for k in cited]
        check = self.citation_check
        verification = check.get("verification")
        share = "no citation to verify" if verification is None else f"{verification:.0%}"
        lines += ["", f"_CREW, {self.executor} executor, {len(self.rounds)} rounds. Citation verification: "
                      f"{check.get('resolved', 0)}/{check.get('markers', 0)} markers resolve ({share})"
                      + (f"; unresolved: {', '.join(check['unresolved_keys'])}" if check.get("unresolved_keys") else "")
                      + "._"]
        return "\n".join(lines) + "\n"

    def save(self, folder: str | Path) -> Path:
        folder = Path(folder)
        folder.mkdir(parents=True, exist_ok=True)
        (folder / "trace.json").write_text(json.dumps(_jsonable(dataclasses.asdict(self)), indent=1))
        (folder / "related_work.md").write_text(self.to_markdown())
        return folder


def notes_by_key(ws, task) -> dict[str, str]:
    """Key → every note the team took on that work (global and local knowledge)."""
    out: dict[str, list[str]] = {}
    for note in ws.global_notes + [n for notes in ws.local_notes for n in notes]:
        for source in note.sources:
            if source in task.id_to_key:
                out.setdefault(task.id_to_key[source], []).append(note.text)
    return {k: " ".join(dict.fromkeys(v)) for k, v in out.items()}


def _proposal(p, accepted: bool) -> dict:
    return {"agent": p.agent, "action": p.action.name, "confidence": p.confidence, "segment_id": p.segment_id,
            "reference_id": p.reference_id, "notes": [n.text for n in p.notes], "text": p.text,
            "feedback": [list(f) for f in p.feedback], "resolves": p.resolves, "fallback": p.fallback,
            "accepted": accepted}


def _jsonable(value):
    if isinstance(value, pydantic.BaseModel):  # a params block (the reward weights, the caps)
        return _jsonable(value.model_dump())
    if isinstance(value, dict):
        return {str(k): _jsonable(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_jsonable(v) for v in value]
    if hasattr(value, "item"):
        return value.item()
    return value


def join_short_paragraphs(blocks: Iterable[str]) -> tuple[list[str], int]:
    """Each one-sentence paragraph appended to the paragraph it shares the most content with (a
    revision that cut a paragraph to one sentence leaves an orphan); returns the paragraphs and
    how many were joined. A section of one-sentence paragraphs only is left as it is."""
    blocks = list(blocks)
    long = [i for i, b in enumerate(blocks) if len(sentences(b)) > 1]
    if not long:
        return blocks, 0
    joined = {i: blocks[i] for i in long}
    for j, block in enumerate(blocks):
        if j not in joined:
            host = max(long, key=lambda i: overlap(blocks[i], block))
            joined[host] = f"{joined[host]} {block}"
    return [joined[i] for i in long], len(blocks) - len(long)


def order_paragraphs(blocks: Iterable[str], rank: dict[str, int]) -> list[str]:
    """Thematic order without an LLM: start from the paragraph citing the most relevant work, then
    always continue with the remaining paragraph closest in content (ties: more relevant works first).

    ``rank``: citation key → its position in the pool's relevance order.
    """
    remaining = list(blocks)

    def first_rank(block: str) -> int:
        return min((rank.get(k, len(rank)) for k in find_citation_keys(block)), default=len(rank))

    ordered: list[str] = []
    while remaining:
        if not ordered:
            nxt = min(remaining, key=first_rank)
        else:
            nxt = max(remaining, key=lambda b: (overlap(b, ordered[-1]), -first_rank(b)))
        ordered.append(nxt)
        remaining.remove(nxt)
    return ordered
