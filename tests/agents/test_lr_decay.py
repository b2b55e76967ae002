"""SAC's linear learning-rate decay (``--agent.lr-final-fraction``): the rates each update uses, and the run's
length filled in by ``vlmrl train``."""

from __future__ import annotations

import dataclasses

import gymnasium as gym
import numpy as np
import pytest

from agents.config import SACConfig
from agents.errors import AgentError
from agents.sac import SAC
from buffer.batch import Batch
from vlmrl.online.config import TrainConfig
from vlmrl.online.trainer import run_agent_config

SPEC = {"state": ((3,), np.dtype(np.float32))}
BOX = gym.spaces.Box(-2.0, 2.0, (2,), np.float32)
DECAY = SACConfig(
    hidden_dims=(16, 16), actor_lr=1e-3, critic_lr=2e-3, lr_final_fraction=0.1, lr_decay_updates=4
)


def batch(rng: np.random.Generator, size: int = 16) -> Batch:
    obs = {"state": rng.normal(size=(size, 3)).astype(np.float32)}
    action = rng.uniform(-2.0, 2.0, (size, 2)).astype(np.float32)
    return Batch(
        obs=obs,
        action=action,
        reward=-np.abs(action).sum(axis=1).astype(np.float32),
        next_obs=obs,
        terminated=np.zeros(size, np.float32),
        discount=np.full(size, 0.9, np.float32),
        weights=np.ones(size, np.float32),
        indices=np.arange(size, dtype=np.int64),
    )


def test_the_rates_fall_linearly_to_the_final_fraction_and_stay_there() -> None:
    sac = SAC(DECAY, SPEC, BOX)
    rng = np.random.default_rng(0)
    actor, critic, alpha = [], [], []
    for _ in range(6):
        metrics = sac.update(batch(rng))
        groups = sac.optimizer.param_groups
        actor.append(groups[0]["lr"])
        critic.append(groups[1]["lr"])
        alpha.append(groups[2]["lr"])
        assert metrics["lr_scale"] == pytest.approx(actor[-1] / 1e-3)
    scales = [1.0, 1 - 0.9 / 4, 1 - 0.9 * 2 / 4, 1 - 0.9 * 3 / 4, 0.1, 0.1]  # the rate of update k: k done
    np.testing.assert_allclose(actor, [1e-3 * s for s in scales], rtol=1e-9)
    np.testing.assert_allclose(critic, [2e-3 * s for s in scales], rtol=1e-9)
    assert alpha == [DECAY.alpha_lr] * 6  # the temperature's rate stays


def test_without_decay_the_rates_are_constant_and_no_scale_is_logged() -> None:
    sac = SAC(dataclasses.replace(DECAY, lr_final_fraction=1.0, lr_decay_updates=0), SPEC, BOX)
    metrics = sac.update(batch(np.random.default_rng(1)))
    assert "lr_scale" not in metrics
    assert [g["lr"] for g in sac.optimizer.param_groups[:2]] == [1e-3, 2e-3]


def test_a_resumed_agent_continues_the_schedule() -> None:
    rng = np.random.default_rng(2)
    sac = SAC(DECAY, SPEC, BOX)
    for _ in range(2):
        sac.update(batch(rng))
    resumed = SAC(DECAY, SPEC, BOX)
    resumed.load_state_dict(sac.state_dict())
    assert resumed.lr_scale() == sac.lr_scale() == pytest.approx(1 - 0.9 * 2 / 4)


@pytest.mark.parametrize("fraction, updates", [(0.0, 10), (1.5, 10), (0.5, -1)])
def test_bad_decay_settings_are_one_line_errors(fraction: float, updates: int) -> None:
    with pytest.raises(AgentError, match="lr_final_fraction"):
        SAC(dataclasses.replace(DECAY, lr_final_fraction=fraction, lr_decay_updates=updates), SPEC, BOX)


def test_train_spreads_a_decay_without_a_length_over_the_runs_updates() -> None:
    base = TrainConfig(total_steps=5_000, seed=3)
    decay = dataclasses.replace(
        base, agent=dataclasses.replace(base.agent, lr_final_fraction=0.2, utd_ratio=2)
    )
    assert run_agent_config(decay).lr_decay_updates == 10_000
    assert run_agent_config(decay).seed == 3
    given = dataclasses.replace(decay, agent=dataclasses.replace(decay.agent, lr_decay_updates=700))
    assert run_agent_config(given).lr_decay_updates == 700
    assert run_agent_config(base).lr_decay_updates == 0  # no decay asked: nothing filled in


def test_constant_rates_end_a_decay_at_the_configured_rates() -> None:
    """`vlmrl finetune` calls it: the rates on the robot are the ones it states, not a sim run's decayed ones."""
    rng = np.random.default_rng(3)
    sac = SAC(DECAY, SPEC, BOX)
    for _ in range(5):
        sac.update(batch(rng))
    assert sac.optimizer.param_groups[0]["lr"] == pytest.approx(1e-4)  # decayed to a tenth
    sac.constant_rates()
    for _ in range(2):
        metrics = sac.update(batch(rng))
    assert "lr_scale" not in metrics
    assert [g["lr"] for g in sac.optimizer.param_groups[:2]] == [1e-3, 2e-3]
