"""SAC's behaviour cloning on the prior rows of a batch (``--agent.bc-weight``) and its Q-filter."""

from __future__ import annotations

import dataclasses

import gymnasium as gym
import numpy as np
import pytest
import torch

from agents.config import SACConfig
from agents.errors import AgentError
from agents.sac import SAC
from buffer.batch import Batch

SPEC = {"state": ((3,), np.dtype(np.float32))}
BOX = gym.spaces.Box(-1.0, 1.0, (2,), np.float32)
SMALL = SACConfig(hidden_dims=(32, 32), layer_norm=True, init_alpha=0.01)
DATA_ACTION = np.array([0.7, -0.6], np.float32)
"""The prior rows' (demonstrated) action."""
BEST_ACTION = np.array([-0.6, 0.5], np.float32)
"""The action the reward of the bandit below pays most for, far from DATA_ACTION."""


def bandit_batch(rng: np.random.Generator, prior: bool, size: int = 64) -> Batch:
    """One-step episodes (discount 0): the reward is -||a - BEST_ACTION||^2. The first half of the rows are
    prior rows that took DATA_ACTION, the rest random actions (so the critic learns the whole bowl)."""
    obs = {"state": rng.normal(size=(size, 3)).astype(np.float32)}
    action = rng.uniform(-1.0, 1.0, (size, 2)).astype(np.float32)
    is_prior = np.arange(size) < size // 2
    action[is_prior] = DATA_ACTION
    reward = -((action - BEST_ACTION) ** 2).sum(axis=1).astype(np.float32)
    return Batch(
        obs=obs,
        action=action,
        reward=reward,
        next_obs=obs,
        terminated=np.ones(size, np.float32),
        discount=np.zeros(size, np.float32),
        weights=np.ones(size, np.float32),
        indices=np.arange(size, dtype=np.int64),
        prior=is_prior if prior else None,
    )


def train(cfg: SACConfig, prior: bool, updates: int = 400) -> tuple[SAC, float, np.ndarray]:
    """The agent, its last bc_loss and its mean deterministic action on fresh observations."""
    sac = SAC(cfg, SPEC, BOX)
    rng = np.random.default_rng(0)
    metrics: dict = {}
    for _ in range(updates):
        metrics = sac.update(bandit_batch(rng, prior))
    test_obs = {"state": rng.normal(size=(32, 3)).astype(np.float32)}
    return sac, float(metrics["bc_loss"]), sac.act(test_obs, deterministic=True).mean(axis=0)


def distance(a: np.ndarray, b: np.ndarray) -> float:
    return float(np.linalg.norm(a - b))


def test_without_the_q_filter_the_policy_is_pulled_to_the_prior_action() -> None:
    cfg = dataclasses.replace(SMALL, bc_weight=5.0, bc_q_filter=False)
    _, bc_loss, cloned = train(cfg, prior=True)
    _, none_loss, free = train(SMALL, prior=True)  # bc_weight 0: the batch's prior rows change nothing
    assert none_loss == 0.0 and bc_loss > 0.0
    assert distance(free, BEST_ACTION) < 0.6 and distance(free, DATA_ACTION) > 1.5  # plain SAC: to the best
    assert distance(cloned, DATA_ACTION) < 0.1


def test_the_q_filter_stops_cloning_an_action_the_critic_values_below_the_policys() -> None:
    _, filtered_loss, filtered = train(dataclasses.replace(SMALL, bc_weight=5.0), prior=True)
    _, _, unfiltered = train(dataclasses.replace(SMALL, bc_weight=5.0, bc_q_filter=False), prior=True)
    assert distance(unfiltered, DATA_ACTION) < 0.1
    assert distance(filtered, DATA_ACTION) > 0.5  # on its way to the best action, cloning switched off
    assert distance(filtered, BEST_ACTION) < distance(unfiltered, BEST_ACTION) - 0.5
    assert filtered_loss == 0.0  # every demonstrated action is now worth less than the policy's


def test_without_prior_rows_there_is_nothing_to_clone() -> None:
    sac = SAC(dataclasses.replace(SMALL, bc_weight=5.0), SPEC, BOX)
    before = [p.detach().clone() for p in sac.actor.parameters()]
    metrics = sac.update(bandit_batch(np.random.default_rng(0), prior=False))
    assert metrics["bc_loss"] == 0.0
    assert any(not torch.equal(a, b) for a, b in zip(before, sac.actor.parameters()))  # SAC still learns


def test_a_negative_weight_is_one_agent_error() -> None:
    with pytest.raises(AgentError, match="bc_weight >= 0"):
        SAC(dataclasses.replace(SMALL, bc_weight=-1.0), SPEC, BOX)
