"""Policies that need no training: the documented fixed schedule and a uniform random policy.

A policy is called as ``policy(t, observations, infos) -> {agent: action}`` (the trained IPPO
controller, ``crewlib.rl.PolicyController``, has the same signature). Both respect the action
masks: a wanted action that is masked falls back to the first valid one (fixed schedule) or is
never drawn (random).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np

from crewlib.actions import Action

# Read twice, share, compose, critique, revise, then repeat: the schedule the demo and the
# extractive baseline use when no trained controller is given.
_R, _D, _C, _K = Action.RETRIEVE, Action.DISSEMINATE, Action.COMPOSE, Action.CRITIQUE
FIXED_SCHEDULE: tuple[int, ...] = tuple(int(a) for a in (_R, _R, _D, _C, _K, _C, _R, _D, _C, _K, _C, _R, _D, _C, _K))


class FixedSchedule:
    """Every agent takes ``schedule[t]`` (cycled), or its first valid action if that is masked."""

    def __init__(self, schedule: Sequence[int] = FIXED_SCHEDULE) -> None:
        if not schedule or any(a not in tuple(Action) for a in schedule):
            raise ValueError(f"a schedule is a non-empty list of actions 0-3, got {list(schedule)}")
        self.schedule = tuple(int(a) for a in schedule)

    def __call__(self, t: int, observations: dict, infos: dict[str, dict]) -> dict[str, int]:
        want = self.schedule[t % len(self.schedule)]
        return {agent: want if info["action_mask"][want] else int(np.flatnonzero(info["action_mask"])[0])
                for agent, info in infos.items()}


class RandomPolicy:
    """Uniform over each agent's valid actions (seeded)."""

    def __init__(self, seed: int = 0) -> None:
        self.rng = np.random.default_rng(seed)

    def __call__(self, t: int, observations: dict, infos: dict[str, dict]) -> dict[str, int]:
        return {agent: int(self.rng.choice(np.flatnonzero(info["action_mask"]))) for agent, info in infos.items()}


def run_episode(env, policy, *, seed: int | None = None, example_index: int | None = None,
                on_round: Callable[[int], None] | None = None) -> float:
    """Play one episode with ``policy``; returns the team return (the trace is on ``env.trace``).

    ``on_round(t)`` is called after each round ``t`` (1, 2, ...), e.g. to advance a progress bar."""
    options = None if example_index is None else {"example_index": example_index}
    observations, infos = env.reset(seed=seed, options=options)
    total, t = 0.0, 0
    while env.agents:
        observations, rewards, _, _, infos = env.step(policy(t, observations, infos))
        total += next(iter(rewards.values()))
        t += 1
        if on_round is not None:
            on_round(t)
    return total
