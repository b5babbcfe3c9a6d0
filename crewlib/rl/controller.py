"""The trained controller: network construction, checkpoint save and load, and policy inference.

Every caller — training's resume, the demo, the ``crew`` system, the notebooks — builds and
loads the controller here, one way. Checkpoints are read with ``torch.load(weights_only=True)``:
a checkpoint holds tensors, numbers, strings and lists only, so a file named in params cannot
run code when it is loaded.

The policy is per agent (parameter sharing, no agent id by default), so a controller trained
with M agents acts for any number of agents; one trained with ``agent_id`` inputs needs the M
it was trained with.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

import numpy as np
import torch

from crewlib import CrewError, __version__
from crewlib.config import default_params
from crewlib.env.observation import FEATURE_NAMES
from crewlib.rl.ippo import IPPOConfig, SharedActorCritic
from crewlib.schema import Params


class ControllerError(CrewError, RuntimeError):
    """No usable trained controller: missing, unreadable, or made for other features / agents."""


def obs_dim(cfg: IPPOConfig, n_agents: int) -> int:
    """Network input size: the 20 features, plus a one-hot agent id when ``cfg.agent_id``."""
    return len(FEATURE_NAMES) + (n_agents if cfg.agent_id else 0)


def build_network(cfg: IPPOConfig, n_agents: int) -> SharedActorCritic:
    """The shared actor-critic for ``n_agents`` agents: its input width is the observation's (20 features plus the
    agent's id one-hot when ``cfg`` asks for it), its hidden width ``cfg.hidden``, 4 action logits and a value."""
    return SharedActorCritic(obs_dim(cfg, n_agents), cfg.hidden)


def agent_features(obs: np.ndarray, agent_index: int, cfg: IPPOConfig, n_agents: int) -> np.ndarray:
    if not cfg.agent_id:
        return obs
    return np.concatenate([obs, np.eye(n_agents, dtype=np.float32)[agent_index]])


def round_tensors(observations: dict, infos: dict, agents: list[str], cfg: IPPOConfig, n_agents: int,
                  device: torch.device | str = "cpu") -> tuple[torch.Tensor, torch.Tensor]:
    """The round's observations (with the optional agent id) and action masks, one row per agent."""
    obs = np.stack([agent_features(observations[a], i, cfg, n_agents) for i, a in enumerate(agents)])
    masks = np.stack([infos[a]["action_mask"] for a in agents])
    return torch.as_tensor(obs, device=device), torch.as_tensor(masks, device=device)


def save_checkpoint(path: str | Path, net: SharedActorCritic, cfg: IPPOConfig, n_agents: int, *,
                    optimizer: torch.optim.Optimizer | None = None, state: Mapping | None = None) -> None:
    """Write atomically: a checkpoint is the old one or the new one, never half written."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    data = {"model": net.state_dict(), "config": cfg.model_dump(), "n_agents": n_agents,
            "feature_names": list(FEATURE_NAMES), "library_version": __version__, **(state or {})}
    if optimizer is not None:
        data["optimizer"] = optimizer.state_dict()
    tmp = path.with_suffix(".tmp")
    torch.save(data, tmp)
    tmp.replace(path)


def read_checkpoint(path: str | Path, map_location: str | torch.device = "cpu") -> dict:
    """The raw checkpoint (tensors and plain data only), its features checked against ours."""
    path = Path(path)
    if not path.exists():
        raise ControllerError(f"no trained controller at {path}: train one with `python -m crewlib.rl --params "
                              "quick --ship` (minutes on a CPU), or set baselines.crew.checkpoint to a checkpoint file")
    try:
        data = torch.load(path, map_location=map_location, weights_only=True)
    except Exception as exc:  # noqa: BLE001 - pickle, zip and unpickler errors all mean: not a safe checkpoint
        raise ControllerError(f"{path} is not a readable controller checkpoint ({type(exc).__name__}: {exc})") from exc
    if list(data.get("feature_names", [])) != list(FEATURE_NAMES):
        raise ControllerError(f"{path} was trained on other observation features: {data.get('feature_names')}")
    return data


def same_weights(a: str | Path, b: str | Path) -> bool:
    """Whether two checkpoints hold the same network weights, up to floating-point rounding: the same seeded
    training on another CPU gives weights that differ in the last bits (measured: at most 3.2e-6 after 80
    updates between the machine that shipped checkpoints/ablations and a CI machine), while two different
    trainings differ by orders of magnitude more."""
    wa, wb = read_checkpoint(a)["model"], read_checkpoint(b)["model"]
    return wa.keys() == wb.keys() and all(torch.allclose(wa[k], wb[k], rtol=1e-4, atol=1e-5) for k in wa)


class PolicyController:
    """The trained controller as a policy: ``policy(t, observations, infos) -> {agent: action}``."""

    def __init__(self, net: SharedActorCritic, cfg: IPPOConfig, n_agents: int, greedy: bool = True,
                 seed: int = 0, name: str = "trained IPPO controller") -> None:
        self.net, self.cfg, self.n_agents, self.greedy = net.eval(), cfg, n_agents, greedy
        self.generator = torch.Generator().manual_seed(seed)
        self.name = name

    def __call__(self, t: int, observations: dict, infos: dict) -> dict[str, int]:
        agents = list(observations)
        if self.cfg.agent_id and len(agents) != self.n_agents:
            raise ControllerError(f"{self.name} was trained with agent ids for {self.n_agents} agents; "
                                  f"this episode has {len(agents)}")
        obs, masks = round_tensors(observations, infos, agents, self.cfg, self.n_agents)
        with torch.no_grad(), self.cfg.cpu_threads():
            dist = self.net.distribution(obs, masks)
            actions = dist.probs.argmax(-1) if self.greedy else torch.multinomial(dist.probs, 1,
                                                                                  generator=self.generator)[:, 0]
        return {a: int(x) for a, x in zip(agents, actions.tolist(), strict=True)}

    @classmethod
    def load(cls, path: str | Path, *, greedy: bool = True, seed: int = 0) -> PolicyController:
        data = read_checkpoint(path)
        cfg = IPPOConfig.model_validate({**default_params().ippo.model_dump(), **data["config"]})  # older: fewer keys
        net = build_network(cfg, data["n_agents"])
        net.load_state_dict(data["model"])
        mode = "greedy" if greedy else "sampled"
        return cls(net, cfg, data["n_agents"], greedy=greedy, seed=seed,
                   name=f"trained IPPO controller ({Path(path).name}, {mode})")


def controller_path(params: Params) -> Path:
    """The checkpoint CREW runs with: ``baselines.crew.checkpoint``, else ``training.shipped_checkpoint``."""
    from crewlib.config import resolve_path

    return resolve_path(params.baselines.crew.checkpoint or params.training.shipped_checkpoint)
