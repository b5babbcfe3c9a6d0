"""IPPO pieces: GAE by hand, the loss falls on a fixed batch, masked actions are never sampled."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from quick_settings import ippo_config

from crewlib.config import ParamsError, load_params
from crewlib.rl.ippo import Batch, IPPOConfig, SharedActorCritic, gae, ppo_loss


def test_gae_hand_computed():
    # gamma 0.5, lambda 0.5; episode ends after step 1, a new one starts at step 2.
    rewards, values, dones = np.array([1.0, 2.0, 3.0]), np.array([0.5, 1.0, 2.0]), np.array([0.0, 1.0, 0.0])
    adv, ret = gae(rewards, values, dones, last_value=4.0, gamma=0.5, lam=0.5)
    d2 = 3.0 + 0.5 * 4.0 - 2.0  # 3.0, bootstrapped from last_value
    d1 = 2.0 - 1.0  # 1.0, terminal: no bootstrap, no carry from step 2
    d0 = 1.0 + 0.5 * 1.0 - 0.5  # 1.0
    expected = np.array([d0 + 0.25 * d1, d1, d2])
    np.testing.assert_allclose(adv, expected)
    np.testing.assert_allclose(ret, expected + values)


def random_batch(n=256, seed=0) -> Batch:
    g = torch.Generator().manual_seed(seed)
    obs = torch.rand(n, 20, generator=g)
    masks = torch.ones(n, 4, dtype=torch.int64)
    masks[:, 3] = 0
    actions = torch.randint(0, 3, (n,), generator=g)
    advantages = torch.where(actions == 1, 1.0, -0.5)  # action 1 is good
    return Batch(obs, masks, actions, torch.full((n,), float(np.log(1 / 3))), advantages, advantages.clone(),
                 torch.zeros(n))


def test_ppo_loss_falls_on_a_fixed_batch():
    torch.manual_seed(0)
    net, cfg = SharedActorCritic(), ippo_config(ent_coef=0.0)
    batch = random_batch()
    optimizer = torch.optim.Adam(net.parameters(), lr=1e-3)
    first, _ = ppo_loss(net, batch, cfg)
    for _ in range(30):
        loss, stats = ppo_loss(net, batch, cfg)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
    last, stats = ppo_loss(net, batch, cfg)
    assert last.item() < first.item() - 0.05
    probs = net.distribution(batch.obs, batch.masks).probs.mean(0)
    assert probs[1] > probs[0] and probs[1] > probs[2]  # it moved towards the good action


def test_masked_actions_are_never_sampled():
    net = SharedActorCritic()
    with torch.no_grad():
        net.actor[-1].bias.copy_(torch.tensor([0.0, 0.0, 0.0, 50.0]))  # the masked action is by far the favourite
    obs = torch.rand(1000, 20)
    masks = torch.tensor([[1, 1, 0, 0]] * 1000)
    dist = net.distribution(obs, masks)
    samples = dist.sample()
    assert set(samples.tolist()) <= {0, 1}
    assert dist.probs[:, 2:].max().item() == pytest.approx(0.0, abs=1e-12)


def test_config_from_params_rejects_unknown_keys():
    assert IPPOConfig.from_params(load_params("quick", {"ippo": {"gamma": 0.9}})).gamma == 0.9
    with pytest.raises(ParamsError, match="ippo.gama: unknown setting"):
        load_params("quick", {"ippo": {"gama": 0.9}})
