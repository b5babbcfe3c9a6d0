"""Parameter-shared IPPO (the paper's §4.1, Appendix D: K = 4 epochs, horizon 15), written out in the CleanRL manner.

One actor and one critic serve every agent (optionally with a one-hot agent id). Each agent's
transitions ``(o, a, log π, r, V, done, mask)`` are kept as their own trajectory, GAE runs per
trajectory, and the clipped PPO update runs on the pooled minibatches. Invalid actions are
masked in the logits, so they are never sampled and carry no probability mass.
"""

from __future__ import annotations

import contextlib
import dataclasses
from dataclasses import dataclass

import numpy as np
import torch
from torch import nn
from torch.distributions import Categorical

from crewlib.actions import N_ACTIONS
from crewlib.env.observation import FEATURE_NAMES
from crewlib.schema import IPPOBlock, Params

MASKED_LOGIT = -1e9


class IPPOConfig(IPPOBlock):
    """The ``ippo`` block (every hyperparameter in ``params/quick.yaml``: the paper states K = 4, the others are
    CleanRL's PPO defaults, ours) and what training does with it."""

    @classmethod
    def from_params(cls, params: Params) -> IPPOConfig:
        return cls.model_validate(params.ippo.model_dump())

    @contextlib.contextmanager
    def cpu_threads(self):
        """Run a block with ``torch_threads`` intra-op threads, the previous number restored after.

        The networks are tiny (20 → 64 → 64): more threads only wait for each other, and they
        fight an LLM server for the cores (one thread trained 11× faster beside the embedded model).
        """
        before = torch.get_num_threads()
        torch.set_num_threads(self.torch_threads)
        try:
            yield
        finally:
            torch.set_num_threads(before)

    def torch_device(self) -> torch.device:
        if self.device == "auto":
            return torch.device("cuda" if torch.cuda.is_available() else "cpu")
        return torch.device(self.device)


def layer_init(layer: nn.Linear, gain: float = np.sqrt(2), bias: float = 0.0) -> nn.Linear:
    """Orthogonal weights, constant bias (CleanRL, Engstrom et al. 2020)."""
    nn.init.orthogonal_(layer.weight, gain)
    nn.init.constant_(layer.bias, bias)
    return layer


class SharedActorCritic(nn.Module):
    """Actor 20 → 64 → 64 → 4 logits and critic 20 → 64 → 64 → 1, tanh, shared by all agents."""

    def __init__(self, obs_dim: int = len(FEATURE_NAMES), hidden: int = 64, n_actions: int = N_ACTIONS) -> None:
        super().__init__()
        self.actor = nn.Sequential(
            layer_init(nn.Linear(obs_dim, hidden)), nn.Tanh(),
            layer_init(nn.Linear(hidden, hidden)), nn.Tanh(),
            layer_init(nn.Linear(hidden, n_actions), gain=0.01),
        )
        self.critic = nn.Sequential(
            layer_init(nn.Linear(obs_dim, hidden)), nn.Tanh(),
            layer_init(nn.Linear(hidden, hidden)), nn.Tanh(),
            layer_init(nn.Linear(hidden, 1), gain=1.0),
        )

    def distribution(self, obs: torch.Tensor, mask: torch.Tensor) -> Categorical:
        logits = self.actor(obs).masked_fill(mask == 0, MASKED_LOGIT)
        return Categorical(logits=logits)

    def value(self, obs: torch.Tensor) -> torch.Tensor:
        return self.critic(obs).squeeze(-1)


def gae(rewards: np.ndarray, values: np.ndarray, dones: np.ndarray, last_value: float, gamma: float,
        lam: float) -> tuple[np.ndarray, np.ndarray]:
    """Generalised advantage estimation over one agent's trajectory.

    ``dones[t]`` is 1 when the episode ended *after* step t (then no value is bootstrapped from
    step t + 1). Returns (advantages, returns = advantages + values).
    """
    n = len(rewards)
    advantages = np.zeros(n, dtype=np.float64)
    running = 0.0
    for t in reversed(range(n)):
        next_value = last_value if t == n - 1 else values[t + 1]
        not_done = 1.0 - dones[t]
        delta = rewards[t] + gamma * next_value * not_done - values[t]
        running = delta + gamma * lam * not_done * running
        advantages[t] = running
    return advantages, advantages + values


@dataclass
class Batch:
    obs: torch.Tensor
    masks: torch.Tensor
    actions: torch.Tensor
    logprobs: torch.Tensor
    advantages: torch.Tensor
    returns: torch.Tensor
    values: torch.Tensor

    def __len__(self) -> int:
        return len(self.actions)

    def subset(self, index: torch.Tensor) -> Batch:
        return Batch(*(getattr(self, f.name)[index] for f in dataclasses.fields(self)))


def ppo_loss(net: SharedActorCritic, b: Batch, cfg: IPPOConfig) -> tuple[torch.Tensor, dict[str, float]]:
    """Clipped surrogate + clipped-free value loss − entropy bonus on one minibatch."""
    dist = net.distribution(b.obs, b.masks)
    new_logprob = dist.log_prob(b.actions)
    entropy = dist.entropy().mean()
    log_ratio = new_logprob - b.logprobs
    ratio = log_ratio.exp()
    adv = b.advantages
    if cfg.norm_adv and len(adv) > 1:
        adv = (adv - adv.mean()) / (adv.std() + 1e-8)
    pg_loss = torch.max(-adv * ratio, -adv * ratio.clamp(1 - cfg.clip_coef, 1 + cfg.clip_coef)).mean()
    v_loss = 0.5 * ((net.value(b.obs) - b.returns) ** 2).mean()
    loss = pg_loss - cfg.ent_coef * entropy + cfg.vf_coef * v_loss
    with torch.no_grad():
        stats = {
            "policy_loss": pg_loss.item(), "value_loss": v_loss.item(), "entropy": entropy.item(),
            "approx_kl": ((ratio - 1) - log_ratio).mean().item(),  # the low-variance estimator (Schulman 2020)
            "clip_fraction": ((ratio - 1).abs() > cfg.clip_coef).float().mean().item(),
        }
    return loss, stats


def minibatch_indices(n: int, num_minibatches: int, generator: torch.Generator) -> list[torch.Tensor]:
    """``num_minibatches`` disjoint minibatches of equal size ``n // num_minibatches`` from a fresh permutation.

    The ``n mod num_minibatches`` samples left over sit out this epoch (a different few each
    epoch), so every gradient step averages over the same number of samples (CleanRL's layout).
    """
    size = n // num_minibatches
    if size == 0:
        return [torch.randperm(n, generator=generator)]  # fewer samples than minibatches: one batch
    order = torch.randperm(n, generator=generator)
    return [order[i * size:(i + 1) * size] for i in range(num_minibatches)]


def ippo_update(net: SharedActorCritic, optimizer: torch.optim.Optimizer, batch: Batch, cfg: IPPOConfig,
                generator: torch.Generator) -> dict[str, float]:
    """K epochs of minibatch PPO on ``batch``; returns the mean of each statistic."""
    totals: dict[str, list[float]] = {}
    for _ in range(cfg.update_epochs):
        for index in minibatch_indices(len(batch), cfg.num_minibatches, generator):
            loss, stats = ppo_loss(net, batch.subset(index), cfg)
            optimizer.zero_grad()
            loss.backward()
            nn.utils.clip_grad_norm_(net.parameters(), cfg.max_grad_norm)
            optimizer.step()
            for k, v in stats.items():
                totals.setdefault(k, []).append(v)
    return {k: float(np.mean(v)) for k, v in totals.items()}
