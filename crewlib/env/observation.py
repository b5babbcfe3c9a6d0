"""The 20 observation features (docs/method.md), each in [0, 1], computed without the gold section.

The function only receives the workspace and the :class:`Task` (target, pool, relevance,
centrality); the gold related work is not among its inputs. :data:`FEATURE_GROUPS` names the
groups an ablation may mask (``env.masked_features``): the *social* features are what an agent
knows of its teammates — the team's reading and the peers' last actions.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

import numpy as np

from crewlib.actions import Action
from crewlib.citations import find_citation_keys
from crewlib.env.checks import (
    check_sentence,
    knowledge,
    n_sources,
    revisable_feedback,
    uncovered_notes,
    uncovered_sources,
)
from crewlib.env.reward import sim
from crewlib.env.workspace import Workspace
from crewlib.schema import CapsBlock
from crewlib.tasks import Task
from crewlib.text import sentences, word_count

FEATURE_NAMES = (
    "read_share_self", "read_share_team", "local_knowledge_size", "local_unshared_share", "global_knowledge_size",
    "best_unread_relevance", "best_unread_centrality", "global_relevance", "draft_length", "cited_share",
    "citation_validity", "draft_relevance", "draft_supported", "open_feedback", "rounds_since_draft_change",
    "peers_retrieve", "peers_disseminate", "peers_compose", "peers_critique", "time",
)

FEATURE_GROUPS: dict[str, tuple[str, ...]] = {
    "self": ("read_share_self", "local_knowledge_size", "local_unshared_share"),
    "social": ("read_share_team", "peers_retrieve", "peers_disseminate", "peers_compose", "peers_critique"),
    "pool": ("best_unread_relevance", "best_unread_centrality"),
    "knowledge": ("global_knowledge_size", "global_relevance"),
    "draft": ("draft_length", "cited_share", "citation_validity", "draft_relevance", "draft_supported",
              "open_feedback", "rounds_since_draft_change"),
    "time": ("time",),
}


def feature_indices(names: Iterable[str]) -> tuple[int, ...]:
    """Indices of the named features or groups (``["social", "time"]``); an unknown name raises."""
    out: list[int] = []
    for name in names:
        members = FEATURE_GROUPS.get(name, (name,))
        for member in members:
            if member not in FEATURE_NAMES:
                raise ValueError(f"env.masked_features: {name!r} is neither a feature nor a group; groups: "
                                 f"{sorted(FEATURE_GROUPS)}, features: {list(FEATURE_NAMES)}")
            out.append(FEATURE_NAMES.index(member))
    return tuple(sorted(set(out)))


@dataclass(frozen=True)
class DraftStats:
    """Per-round draft statistics shared by every agent's observation."""

    length: float
    cited_share: float
    validity: float
    relevance: float
    supported: float
    global_relevance: float


def draft_stats(ws: Workspace, task: Task) -> DraftStats:
    draft = ws.draft_text
    keys = find_citation_keys(draft)
    key_to_id = task.key_to_id
    valid = [k for k in keys if k in key_to_id]
    notes = knowledge(ws)
    sents = sentences(draft)
    supported = sum(check_sentence(s, notes, task, ws.check_cache).supported for s in sents)
    return DraftStats(
        length=min(1.0, word_count(draft) / task.target_words),
        cited_share=len({key_to_id[k] for k in valid}) / len(task.references),
        validity=len(valid) / len(keys) if keys else 0.0,
        relevance=sim(draft, task.target_text),
        supported=supported / len(sents) if sents else 0.0,
        global_relevance=sim(ws.global_text, task.target_text),
    )


def observe(ws: Workspace, task: Task, agent: int, t: int, horizon: int, stats: DraftStats,
            caps: CapsBlock) -> np.ndarray:
    """The observation of ``agent`` at round ``t`` (float32, shape (20,)); ``caps``: ``env.caps``, the counts
    that normalise features 13-15."""
    n_pool = len(task.references)
    read_self = set(ws.read_log[agent])
    read_team = {r for log in ws.read_log for r in log}
    unread = [r.id for r in task.references if r.id not in read_self]
    local = ws.local_notes[agent]
    peers = [a for a in range(ws.n_agents) if a != agent]
    peer_share = [sum(ws.last_action[p] == action for p in peers) / max(1, len(peers)) for action in Action]
    features = [
        len(read_self) / n_pool,
        len(read_team) / n_pool,
        min(1.0, len(local) / caps.local_notes),
        len(ws.unshared(agent)) / len(local) if local else 0.0,
        min(1.0, len(ws.global_notes) / caps.global_notes),
        max((task.relevance[r] for r in unread), default=0.0),
        max((task.centrality[r] for r in unread), default=0.0),
        stats.global_relevance,
        stats.length,
        stats.cited_share,
        stats.validity,
        stats.relevance,
        stats.supported,
        min(1.0, len(ws.open_feedback()) / caps.feedback),
        min(1.0, (t - ws.last_draft_change) / horizon),
        *peer_share,
        min(1.0, t / horizon),
    ]
    return np.clip(np.asarray(features, dtype=np.float32), 0.0, 1.0)


def action_mask(ws: Workspace, task: Task, agent: int) -> np.ndarray:
    """1 for the actions that can change something (an action that cannot costs no LLM call):
    Retrieve while the agent has unread papers; Disseminate with unshared notes; Compose with
    knowledge of at least ``ws.compose_min_sources`` works the draft does not cite yet, or open
    feedback on a paragraph; Critique when the
    draft changed since the last critique."""
    mask = np.array([
        len(ws.read_log[agent]) < len(task.references),
        bool(ws.unshared(agent)),
        bool(revisable_feedback(ws)) or n_sources(uncovered_notes(ws, task, agent)) >= ws.compose_min_sources,
        bool(ws.draft) and ws.last_draft_change >= ws.last_critique,
    ], dtype=np.int8)
    if not mask.any():
        mask[Action.RETRIEVE] = 1  # nothing is possible: re-reading is the safe no-op
    return mask


def compose_capacity(ws: Workspace, task: Task, min_sources: int) -> int:
    """How many agents can compose something different this round: one per paragraph with open feedback, and
    one per group of ``min_sources`` works that someone has notes on and the draft does not cite."""
    known = {s for n in ws.global_notes + [n for notes in ws.local_notes for n in notes] for s in n.sources}
    uncovered = len(known & uncovered_sources(ws, task))
    return len({f.segment_id for f in revisable_feedback(ws)}) + uncovered // max(min_sources, 1)
