"""CREW as a PettingZoo ``ParallelEnv``: M agents, horizon T, Discrete(4) actions, 20 features.

One round (docs/method.md): every agent picks Retrieve / Disseminate / Compose / Critique; the
environment offers each retriever the most relevant paper it has not read (preferring papers
no teammate read, ties by graph centrality); the executor turns all actions into proposals at
once (the LLM executor calls the model concurrently); the proposals are merged by confidence
and applied; the team reward is the change in draft and knowledge quality plus the feedback
term; every agent observes the new workspace.
"""

from __future__ import annotations

import dataclasses
import functools
import time
from dataclasses import dataclass

import numpy as np
from gymnasium import spaces
from pettingzoo import ParallelEnv

from crewlib.actions import ACTION_NAMES, Action
from crewlib.citations import check_citations, find_citation_keys
from crewlib.data.records import RWGExample
from crewlib.env.checks import feedback_is_real, fixed_feedback
from crewlib.env.executors import ActionRequest, Executor
from crewlib.env.observation import (
    FEATURE_NAMES,
    action_mask,
    compose_capacity,
    draft_stats,
    feature_indices,
    observe,
)
from crewlib.env.reward import Qualities, feedback_quality, qualities, team_reward
from crewlib.env.trace import EpisodeTrace
from crewlib.env.workspace import Proposal, Workspace, merge_proposals
from crewlib.schema import CapsBlock, Params, RewardBlock
from crewlib.sections import OutputChecks
from crewlib.tasks import Task


@dataclass(frozen=True)
class EnvConfig:
    """What the environment reads from params: the ``env`` block and the ``output`` checks, flattened.

    No defaults here: build it with :meth:`from_params` (``params/quick.yaml`` holds every default) and change
    one setting with ``dataclasses.replace`` (``horizon`` is the rounds of one episode; a system that writes
    with CREW sets it from ``baselines.crew.rounds``, training from ``env.horizon``)."""

    n_agents: int
    horizon: int  # rounds of one episode
    relevance: str  # how the pool is ordered: tfidf | embedding
    target_words: int  # feature 9 normalises the draft length by this
    weights: RewardBlock
    caps: CapsBlock
    duplicate_threshold: float  # a segment this close to another repeats it (output.duplicate_threshold)
    output: OutputChecks  # the final checks
    compose_min_sources: int  # uncited works a new paragraph needs
    revision_guard: bool  # a revision may not lose a cited work or add a repeat
    round_masks: bool  # Compose / Critique masked at the level of the round
    masked_features: tuple[str, ...]  # features or groups observed as 0 (the social-observation ablation)
    disabled_actions: tuple[str, ...]  # actions removed from the action space (the no-Critique ablation)
    stop_when_done: bool  # end before the horizon once there is nothing left to do (:meth:`CrewEnv.finished`)

    def __post_init__(self) -> None:
        feature_indices(self.masked_features)  # an unknown name fails here, not mid-episode
        unknown = [a for a in self.disabled_actions if a not in ACTION_NAMES]
        if unknown:
            raise ValueError(f"env.disabled_actions: unknown actions {unknown}; known: {list(ACTION_NAMES)}")

    @classmethod
    def from_params(cls, params: Params) -> EnvConfig:
        env = params.env
        return cls(n_agents=env.n_agents, horizon=env.horizon, relevance=env.relevance, target_words=env.target_words,
                   weights=env.reward, caps=env.caps, duplicate_threshold=params.output.duplicate_threshold,
                   output=OutputChecks.from_params(params), compose_min_sources=env.compose_min_sources,
                   revision_guard=env.revision_guard, round_masks=env.round_masks,
                   masked_features=tuple(env.masked_features), disabled_actions=tuple(env.disabled_actions),
                   stop_when_done=False)


