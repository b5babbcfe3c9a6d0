"""Systems that run CREW's environment: CREW itself, the LLM Orchestrator, and the extractive baseline.

All three share the workspace, the four actions and the LLM executor (agents act concurrently
each round); they differ only in who chooses the actions:

- *CREW*: the trained IPPO controller (``baselines.crew.checkpoint``, else ``training.shipped_checkpoint``),
  loaded by :mod:`crewlib.rl.controller`; a missing one is a clear error, never a silent schedule;
- *Orchestrator*: a central LLM that sees the full state (the draft's segments, the shared notes,
  the open feedback, each agent's reading and allowed actions) and assigns every agent's action
  each round. It is a single point of failure, as in the paper's fault run: when its call fails
  after the client's retries, the round's assignment is lost (every agent idles) and counted;
  ``baselines.orchestrator.on_failure: fixed_schedule`` instead substitutes the fixed schedule,
  labelled ``default:`` in ``notes["assigned"]``;
- *Extractive*: the LLM-free surrogate executor on the fixed read → share → compose → critique schedule.
"""

from __future__ import annotations

import dataclasses
import math
from collections import Counter
from typing import Literal

import pydantic

from crewlib import prompts
from crewlib.actions import ACTION_NAMES, Action
from crewlib.baselines.base import Generation, System, SystemUnavailableError
from crewlib.data.records import RWGExample
from crewlib.env import CrewEnv, EnvConfig
from crewlib.env.executors import SurrogateExecutor
from crewlib.env.llm_executor import LLMExecutor
from crewlib.env.policies import FIXED_SCHEDULE, FixedSchedule, run_episode
from crewlib.llm import Caller, LLMClient, LLMError
from crewlib.prompts.parts import Filled, fill, parts_text
from crewlib.tasks import Task, title_only


def auto_rounds(task: Task, agents: int, cap: int) -> int:
    """Enough rounds for the team to read every work of the pool with an abstract: ceil(2.5 × works / agents) + 1
    (the trained controller retrieves in about 40% of its actions), at least 1 and at most ``cap``."""
    readable = sum(not title_only(r) for r in task.references)
    return max(1, min(cap, math.ceil(2.5 * readable / agents) + 1))


class EnvSystem(System):
    """A system that plays CREW's environment: the workspace, the four actions and an executor; a subclass says who
    chooses the actions (:meth:`policy`) and, optionally, which executor carries them out (:meth:`executor`)."""

    on_round = None  # optional callable(t) after each round (crew write's progress bar)

    @property
    def rounds(self) -> int:
        """The rounds of ``settings`` (a fixed number; for ``auto`` see :meth:`rounds_for`)."""
        if self.settings.rounds == "auto":
            raise ValueError(f"{self.name}: rounds is auto, which depends on the task: use rounds_for(task)")
        return int(self.settings.rounds)

    @classmethod
    def min_rounds(cls, params) -> int:
        """A paragraph needs ``env.compose_min_sources`` works read first, one per agent and round: that many
        rounds of reading, then one to compose."""
        return int(params.env.compose_min_sources) + 1

    @classmethod
    def min_references(cls, params) -> int:
        """A paragraph is composed from ``env.compose_min_sources`` works at least: fewer, and nothing is written."""
        return int(params.env.compose_min_sources)

    def rounds_for(self, task: Task) -> int:
        """The rounds to play on ``task``: the fixed number, or :func:`auto_rounds` for ``auto``."""
        if self.settings.rounds != "auto":
            return self.rounds
        return auto_rounds(task, self.params.env.n_agents, int(self.settings.max_rounds))

    def executor(self):
        return LLMExecutor.from_params(self.client, self.params, system=self.name)

    def policy(self, env: CrewEnv):
        raise NotImplementedError

    def _generate(self, example: RWGExample, task: Task) -> Generation:
        rounds = self.rounds_for(task)
        config = dataclasses.replace(EnvConfig.from_params(self.params), horizon=rounds,
                                     stop_when_done=self.settings.rounds == "auto")
        executor = self.executor()
        env = CrewEnv([example], executor, config, tasks=[task])
        policy = self.policy(env)
        run_episode(env, policy, seed=0, example_index=0, on_round=self.on_round)
        trace = self.trace = env.trace  # the last episode's full trace (the demo saves it)
        fallbacks = Counter(reason for r in trace.rounds for reason in r["llm"]["fallback_reasons"])
        fallbacks.update(getattr(policy, "fallbacks", Counter()))
        notes = {"rounds": rounds, "actions": trace.actions_matrix, "invalid_actions": env.invalid_actions,
                 "idle_actions": env.idle_actions, "team_return": trace.totals["return"],
                 "policy": getattr(policy, "name", type(policy).__name__), "output_checks": trace.output_checks,
                 "edits": trace.edits, "lost_citations": trace.lost_citations}
        if config.stop_when_done:  # rounds: auto, which ends once nothing is left to do (CrewEnv.finished)
            notes["rounds_played"] = env.t
        if hasattr(policy, "assigned"):
            notes["assigned"] = policy.assigned
        if getattr(executor, "attribute_uncited", False):
            notes["attributed_sentences"] = executor.attributed
        if getattr(executor, "salvage_paragraphs", False):
            notes["foreign_key_sentences_dropped"] = executor.dropped
        if getattr(executor, "check_notes", False):
            notes["target_notes_dropped"] = executor.notes_dropped
        if getattr(executor, "compose_form", None) == "themed":
            notes["themes"] = trace.themes = executor.theme_report(env.current_task, trace.final_draft)
        return Generation(self.name, example.target_id, trace.final_draft, dict(env.current_task.key_to_id),
                          fallbacks=fallbacks, notes=notes)


