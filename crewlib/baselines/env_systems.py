"""Systems that run CREW's environment: CREW itself, the LLM Orchestrator, and the extractive baseline.

All three share the workspace, the four actions and the LLM executor (agents act concurrently
each round); they differ only in who chooses the actions:

- *CREW*: the trained IPPO controller (``checkpoints/ippo_sample.pt`` or ``baselines.crew.checkpoint``);
- *Orchestrator*: a central LLM that sees the full state and assigns every agent's action each
  round (JSON, validated against the action masks; a bad assignment falls back to a counted default);
- *Extractive*: the LLM-free surrogate executor on the fixed read → share → compose → critique schedule.
"""

from __future__ import annotations

import dataclasses
from collections import Counter
from typing import Literal

import pydantic

from crewlib import prompts
from crewlib.baselines.base import Generation, System, SystemUnavailableError
from crewlib.config import resolve_path
from crewlib.data.records import RWGExample
from crewlib.env import CrewEnv, EnvConfig
from crewlib.env.executors import SurrogateExecutor
from crewlib.env.llm_executor import LLMExecutor
from crewlib.env.policies import FIXED_SCHEDULE, FixedSchedule, run_episode
from crewlib.env.workspace import Action
from crewlib.llm import Caller, LLMClient, LLMError

ACTION_NAMES = [a.name.lower() for a in Action]


class _EnvSystem(System):
    default_rounds = 15

    @property
    def rounds(self) -> int:
        return int(self.settings.get("rounds", self.default_rounds))

    def executor(self):
        max_tokens = (self.params.get("demo") or {}).get("max_tokens")
        return LLMExecutor(self.client, max_tokens=max_tokens, system=self.name)

    def policy(self, env: CrewEnv):
        raise NotImplementedError

    def _generate(self, example: RWGExample) -> Generation:
        config = dataclasses.replace(EnvConfig.from_params(self.params), horizon=self.rounds)
        env = CrewEnv([example], self.executor(), config)
        policy = self.policy(env)
        run_episode(env, policy, seed=0, example_index=0)
        trace = env.trace
        fallbacks = Counter(reason for r in trace.rounds for reason in r["llm"]["fallback_reasons"])
        fallbacks.update(getattr(policy, "fallbacks", Counter()))
        notes = {"rounds": self.rounds, "actions": trace.actions_matrix, "invalid_actions": env.invalid_actions,
                 "team_return": trace.totals["return"]}
        if hasattr(policy, "assigned"):
            notes["assigned"] = policy.assigned
        return Generation(self.name, example.target_id, trace.final_draft, dict(env.current_task.key_to_id),
                          fallbacks=fallbacks, notes=notes)


class Crew(_EnvSystem):
    name = "crew"

    def policy(self, env: CrewEnv):
        from crewlib.rl.train import PolicyController, load_checkpoint

        shipped = (self.params.get("training") or {}).get("shipped_checkpoint", "checkpoints/ippo_sample.pt")
        path = resolve_path(self.settings.get("checkpoint") or shipped)
        if not path.exists():
            raise SystemUnavailableError(f"CREW needs a trained controller: {path} does not exist; train one with "
                                         "`python -m crewlib.rl --params quick` or set baselines.crew.checkpoint")
        ckpt = load_checkpoint(path)
        if ckpt["n_agents"] != env.config.n_agents:
            raise SystemUnavailableError(f"{path} was trained for {ckpt['n_agents']} agents, env.n_agents is "
                                         f"{env.config.n_agents}")
        return PolicyController(ckpt["net"], ckpt["config"], ckpt["n_agents"],
                                greedy=bool(self.settings.get("greedy", False)))


class Extractive(_EnvSystem):
    name = "extractive"
    uses_llm = False

    def executor(self):
        return SurrogateExecutor()

    def policy(self, env: CrewEnv):
        return FixedSchedule(FIXED_SCHEDULE)


class Assignment(pydantic.BaseModel):
    agent: int
    action: Literal["retrieve", "disseminate", "compose", "critique"]


class Assignments(pydantic.BaseModel):
    assignments: list[Assignment]


class OrchestratorPolicy:
    """A central LLM assigns every agent's action each round from the full workspace state."""

    def __init__(self, client: LLMClient, env: CrewEnv, *, system: str = "orchestrator", max_tokens: int = 160):
        self.client, self.env, self.system, self.max_tokens = client, env, system, max_tokens
        self.fallbacks: Counter = Counter()
        self.assigned: list[dict[str, str]] = []  # per round: agent → action name the LLM chose (validated)

    def state_prompt(self, t: int, infos: dict) -> str:
        ws, task = self.env.ws, self.env.current_task
        agents = []
        for i, agent in enumerate(infos):
            allowed = [ACTION_NAMES[a] for a, ok in enumerate(infos[agent]["action_mask"]) if ok]
            last = ws.last_action[i]
            agents.append(f"- agent {i}: read {len(ws.read_log[i])} papers, {len(ws.unshared(i))} unshared notes, "
                          f"last action {ACTION_NAMES[last] if last is not None else 'none'}; "
                          f"allowed: {', '.join(allowed)}")
        return prompts.ORCHESTRATOR.format(
            n_agents=len(infos), title=task.title, round=t + 1, rounds=self.env.config.horizon,
            n_refs=len(task.references), n_read=len({r for log in ws.read_log for r in log}),
            n_global=len(ws.global_notes), n_feedback=len(ws.open_feedback()), n_segments=len(ws.draft),
            draft_words=len(ws.draft_text.split()), agents="\n".join(agents))

    def default(self, t: int, mask) -> int:
        """The fixed schedule's action if allowed, else the first allowed action."""
        scheduled = FIXED_SCHEDULE[t % len(FIXED_SCHEDULE)]
        return scheduled if mask[scheduled] else next(a for a, ok in enumerate(mask) if ok)

    def __call__(self, t: int, observations: dict, infos: dict) -> dict[str, int]:
        agents = list(observations)
        messages = [{"role": "system", "content": prompts.AGENT_SYSTEM},
                    {"role": "user", "content": self.state_prompt(t, infos)}]
        chosen: dict[int, str] = {}
        try:
            answer = self.client.chat_json(messages, Assignments, caller=Caller(self.system, "orchestrator"),
                                           max_tokens=self.max_tokens, prompt_version=prompts.PROMPT_VERSION)
            chosen = {a.agent: a.action for a in answer.parsed.assignments}
        except LLMError as exc:
            self.fallbacks[f"orchestrator: {type(exc).__name__}"] += 1
        actions, record = {}, {}
        for i, agent in enumerate(agents):
            mask = infos[agent]["action_mask"]
            name = chosen.get(i)
            if name is not None and mask[ACTION_NAMES.index(name)]:
                actions[agent] = ACTION_NAMES.index(name)
                record[agent] = name
            else:
                if chosen:  # the LLM answered but not validly for this agent
                    self.fallbacks["orchestrator: missing or disallowed assignment"] += 1
                actions[agent] = self.default(t, mask)
                record[agent] = f"default:{ACTION_NAMES[actions[agent]]}"
        self.assigned.append(record)
        return actions


class Orchestrator(_EnvSystem):
    name = "orchestrator"

    def policy(self, env: CrewEnv):
        return OrchestratorPolicy(self.client, env, system=self.name,
                                  max_tokens=int(self.settings.get("max_tokens", 160)))