class CrewEnv(ParallelEnv):
    metadata = {"name": "crew_v0", "is_parallelizable": True}

    def __init__(self, examples: list[RWGExample], executor: Executor, config: EnvConfig,
                 tasks: list[Task] | None = None) -> None:
        """``tasks``: one per example, from :func:`crewlib.tasks.build_tasks` (graph, pool filter,
        centrality); without them the examples form a corpus of their own, unfiltered."""
        if not examples:
            raise ValueError("CrewEnv needs at least one related-work example")
        self.examples = examples
        self.executor = executor
        self.config = config
        self._masked = list(feature_indices(config.masked_features))
        self._disabled = [ACTION_NAMES.index(a) for a in config.disabled_actions]
        self.possible_agents = [f"agent_{i}" for i in range(config.n_agents)]
        self.agents: list[str] = []
        if tasks is None:  # a standalone environment: the given examples are the whole corpus
            from crewlib.tasks import corpus_tasks

            ids = [e.target_id for e in examples]
            own = corpus_tasks(examples, [], ids, min_connections=0, relevance=config.relevance,
                               target_words=config.target_words)
            tasks = [own.tasks[i] for i in ids]
        if len(tasks) != len(examples) or any(t.target_id != e.target_id for t, e in zip(tasks, examples, strict=True)):
            raise ValueError("CrewEnv: tasks must be given one per example, in the examples' order")
        self._tasks: dict[int, Task] = dict(enumerate(tasks))
        self._rng = np.random.default_rng()
        self.trace: EpisodeTrace | None = None

    # -------------------------------------------------------------- spaces
    @functools.cache  # noqa: B019 - one space object per agent, as PettingZoo expects
    def observation_space(self, agent: str) -> spaces.Box:
        return spaces.Box(0.0, 1.0, shape=(len(FEATURE_NAMES),), dtype=np.float32)

    @functools.cache  # noqa: B019
    def action_space(self, agent: str) -> spaces.Discrete:
        return spaces.Discrete(len(Action))

    # -------------------------------------------------------------- episode
    def task(self, index: int) -> Task:
        return self._tasks[index]

    def reset(self, seed: int | None = None, options: dict | None = None):
        """Start an episode (PettingZoo ``ParallelEnv.reset``).

        Inputs: ``seed`` reseeds the paper draw and the executor (None: continue the current stream);
        ``options["example_index"]`` picks the paper (default: a random one). Changes: the example and its task,
        a fresh :class:`Workspace` (empty draft, notes and feedback), round 0, the trace and the counters of
        invalid and idle actions; the executor is reset. Returns ``(observations, infos)``: each agent's 20
        features and its ``action_mask`` (docs/method.md, "Observation")."""
        if seed is not None:
            self._rng = np.random.default_rng(seed)
        options = options or {}
        self.example_index = int(options.get("example_index", self._rng.integers(len(self.examples))))
        self.example = self.examples[self.example_index]
        self.current_task = self.task(self.example_index)
        self.executor.reset(None if seed is None else seed + self.example_index)
        self.agents = list(self.possible_agents)
        self.t = 0
        self.ws = Workspace(self.config.n_agents, duplicate_threshold=self.config.duplicate_threshold,
                            compose_min_sources=self.config.compose_min_sources,
                            revision_guard=self.config.revision_guard,
                            sentence_threshold=self.config.output.sentence_threshold,
                            positioning=self.config.output.on("positioning"))
        self._quality = self._qualities()
        self.trace = EpisodeTrace.start(self.example, self.current_task, self.executor.name, self.config)
        self.invalid_actions = 0
        self.idle_actions = 0
        return self._observations(), self._infos()

    def step(self, actions: dict[str, int]):
        """Play one round: every agent's action at once (PettingZoo ``ParallelEnv.step``).

        Inputs: ``actions`` maps each live agent to an :class:`~crewlib.actions.Action` (an int), or None for no
        action (an orchestrator's lost assignment; counted idle). An action its mask forbids is counted invalid
        and played as a no-op. Changes: the executor turns the actions into proposals (LLM calls with the LLM
        executor), the merge decides which land, and the workspace takes them (notes read and shared, paragraphs
        written or revised, feedback posted); the round's team reward is computed from the change in quality
        less the token cost; the trace gets the round. After ``config.horizon`` rounds the final section is
        checked (docs/method.md, "Output checks") and the agents list empties. Returns ``(observations,
        rewards, terminations, truncations, infos)``, one entry per agent; the reward is shared."""
        t0 = time.perf_counter()
        ws, task = self.ws, self.current_task
        masks = dict(zip(self.agents, self._masks(), strict=True))
        requests, claimed = [], set()
        for i, agent in enumerate(self.agents):
            if actions[agent] is None:  # no action this round (an orchestrator's lost assignment)
                self.idle_actions += 1
                requests.append(None)
                continue
            action = Action(int(actions[agent]))
            if not masks[agent][action]:
                self.invalid_actions += 1  # an action the mask forbids is carried out as a no-op
                requests.append(None)
                continue
            ref = self._offer(i, claimed) if action == Action.RETRIEVE else None
            if ref is not None:
                claimed.add(ref.id)
            requests.append(ActionRequest(i, action, ref))
        live = [r for r in requests if r is not None]
        proposals, cost = self.executor.run_round(ws, task, live, self.t)
        accepted, overruled = merge_proposals(proposals)
        counts = self._apply(accepted)
        if any(p.action == Action.CRITIQUE for p in proposals):
            ws.last_critique = self.t + 1  # this draft was reviewed (even if nothing was found): wait for a change
        for i, agent in enumerate(self.agents):
            ws.last_action[i] = None if actions[agent] is None else int(actions[agent])
        self.t += 1
        before, self._quality = self._quality, self._qualities()
        q_fb = feedback_quality(counts["real"], counts["resolved"], counts["pointless"], self.config.n_agents)
        terms = team_reward(before, self._quality, q_fb, cost.tokens, self.config.weights)
        rewards = {a: float(terms.total) for a in self.agents}
        done = self.t >= self.config.horizon or (self.config.stop_when_done and self.finished())
        terminations = {a: False for a in self.agents}
        truncations = {a: done for a in self.agents}
        observations, infos = self._observations(), self._infos()
        self.trace.add_round(self.t, actions, masks, proposals, accepted, overruled, terms, self._quality, counts,
                             cost, ws, time.perf_counter() - t0)
        if done:
            themes = getattr(self.executor, "themes", {}).get(task.target_id, [])  # a themed Compose's grouping
            complete = getattr(self.executor, "complete_draft", None)  # the works read and not cited, from the notes
            self.trace.finish(ws, task, dataclasses.replace(self.config.output,
                                                            duplicate_threshold=ws.duplicate_threshold),
                              [t.keys for t in themes], complete(ws, task) if complete else None)
            self.agents = []
        return observations, rewards, terminations, truncations, infos

    def finished(self) -> bool:
        """Nothing left to do: every work of the pool with an abstract is cited in the draft, and the critic has
        reviewed the draft as it stands and left no open problem (``rounds: auto`` stops here; the paper's fixed
        horizon would spend the remaining rounds' calls on nothing)."""
        ws, task = self.ws, self.current_task
        cited = set(check_citations(ws.draft_text, task.key_to_id).cited_ids) if ws.draft else set()
        return (bool(ws.draft) and task.readable_ids <= cited and not ws.open_feedback()
                and ws.last_critique > ws.last_draft_change)

    # -------------------------------------------------------------- internals
    def _offer(self, agent: int, claimed: set[str]):
        """The unread paper for ``agent``: unread by the team first, then by relevance, then degree."""
        ws, task = self.ws, self.current_task
        read_self = set(ws.read_log[agent])
        read_team = {r for log in ws.read_log for r in log} | claimed
        unread = [r for r in task.references if r.id not in read_self]
        if not unread:
            return None
        return min(unread, key=lambda r: (r.id in read_team, -task.relevance[r.id], -task.centrality[r.id]))

    def _apply(self, accepted: list[Proposal]) -> dict[str, int]:
        ws, task = self.ws, self.current_task
        counts = {"real": 0, "pointless": 0, "resolved": 0, "segments_written": 0, "notes_shared": 0}
        order = {Action.RETRIEVE: 0, Action.DISSEMINATE: 1, Action.CRITIQUE: 2, Action.COMPOSE: 3}
        for p in sorted(accepted, key=lambda p: (order[p.action], p.agent)):
            if p.action == Action.RETRIEVE:
                if p.reference_id:
                    ws.read_log[p.agent].append(p.reference_id)
                ws.add_local(p.agent, p.notes)
            elif p.action == Action.DISSEMINATE:
                counts["notes_shared"] += ws.disseminate(p.agent, p.notes)
            elif p.action == Action.CRITIQUE:
                # Judged against the draft the critic saw, before this round's compositions land.
                for kind, segment_id, text, check in p.feedback:
                    counts["real" if feedback_is_real(kind, segment_id, ws, task) else "pointless"] += 1
                    ws.add_feedback(kind, segment_id, text, p.agent, t=self.t + 1, check=check)
            elif p.action == Action.COMPOSE:
                written = ws.write_segment(p.agent, p.text, p.segment_id, self.t + 1)
                counts["segments_written"] += written is not None
                if written is not None or p.segment_id is not None:
                    # A claimed fix of a checked problem counts only if the check no longer finds it (below);
                    # a judgement the reviser answered, even by leaving the text as it was, is settled.
                    claimed = [i for i in p.resolves if not any(f.id == i and f.check for f in ws.feedback)]
                    counts["resolved"] += ws.resolve(claimed, self.t + 1)
        counts["resolved"] += ws.resolve(fixed_feedback(ws, task), self.t + 1)
        return counts

    def _qualities(self) -> Qualities:
        """Quality of draft and knowledge against the gold section (the reward's only use of it)."""
        ws, ex, task = self.ws, self.example, self.current_task
        key_to_id = task.key_to_id
        cited = {key_to_id[k] for k in find_citation_keys(ws.draft_text) if k in key_to_id}
        return qualities(ws.draft_text, cited, [ws.local_text(i) for i in range(ws.n_agents)], ws.global_text,
                         ex.gold_related_work, set(ex.gold_cited_ids), self.config.weights.alpha)

    def _observations(self) -> dict[str, np.ndarray]:
        stats = draft_stats(self.ws, self.current_task)
        out = {}
        for i, a in enumerate(self.agents):
            obs = observe(self.ws, self.current_task, i, self.t, self.config.horizon, stats, self.config.caps)
            obs[self._masked] = 0.0  # ablation: the masked features carry no information
            out[a] = obs
        return out

    def _masks(self) -> list[np.ndarray]:
        """Every agent's action mask this round. With ``round_masks``, Compose is open to as many agents as
        there is material for (a flagged paragraph each, or a group of uncited works each) and Critique to one
        agent; priority rotates with the round, so no agent is always the one left out."""
        masks = [action_mask(self.ws, self.current_task, i) for i in range(self.config.n_agents)]
        if self.config.round_masks:
            order = [(self.t + k) % self.config.n_agents for k in range(self.config.n_agents)]
            compose_slots = compose_capacity(self.ws, self.current_task, self.config.compose_min_sources)
            critique_slots = 1
            for i in order:
                if masks[i][Action.COMPOSE]:
                    masks[i][Action.COMPOSE] = compose_slots > 0
                    compose_slots -= 1
                if masks[i][Action.CRITIQUE]:
                    masks[i][Action.CRITIQUE] = critique_slots > 0
                    critique_slots -= 1
                if not masks[i].any():
                    masks[i][Action.RETRIEVE] = 1  # the safe no-op, as action_mask gives it
        for mask in masks:
            if self._disabled:
                mask[self._disabled] = 0  # ablation: the action is not in the action space
                if not mask.any():
                    mask[next(a for a in range(len(Action)) if a not in self._disabled)] = 1  # the safe no-op
        return masks

    def _infos(self) -> dict[str, dict]:
        return {a: {"action_mask": m} for a, m in zip(self.agents, self._masks(), strict=False)}
