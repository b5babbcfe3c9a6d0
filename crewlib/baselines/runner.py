"""One system, one paper, its own client: the path the demo and ``crew write`` share.

:func:`run_system` applies a ``rounds`` override through the validated params (``with_overrides``),
connects the client the system needs (before the task is built, so a missing key or a dead
endpoint fails before any feature is computed), lets the caller attach per-round hooks (a progress
bar, an early stop) and generates. Experiments over many papers use
:func:`crewlib.experiments.generation.generate_pair` with a shared client instead.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

from crewlib.baselines import make_system, system_class
from crewlib.baselines.base import Generation, System
from crewlib.config import with_overrides
from crewlib.data.records import RWGExample
from crewlib.llm import LLMClient, connect
from crewlib.schema import Params
from crewlib.tasks import Task


@dataclass
class SystemRun:
    generation: Generation
    system: System  # after the run: ``trace`` for the environment's systems
    client: LLMClient | None  # None for a system without an LLM
    params: Params  # with the rounds override applied
    task: Task  # the task the system wrote for


def run_system(params: Params, name: str, example: RWGExample, task: Task | Callable[[dict], Task], *,
               rounds: int | str | None = None, hooks: Sequence[Callable[[System, LLMClient | None, Task], None]] = (),
               session: dict | None = None) -> SystemRun:
    """Run system ``name`` on ``example``.

    ``task``: the example's task, or a function of the params that builds it (called after the client connects).
    ``rounds``: overrides ``baselines.<name>.rounds`` (validated: a number >= 1 or ``auto``). ``hooks``: called
    with the system, the client and the task before it generates (e.g. to set ``system.on_round``). ``session``: a dict
    that receives the ``client`` as soon as it exists (a caller interrupted mid-run can still count its answers).
    """
    if rounds is not None:
        params = with_overrides(params, {"baselines": {name: {"rounds": rounds}}})
    client = connect(params) if system_class(name).uses_llm else None
    if session is not None:
        session["client"] = client
    task = task(params) if callable(task) else task
    system = make_system(name, params, client)
    for hook in hooks:
        hook(system, client, task)
    return SystemRun(system.generate(example, task), system, client, params, task)
