"""The quick params and the configs built from them, with a test's changes (tests only).

Every default lives in ``params/quick.yaml``; a test that needs a config changes the settings it is about and
takes the rest from there."""

from __future__ import annotations

import dataclasses

from crewlib.config import load_params, with_overrides
from crewlib.env import EnvConfig, Workspace
from crewlib.rl import IPPOConfig
from crewlib.schema import ExecutorBlock, Params

QUICK = load_params("quick")


def env_config(**changes) -> EnvConfig:
    return dataclasses.replace(EnvConfig.from_params(QUICK), **changes)


def ippo_config(**changes) -> IPPOConfig:
    return IPPOConfig.from_params(QUICK).replace(**changes)


def executor_settings(**changes) -> ExecutorBlock:
    return QUICK.executor.replace(**changes)


def quick_executor(client, **changes):
    """The LLM executor of the quick params (its edition and the closing sentences' support), with ``changes`` to
    its ``executor`` settings."""
    from crewlib.env.llm_executor import LLMExecutor
    from crewlib.sections import OutputChecks

    return LLMExecutor(client, executor_settings(**changes), edition=QUICK.llm.prompt_edition,
                       checks=OutputChecks.from_params(QUICK))


def quick_with(**blocks) -> Params:
    """The quick params with each named block's keys changed: ``quick_with(eval={"workers": 1})``."""
    return with_overrides(QUICK, blocks)


def bare_workspace(n_agents: int, **changes) -> Workspace:
    """A workspace without the guards: no repeat merging (a threshold above 1), a paragraph may rest on one work,
    no revision guard — the mechanics alone."""
    settings = {"duplicate_threshold": 1.01, "compose_min_sources": 1, "revision_guard": False,
                "sentence_threshold": QUICK.output.sentence_threshold,
                "positioning": "positioning" in QUICK.output.repairs}
    return Workspace(n_agents, **{**settings, **changes})
