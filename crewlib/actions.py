"""The four actions of a CREW agent (docs/method.md, "Actions"): the one vocabulary every module uses.

``Action`` is the integer an agent's policy outputs (0–3, the index of its logit); ``ACTION_NAMES`` the
lower-case names params, prompts, traces and tables use, in the same order. Nothing else spells them.
"""

from __future__ import annotations

from enum import IntEnum


class Action(IntEnum):
    RETRIEVE = 0  # read a reference the agent has not read (local knowledge)
    DISSEMINATE = 1  # condense its unshared notes into the team's global knowledge
    COMPOSE = 2  # draft a new paragraph or revise one with open feedback
    CRITIQUE = 3  # check the draft and post feedback


ACTION_NAMES: tuple[str, ...] = tuple(a.name.lower() for a in Action)
N_ACTIONS = len(Action)
