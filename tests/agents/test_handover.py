"""IQL -> SAC handover (offline to online): the same policy and Q-networks, SAC's own optimiser; refusals."""

from __future__ import annotations

import dataclasses

import gymnasium as gym
import numpy as np
import pytest
import torch

from agents.config import SACConfig
from agents.errors import AgentError
from agents.handover import load_iql_into_sac, sac_config_for
from agents.iql import IQL
from agents.sac import SAC
from tests.agents.test_iql import ROBOT_SPEC, SMALL, box, random_batch, random_obs


@pytest.fixture(scope="module")
def trained_iql() -> IQL:
    agent = IQL(dataclasses.replace(SMALL, num_critics=3, layer_norm=True), ROBOT_SPEC, box())
    for seed in range(3):
        agent.update(random_batch(ROBOT_SPEC, seed=seed))
    return agent


def handed_over(iql: IQL, base: SACConfig = SACConfig(), space: gym.spaces.Box | None = None) -> SAC:  # noqa: B008
    sac = SAC(sac_config_for(iql.cfg, base), ROBOT_SPEC, space or box())
    load_iql_into_sac(sac, iql.state_dict(), (iql.action_low.numpy(), iql.action_high.numpy()))
    return sac


def test_sac_starts_with_the_offline_policy_and_q_networks(trained_iql) -> None:
    base = SACConfig(init_alpha=0.05, actor_lr=1e-4, target_critics=2)
    sac = handed_over(trained_iql, base)
    assert sac.cfg.hidden_dims == SMALL.hidden_dims and sac.cfg.num_critics == 3 and sac.cfg.layer_norm
    assert sac.cfg.actor_lr == 1e-4 and sac.alpha == pytest.approx(0.05)  # SAC's own learning settings
    obs = random_obs(ROBOT_SPEC, 5, np.random.default_rng(1))
    np.testing.assert_array_equal(sac.act(obs, deterministic=True), trained_iql.act(obs))
    with torch.no_grad():
        features = trained_iql.encoder(trained_iql.obs_to_tensors(obs))
        action = torch.zeros(5, 2)
        assert torch.equal(sac.critic(features, action), trained_iql.critic(features, action))
        assert torch.equal(sac.critic_target(features, action), trained_iql.critic_target(features, action))
    assert sac.num_updates == 0
    metrics = sac.update(random_batch(ROBOT_SPEC, seed=9))  # SAC learns on from there
    assert np.isfinite(metrics["critic_loss"]) and sac.num_updates == 1


def test_other_action_bounds_or_network_sizes_are_refused(trained_iql) -> None:
    with pytest.raises(AgentError, match="the same network would mean other actions"):
        handed_over(trained_iql, space=gym.spaces.Box(-1.0, 1.0, (2,), np.float32))
    sac = SAC(SACConfig(hidden_dims=(8, 8)), ROBOT_SPEC, box())
    bounds = (trained_iql.action_low.numpy(), trained_iql.action_high.numpy())
    with pytest.raises(AgentError, match="does not match this agent"):
        load_iql_into_sac(sac, trained_iql.state_dict(), bounds)
    with pytest.raises(AgentError, match="not an IQL state_dict"):
        load_iql_into_sac(sac, {"actor": {}}, bounds)