class Crew(EnvSystem):
    name = "crew"

    def policy(self, env: CrewEnv):
        from crewlib.rl.controller import ControllerError, PolicyController, controller_path

        try:
            return PolicyController.load(controller_path(self.params), greedy=bool(self.settings.greedy))
        except ControllerError as exc:
            raise SystemUnavailableError(f"CREW needs a trained controller: {exc}") from exc


class Extractive(EnvSystem):
    name = "extractive"
    uses_llm = False

    @classmethod
    def min_rounds(cls, params) -> int:
        """The fixed schedule's first Compose, and the round it is played in."""
        return FIXED_SCHEDULE.index(int(Action.COMPOSE)) + 1

    def executor(self):
        return SurrogateExecutor()

    def policy(self, env: CrewEnv):
        return FixedSchedule(FIXED_SCHEDULE)


class Assignment(pydantic.BaseModel):
    agent: int
    action: Literal[ACTION_NAMES]


class Assignments(pydantic.BaseModel):
    assignments: list[Assignment]


def allowed_actions_schema(allowed: list[list[str]]) -> type[pydantic.BaseModel]:
    """The orchestrator's answer with one field per agent (``agent_0`` ...) that admits only that agent's allowed
    actions: sent as a constrained-decoding schema, an action the mask forbids cannot be chosen."""
    fields = {f"agent_{i}": (Literal[tuple(names)], ...) for i, names in enumerate(allowed)}
    return pydantic.create_model("Assignments", **fields)


