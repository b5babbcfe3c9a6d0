"""The Ray backend of :func:`crewlib.experiments.run_generations`: one task per (system, example) pair.

Each task builds its own client from the params (``crewlib.llm.connect``), so every worker talks
to the configured endpoint and reads and writes the configured cache folder (on a cluster, put
``llm.cache_dir`` on a shared filesystem; entries are written atomically, one file per request,
so workers never corrupt each other's). Results come back to the driver, which alone writes the
generations file. ``ray`` is imported here only, so the local backend needs no Ray.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence

from crewlib.baselines import system_class
from crewlib.data.records import RWGExample
from crewlib.experiments.generation import generate_pair
from crewlib.llm import connect
from crewlib.schema import Params
from crewlib.tasks import Task


def _pair_task(system_name: str, example: RWGExample, task: Task | None, params: Params):
    client = connect(params) if _uses_llm(system_name) else None
    return generate_pair(system_name, example, task, params, client)


def _uses_llm(system_name: str) -> bool:
    return system_class(system_name).uses_llm


def ray_results(pending: Sequence[tuple[str, RWGExample]], tasks: Mapping[str, Task], params: Params,
                settings) -> Iterator:
    """The pending pairs' results, each as soon as its task finishes (the caller restores the order)."""
    if not pending:
        return
    try:
        import ray
    except ImportError as exc:  # the local backend needs no Ray; this one does
        raise RuntimeError("experiments.backend 'ray' needs the ray package: pip install 'ray[default]'") from exc
    if not ray.is_initialized():
        ray.init(address=settings.ray_address, num_cpus=settings.ray_num_cpus if not settings.ray_address else None,
                 include_dashboard=False, log_to_driver=False,
                 runtime_env={"env_vars": _forwarded_environment()})
    remote = ray.remote(num_cpus=settings.ray_task_cpus, max_retries=0)(_pair_task)
    params_ref = ray.put(params)
    waiting = [remote.remote(name, example, tasks.get(example.target_id), params_ref) for name, example in pending]
    while waiting:
        finished, waiting = ray.wait(waiting, num_returns=1)
        yield ray.get(finished[0])


def _forwarded_environment() -> dict[str, str]:
    """The CREW_* settings of this process (endpoint, cache mode, faults): workers must see the same.

    API keys are not forwarded by value: a worker reads the variable ``llm.api_key_env`` names
    from its own environment (set it on the cluster's nodes).
    """
    import os

    return {k: v for k, v in os.environ.items() if k.startswith("CREW_") or k == "HF_HUB_OFFLINE"}
