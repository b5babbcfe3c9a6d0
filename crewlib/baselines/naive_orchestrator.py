"""Naive Orchestrator — a HuggingGPT-style coordinator with no shared workspace (docs/method.md, "Naive Orchestrator").

1. *Decompose*: the coordinator splits the task into subtasks ``{agent, instruction, keys}``.
2. *Execute*: the agents answer concurrently; an agent sees only the target's title, its own
   instructions and its own references (title + abstract), never another agent's reply.
3. *Assign*: up to ``max_steps`` times the coordinator reads every reply and either says it is
   done or assigns follow-up subtasks, which the agents execute as in 2.
4. *Write*: the coordinator writes the section from all replies.

An agent gets at most one call per step (its subtasks of that step are merged into one prompt), so
an example costs at most ``2 + n_agents + max_steps · (1 + n_agents)`` calls, plus one re-ask
for each coordinator answer that is not valid JSON. A plan that stays invalid, a failed agent call or
a failed final write is a counted fallback, never a crash; only a run where no agent answered at all
raises, since there is then nothing to write from.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass

import pydantic

from crewlib import prompts
from crewlib.baselines.base import Generation, System, reference_block
from crewlib.data.records import RWGExample
from crewlib.llm import ChatRequest, LLMError
from crewlib.tasks import Task


class Subtask(pydantic.BaseModel):
    agent: int
    instruction: str = pydantic.Field(min_length=3)
    keys: list[str] = pydantic.Field(min_length=1)

    @pydantic.field_validator("keys", mode="before")
    @classmethod
    def _bare_keys(cls, value):
        # Small models write "[R3]", "r3" or "R1, R2"; the key is what matters.
        if isinstance(value, str):
            value = re.split(r"[,;\s]+", value)
        if isinstance(value, list):
            value = [v.strip(" []").upper() if isinstance(v, str) else v for v in value]
            value = list(dict.fromkeys(v for v in value if v != ""))
        return value


class Decomposition(pydantic.BaseModel):
    subtasks: list[Subtask] = pydantic.Field(min_length=1)


class FollowUp(pydantic.BaseModel):
    done: bool
    subtasks: list[Subtask] = []

    @pydantic.model_validator(mode="after")
    def _work_unless_done(self):
        if not self.done and not self.subtasks:
            raise ValueError("give at least one subtask, or answer done = true")
        return self


def plan_schemas(n_agents: int, keys: Sequence[str]) -> tuple[type[Decomposition], type[FollowUp]]:
    """The two coordinator schemas for one task: agents must exist and keys must be the task's.

    Checking inside the schema makes the client's one re-ask tell the model what was wrong.
    """
    known = set(keys)

    class TaskSubtask(Subtask):
        @pydantic.model_validator(mode="after")
        def _known(self):
            if not 0 <= self.agent < n_agents:
                raise ValueError(f"agent {self.agent} does not exist; agents are 0 to {n_agents - 1}")
            unknown = [k for k in self.keys if k not in known]
            if unknown:
                raise ValueError(f"unknown reference keys {unknown}; valid keys are {keys[0]} to {keys[-1]}")
            return self

    class TaskDecomposition(Decomposition):
        subtasks: list[TaskSubtask] = pydantic.Field(min_length=1)

    class TaskFollowUp(FollowUp):
        subtasks: list[TaskSubtask] = []

    return TaskDecomposition, TaskFollowUp


def round_robin_plan(n_agents: int, keys: Sequence[str]) -> list[Subtask]:
    """The fallback decomposition: keys dealt to the agents in turn, one generic instruction each."""
    return [Subtask(agent=i, instruction=prompts.NAIVE_FALLBACK_INSTRUCTION, keys=list(keys[i::n_agents]))
            for i in range(min(n_agents, len(keys)))]


@dataclass(frozen=True)
class Reply:
    agent: int
    step: int  # 0: the decomposition's subtasks; s ≥ 1: follow-ups of assignment step s
    keys: tuple[str, ...]
    text: str


class NaiveOrchestrator(System):
    name = "naive_orchestrator"
    # Answer lengths: baselines.naive_orchestrator.plan_max_tokens (a JSON list of subtasks) and
    # agent_max_tokens (one short paragraph); the final write uses baselines.max_tokens.

    @property
    def n_agents(self) -> int:
        return int(self.params.env.n_agents)

    @property
    def max_steps(self) -> int:
        return int(self.settings.max_steps)

    def _coordinator(self, content: str) -> list[dict[str, str]]:
        return [{"role": "system", "content": prompts.NAIVE_COORDINATOR_SYSTEM}, {"role": "user", "content": content}]

    def _ask_plan(self, prompt: str, schema, role: str, fallbacks: Counter, errors: list[str]):
        """The parsed coordinator answer, or None (counted) when it stays invalid or the call fails."""
        try:
            return self.client.chat_json(
                self._coordinator(prompt), schema, caller=self.caller(role),
                max_tokens=int(self.settings.plan_max_tokens),
                prompt_version=prompts.PROMPT_VERSION).parsed
        except LLMError as exc:
            fallbacks[f"{role}:{type(exc).__name__}"] += 1
            errors.append(f"{role}: {type(exc).__name__}: {str(exc)[:200]}")
            return None

    def execute(self, task: Task, subtasks: Sequence[Subtask], step: int, fallbacks: Counter,
                errors: list[str]) -> list[Reply]:
        """One call per agent that has subtasks, all concurrent; failed calls are counted and missing."""
        by_agent: dict[int, list[Subtask]] = {}
        for sub in subtasks:
            by_agent.setdefault(sub.agent, []).append(sub)
        agents, requests, agent_keys = [], [], []
        for agent, subs in sorted(by_agent.items()):
            keys = list(dict.fromkeys(k for s in subs for k in s.keys))
            instructions = "\n".join(f"{i}. {s.instruction} (references: {', '.join(s.keys)})"
                                     for i, s in enumerate(subs, 1))
            user = prompts.NAIVE_AGENT.format(title=task.title, instructions=instructions,
                                              references=reference_block(task, keys=keys))
            messages = [{"role": "system", "content": prompts.NAIVE_AGENT_SYSTEM}, {"role": "user", "content": user}]
            requests.append(ChatRequest(messages, caller=self.caller("agent", agent), sample_index=step,
                                        max_tokens=int(self.settings.agent_max_tokens),
                                        prompt_version=prompts.PROMPT_VERSION))
            agents.append(agent)
            agent_keys.append(tuple(keys))
        replies = []
        for agent, keys, outcome in zip(agents, agent_keys, self.client.batch(requests, return_exceptions=True),
                                        strict=True):
            if isinstance(outcome, LLMError):
                fallbacks[f"agent:{type(outcome).__name__}"] += 1
                errors.append(f"agent {agent}, step {step}: {type(outcome).__name__}: {str(outcome)[:200]}")
            elif not outcome.content.strip():
                fallbacks["agent:empty_reply"] += 1
            else:
                replies.append(Reply(agent, step, keys, outcome.content.strip()))
        return replies

    def _generate(self, example: RWGExample, task: Task) -> Generation:
        n_agents = self.n_agents
        decomposition_schema, follow_up_schema = plan_schemas(n_agents, task.keys)
        titles = "\n".join(f"{k}: {r.title}" for k, r in zip(task.keys, task.references, strict=True))
        fallbacks: Counter = Counter()
        errors: list[str] = []

        # 1. Decompose.
        plan = self._ask_plan(prompts.NAIVE_DECOMPOSE.format(
            title=task.title, abstract=task.abstract, references=titles, n_agents=n_agents,
            last_agent=n_agents - 1), decomposition_schema, "decompose", fallbacks, errors)
        subtasks = plan.subtasks if plan is not None else round_robin_plan(n_agents, task.keys)
        n_subtasks = len(subtasks)

        # 2. Execute; 3. up to max_steps assignment steps from the replies.
        replies = self.execute(task, subtasks, 0, fallbacks, errors)
        steps, stopped = 0, "max_steps"
        for step in range(1, self.max_steps + 1):
            decision = self._ask_plan(prompts.NAIVE_FOLLOW_UP.format(
                title=task.title, references=titles, replies=_replies_block(replies), step=step,
                max_steps=self.max_steps, last_agent=n_agents - 1), follow_up_schema, "assign", fallbacks, errors)
            if decision is None:
                stopped = "fallback"  # no usable decision: write from what there is
                break
            if decision.done:
                stopped = "done"
                break
            n_subtasks += len(decision.subtasks)
            replies += self.execute(task, decision.subtasks, step, fallbacks, errors)
            steps = step

        if not replies:
            raise LLMError(f"naive_orchestrator: no agent answered on target {task.target_id}, so there is nothing "
                           f"to write from; errors: {errors[:3]}")

        # 4. Write.
        edition = self.params.llm.prompt_edition
        prompt = prompts.NAIVE_WRITE.format(title=task.title, abstract=task.abstract, replies=_replies_block(replies),
                                            words=task.target_words, rules=prompts.SECTION_RULES[edition])
        text, reason = "", "write:empty"
        try:
            text = self.client.chat(self._coordinator(prompt), caller=self.caller("write"),
                                    max_tokens=int(self.params.baselines.max_tokens),
                                    prompt_version=edition).content.strip()
        except LLMError as exc:
            reason = f"write:{type(exc).__name__}"
            errors.append(f"write: {type(exc).__name__}: {str(exc)[:200]}")
        if not text:
            fallbacks[reason] += 1
            text = "\n\n".join(r.text for r in replies)  # the agents' paragraphs, in the order they came

        notes = {"subtasks": n_subtasks, "steps": steps, "stopped": stopped, "plan_fallback": plan is None,
                 "agent_replies": len(replies), "replies": [(r.agent, r.step, list(r.keys)) for r in replies],
                 "errors": errors}
        return Generation(self.name, example.target_id, text, dict(task.key_to_id), fallbacks=fallbacks,
                          notes=notes)


def _replies_block(replies: Sequence[Reply]) -> str:
    return "\n".join(f"- agent {r.agent}, {', '.join(r.keys)}: {r.text}" for r in replies) or "(no replies)"
