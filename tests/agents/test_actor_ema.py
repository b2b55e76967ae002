"""SAC's averaged actor (``--agent.actor-ema``): what evaluation, deterministic acting and export use."""

from __future__ import annotations

import dataclasses

import gymnasium as gym
import numpy as np
import pytest
import torch

from agents.config import SACConfig
from agents.errors import AgentError
from agents.export import export_policy, load_policy
from agents.sac import SAC
from buffer.batch import Batch

SPEC = {"state": ((3,), np.dtype(np.float32))}
BOX = gym.spaces.Box(-2.0, 2.0, (2,), np.float32)
SMALL = SACConfig(hidden_dims=(16, 16), actor_ema=0.2)


def batch(rng: np.random.Generator, size: int = 32) -> Batch:
    obs = {"state": rng.normal(size=(size, 3)).astype(np.float32)}
    action = rng.uniform(-2.0, 2.0, (size, 2)).astype(np.float32)
    return Batch(
        obs=obs,
        action=action,
        reward=-np.abs(action).sum(axis=1).astype(np.float32),
        next_obs=obs,
        terminated=np.ones(size, np.float32),
        discount=np.zeros(size, np.float32),
        weights=np.ones(size, np.float32),
        indices=np.arange(size, dtype=np.int64),
    )


def params(module: torch.nn.Module) -> list[torch.Tensor]:
    return [p.detach().clone() for p in module.parameters()]


def test_the_average_follows_the_actor_at_the_polyak_rate_and_evaluation_reads_it() -> None:
    sac = SAC(SMALL, SPEC, BOX)
    assert sac.eval_actor is not sac.actor
    rng = np.random.default_rng(0)
    expected = params(sac.actor)  # the copy starts at the actor
    for _ in range(5):
        sac.update(batch(rng))
        expected = [e + 0.2 * (a - e) for e, a in zip(expected, params(sac.actor), strict=True)]
    for got, want in zip(params(sac.eval_actor), expected, strict=True):
        torch.testing.assert_close(got, want)
    assert any(not torch.equal(a, e) for a, e in zip(params(sac.actor), params(sac.eval_actor), strict=True))

    obs = {"state": rng.normal(size=(4, 3)).astype(np.float32)}
    with torch.no_grad():
        features = sac.encoder(sac.obs_to_tensors(obs))
        averaged = sac.to_env(sac.eval_actor.deterministic(features)).numpy()
        live = sac.to_env(sac.actor.deterministic(features)).numpy()
    np.testing.assert_allclose(sac.act(obs, deterministic=True), averaged, rtol=1e-6, atol=1e-6)
    assert not np.allclose(averaged, live)


def test_export_ships_the_average_and_checkpoints_keep_it(tmp_path) -> None:
    sac = SAC(SMALL, SPEC, BOX)
    rng = np.random.default_rng(1)
    for _ in range(5):
        sac.update(batch(rng))
    obs = {"state": rng.normal(size=(3,)).astype(np.float32)}
    policy = load_policy(export_policy(sac, tmp_path / "policy.pt"))
    np.testing.assert_allclose(policy(obs), sac.act(obs, deterministic=True), rtol=1e-5, atol=1e-5)

    restored = SAC(SMALL, SPEC, BOX)
    restored.load_state_dict(sac.state_dict())
    for a, b in zip(params(restored.eval_actor), params(sac.eval_actor), strict=True):
        assert torch.equal(a, b)
    state = sac.state_dict()
    del state["eval_actor"]  # a checkpoint without one (another agent's): the average starts at the actor
    restored.load_state_dict(state)
    for a, b in zip(params(restored.eval_actor), params(sac.actor), strict=True):
        assert torch.equal(a, b)


def test_off_by_default_and_out_of_range_rates_are_refused() -> None:
    plain = SAC(dataclasses.replace(SMALL, actor_ema=0.0), SPEC, BOX)
    assert plain.eval_actor is plain.actor and "eval_actor" not in plain.state_dict()
    with pytest.raises(AgentError, match="actor_ema"):
        SAC(dataclasses.replace(SMALL, actor_ema=-0.1), SPEC, BOX)
