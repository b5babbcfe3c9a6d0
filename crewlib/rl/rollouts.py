"""Collecting the episodes of an IPPO update in parallel worker processes (``training.rollout_workers``).

With the LLM executor an episode is dozens of LLM calls; one process waits for them one round
at a time. :class:`ProcessRollouts` runs the episodes of an update in ``workers`` processes,
each with its own environment and executor built from the params (so no episode state is
shared) and its own client to the configured endpoint and cache folder. The embedded model is
served once, by this process: the workers are pointed at its address under the same model name,
so their requests (and cache keys) are the ones a single process would make.

Each episode samples its actions from a generator seeded by the episode's own seed, so the
result of an update does not depend on which worker ran which episode, nor on how many there are.
"""

from __future__ import annotations

import multiprocessing
from collections.abc import Sequence
from concurrent.futures import ProcessPoolExecutor

import torch

from crewlib.config import with_overrides
from crewlib.rl.controller import build_network
from crewlib.rl.episodes import build_training_env, collect_episode
from crewlib.schema import Params

_worker_env = None  # the worker process's environment, built once by _init_worker


def worker_params(params: Params) -> Params:
    """``params`` for a worker: the embedded model's address (served by this process) instead of a new server."""
    if params.training.executor != "llm":
        return params
    from crewlib.llm import embedded_server
    from crewlib.llm.local import get_model
    from crewlib.llm.settings import llm_settings

    config = llm_settings(params)
    if config.provider != "embedded":
        return params
    server = embedded_server(config.embedded)
    return with_overrides(params, {"llm": {"provider": "openai", "base_url": server.base_url,
                                           "model": get_model(config.embedded.model).alias, "api_key_env": ""}})


def _init_worker(params: Params) -> None:
    global _worker_env
    import os

    os.environ.pop("CREW_LLM_BASE_URL", None)  # the params carry the endpoint the parent resolved
    os.environ.pop("CREW_LLM_PROVIDER", None)
    torch.set_num_threads(1)
    _worker_env, _, _ = build_training_env(params)


def _episode(state: dict, cfg, index: int, seed: int):
    net = build_network(cfg, _worker_env.config.n_agents)
    net.load_state_dict(state)
    return collect_episode(_worker_env, net, cfg, index, seed, torch.Generator().manual_seed(seed),
                           torch.device("cpu"))


class ProcessRollouts:
    """A pool of ``workers`` processes that collect episodes with the current network."""

    def __init__(self, params: Params, workers: int) -> None:
        if workers < 2:
            raise ValueError(f"ProcessRollouts needs at least 2 workers, not {workers}")
        self.workers = workers
        self._pool = ProcessPoolExecutor(max_workers=workers, mp_context=multiprocessing.get_context("spawn"),
                                         initializer=_init_worker, initargs=(worker_params(params),))

    def collect(self, net: torch.nn.Module, cfg, jobs: Sequence[tuple[int, int]]) -> list:
        """``(trajectory, return, final draft quality)`` per ``(example index, seed)``, in the jobs' order."""
        state = {k: v.detach().cpu() for k, v in net.state_dict().items()}
        futures = [self._pool.submit(_episode, state, cfg, index, seed) for index, seed in jobs]
        return [f.result() for f in futures]

    def close(self) -> None:
        self._pool.shutdown(cancel_futures=True)

    def __enter__(self) -> ProcessRollouts:
        return self

    def __exit__(self, *exc) -> None:
        self.close()