class OrchestratorPolicy:
    """A central LLM assigns every agent's action each round from the full workspace state."""

    name = "LLM orchestrator"

    def __init__(self, client: LLMClient, env: CrewEnv, *, system: str = "orchestrator", max_tokens: int,
                 on_failure: Literal["lose", "fixed_schedule"], constrain: bool = False,
                 final_compose: bool = False) -> None:
        self.client, self.env, self.system, self.max_tokens = client, env, system, max_tokens
        self.on_failure = on_failure
        self.constrain = constrain  # the answer's schema admits only each agent's allowed actions
        self.final_compose = final_compose  # the last round with an empty draft: Compose only, where allowed
        self.fallbacks: Counter = Counter()
        self.assigned: list[dict[str, str]] = []  # per round: agent → action name the LLM chose (validated)

    def state_prompt(self, t: int, infos: dict, allowed: list[list[str]]) -> Filled:
        """The full workspace state, as CREW's agents can see it (never the gold section), with each agent's allowed
        action names."""
        ws, task = self.env.ws, self.env.current_task
        keys = task.id_to_key
        agents = []
        for i, names in enumerate(allowed):
            last = ws.last_action[i]
            read = ", ".join(keys[r] for r in ws.read_log[i]) or "nothing"
            agents.append(f"- agent {i}: read {read}; {len(ws.unshared(i))} unshared notes; "
                          f"last action {ACTION_NAMES[last] if last is not None else 'none'}; "
                          f"allowed: {', '.join(names)}")
        read_team = {r for log in ws.read_log for r in log}
        unread = ", ".join(f"{keys[r.id]} {r.title}" for r in task.references if r.id not in read_team) or "none"
        notes = "\n".join(f"  - {n.text}" for n in ws.global_notes) or "  (none)"
        draft = "\n".join(f"  {s.id}: {s.text}" for s in ws.draft) or "  (empty)"
        feedback = "\n".join(f"  - {f.kind} on {f.segment_id}: {f.text}" for f in ws.open_feedback()) or "  (none)"
        return fill(
            prompts.ORCHESTRATOR, n_agents=len(infos), title=task.title, round=t + 1, rounds=self.env.config.horizon,
            n_refs=len(task.references), n_read=len(read_team), unread=unread, n_global=len(ws.global_notes),
            notes=notes, n_segments=len(ws.draft), draft_words=len(ws.draft_text.split()), draft=draft,
            n_feedback=len(ws.open_feedback()), feedback=feedback, agents="\n".join(agents))

    def allowed(self, t: int, infos: dict) -> list[list[bool]]:
        """Each agent's allowed actions this round: its action mask, narrowed to Compose in the last round when the
        draft is still empty (``final_compose``; only for the agents whose mask allows Compose, and only when one
        does) — notes read then could no longer reach the section."""
        masks = [list(map(bool, infos[agent]["action_mask"])) for agent in infos]
        if not (self.final_compose and t == self.env.config.horizon - 1 and not self.env.ws.draft
                and any(m[Action.COMPOSE] for m in masks)):
            return masks
        return [[a == Action.COMPOSE for a in range(len(m))] if m[Action.COMPOSE] else m for m in masks]

    def default(self, t: int, mask) -> int:
        """The fixed schedule's action if allowed, else the first allowed action."""
        scheduled = FIXED_SCHEDULE[t % len(FIXED_SCHEDULE)]
        return scheduled if mask[scheduled] else next(a for a, ok in enumerate(mask) if ok)

    def __call__(self, t: int, observations: dict, infos: dict) -> dict[str, int | None]:
        agents = list(observations)
        masks = self.allowed(t, infos)
        allowed = [[ACTION_NAMES[a] for a, ok in enumerate(mask) if ok] for mask in masks]
        prompt = self.state_prompt(t, infos, allowed)
        messages = [{"role": "system", "content": prompts.AGENT_SYSTEM}, {"role": "user", "content": prompt.text}]
        chosen: dict[int, str] = {}
        failed = False
        schema = allowed_actions_schema(allowed) if self.constrain else Assignments
        try:
            answer = self.client.chat_json(messages, schema, caller=Caller(self.system, "orchestrator", None, t,
                                                                       parts_text(prompt.with_system(prompts.AGENT_SYSTEM))),
                                           max_tokens=self.max_tokens, prompt_version=prompts.PROMPT_VERSION)
            if self.constrain:
                chosen = {i: getattr(answer.parsed, f"agent_{i}") for i in range(len(agents))}
            else:
                chosen = {a.agent: a.action for a in answer.parsed.assignments}
        except LLMError as exc:
            failed = True
            self.fallbacks[f"orchestrator: {type(exc).__name__}"] += 1
        actions: dict[str, int | None] = {}
        record = {}
        for i, agent in enumerate(agents):
            mask = masks[i]
            name = chosen.get(i)
            if name is not None and mask[ACTION_NAMES.index(name)]:
                actions[agent] = ACTION_NAMES.index(name)
                record[agent] = name
                continue
            if not failed:  # the LLM answered but not validly for this agent
                self.fallbacks["orchestrator: missing or disallowed assignment"] += 1
            if self.on_failure == "fixed_schedule":
                actions[agent] = self.default(t, mask)
                record[agent] = f"default:{ACTION_NAMES[actions[agent]]}"
            else:  # the assignment is lost: the agent idles this round
                actions[agent] = None
                record[agent] = "lost"
        self.assigned.append(record)
        return actions


class Orchestrator(EnvSystem):
    name = "orchestrator"

    def policy(self, env: CrewEnv):
        return OrchestratorPolicy(self.client, env, system=self.name, max_tokens=int(self.settings.max_tokens),
                                  on_failure=self.settings.on_failure, constrain=self.settings.constrain,
                                  final_compose=self.settings.final_compose)
