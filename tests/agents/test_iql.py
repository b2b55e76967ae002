"""IQL: losses and update semantics, shapes, export parity, exact resume, bad input."""

from __future__ import annotations

import dataclasses

import gymnasium as gym
import numpy as np
import pytest
import torch

from agents.config import IQLConfig, PixelEncoderConfig
from agents.errors import AgentError
from agents.export import export_policy, load_policy
from agents.iql import IQL, expectile_loss
from buffer.batch import Batch

STATE_SPEC = {"state": ((5,), np.dtype(np.float32))}
ROBOT_SPEC = {
    "shoulder_pan.pos": ((1,), np.dtype(np.float32)),
    "gripper.pos": ((1,), np.dtype(np.float32)),
    "pixels/front": ((24, 24, 3), np.dtype(np.uint8)),
}
SMALL = IQLConfig(hidden_dims=(32, 32), pixel=PixelEncoderConfig(channels=4, num_layers=2, feature_dim=8))


def box(dim: int = 2) -> gym.spaces.Box:
    return gym.spaces.Box(-2.0, 3.0, (dim,), np.float32)


def random_obs(spec, batch: int, rng: np.random.Generator) -> dict[str, np.ndarray]:
    return {
        key: rng.integers(0, 256, (batch, *shape), dtype=np.uint8)
        if dtype == np.uint8
        else rng.normal(size=(batch, *shape)).astype(np.float32)
        for key, (shape, dtype) in spec.items()
    }


def random_batch(spec, batch: int = 16, seed: int = 0, **overrides) -> Batch:
    rng = np.random.default_rng(seed)
    fields = {
        "obs": random_obs(spec, batch, rng),
        "action": rng.uniform(-2.0, 3.0, (batch, 2)).astype(np.float32),
        "reward": rng.normal(size=batch).astype(np.float32),
        "next_obs": random_obs(spec, batch, rng),
        "terminated": np.zeros(batch, np.float32),
        "discount": np.full(batch, 0.99, np.float32),
        "weights": np.ones(batch, np.float32),
        "indices": np.arange(batch, dtype=np.int64),
    }
    fields.update(overrides)
    return Batch(**fields)


def params(module: torch.nn.Module) -> list[torch.Tensor]:
    return [p.detach().clone() for p in module.parameters()]


def same(a: list[torch.Tensor], b: list[torch.Tensor]) -> bool:
    return all(torch.equal(x, y) for x, y in zip(a, b, strict=True))


def test_expectile_loss_weights_under_and_over_estimates_asymmetrically() -> None:
    diff = torch.tensor([2.0, -2.0])
    torch.testing.assert_close(expectile_loss(diff, 0.9), torch.tensor([0.9 * 4.0, 0.1 * 4.0]))
    torch.testing.assert_close(expectile_loss(diff, 0.5), torch.tensor([2.0, 2.0]))


def test_value_converges_to_the_expectile_of_q() -> None:
    # With Q fixed (critic lr 0) and one state, V must settle at the expectile of Q over the data's actions.
    cfg = dataclasses.replace(
        SMALL, critic_lr=0.0, actor_lr=0.0, value_lr=1e-2, expectile=0.9, normalize_obs=False
    )
    agent = IQL(cfg, STATE_SPEC, box())
    rng = np.random.default_rng(0)
    obs = {"state": np.zeros((64, 5), np.float32)}
    actions = rng.uniform(-2.0, 3.0, (64, 2)).astype(np.float32)
    batch = random_batch(STATE_SPEC, 64, obs=obs, next_obs=obs, action=actions)
    for _ in range(250):
        agent.update(batch)
    with torch.no_grad():
        q = agent.critic_target(
            agent.encoder(agent.obs_to_tensors(obs)), agent.to_unit(torch.as_tensor(actions))
        )
    q = q.min(dim=0).values.numpy()
    # The 0.9-expectile e solves 0.9 * sum(q - e)_+ = 0.1 * sum(e - q)_+.
    grid = np.linspace(q.min(), q.max(), 2001)
    balance = [0.9 * np.clip(q - e, 0, None).sum() - 0.1 * np.clip(e - q, 0, None).sum() for e in grid]
    expected = grid[int(np.argmin(np.abs(balance)))]
    assert agent.values(obs)[0] == pytest.approx(expected, abs=0.02 * (q.max() - q.min()))
    assert expected > np.median(q)


@pytest.mark.parametrize("spec", [STATE_SPEC, ROBOT_SPEC], ids=["state", "joints+pixels"])
def test_update_and_act_shapes(spec) -> None:
    agent = IQL(SMALL, spec, box())
    metrics = agent.update(random_batch(spec))
    assert set(metrics) == {
        "value_loss",
        "critic_loss",
        "actor_loss",
        "v_mean",
        "q_mean",
        "advantage",
        "awr_weight",
    }
    assert all(np.isfinite(v) for v in metrics.values())
    rng = np.random.default_rng(1)
    batch_obs = random_obs(spec, 3, rng)
    action = agent.act(batch_obs)
    assert action.shape == (3, 2) and action.dtype == np.float32
    assert np.all(action >= -2.0) and np.all(action <= 3.0)
    single = agent.act({k: v[0] for k, v in batch_obs.items()}, deterministic=False)
    assert single.shape == (2,)
    assert agent.values(batch_obs).shape == (3,)


def test_pixel_encoder_learns_from_the_q_loss_only_and_bc_trains_the_actor_only() -> None:
    agent = IQL(SMALL, ROBOT_SPEC, box())
    enc, value = params(agent.encoder.pixel_encoders), params(agent.value)
    agent.update(random_batch(ROBOT_SPEC))
    assert not same(enc, params(agent.encoder.pixel_encoders))
    assert not same(value, params(agent.value))

    bc = IQL(dataclasses.replace(SMALL, bc=True), STATE_SPEC, box())
    actor, critic, value = params(bc.actor), params(bc.critic), params(bc.value)
    metrics = bc.update(random_batch(STATE_SPEC))
    assert set(metrics) == {"actor_loss"}
    assert not same(actor, params(bc.actor))
    assert same(critic, params(bc.critic)) and same(value, params(bc.value))


def test_actor_follows_high_advantage_actions() -> None:
    # Two actions in one state; only one is rewarded. AWR must move the policy mean towards it,
    # BC of the same data towards their average.
    obs = {"state": np.zeros((256, 5), np.float32)}
    actions = np.where(np.arange(256)[:, None] % 2 == 0, 2.5, -1.5).astype(np.float32).repeat(2, axis=1)
    reward = (actions[:, 0] > 0).astype(np.float32)
    batch = random_batch(
        STATE_SPEC,
        256,
        obs=obs,
        next_obs=obs,
        action=actions,
        reward=reward,
        discount=np.zeros(256, np.float32),
    )
    cfg = dataclasses.replace(SMALL, actor_lr=1e-2, critic_lr=1e-2, value_lr=1e-2, temperature=10.0)
    iql, bc = IQL(cfg, STATE_SPEC, box()), IQL(dataclasses.replace(cfg, bc=True), STATE_SPEC, box())
    for _ in range(150):
        iql.update(batch)
        bc.update(batch)
    assert iql.act({"state": obs["state"][0]})[0] > 2.0
    assert abs(bc.act({"state": obs["state"][0]})[0] - 0.5) < 0.5


def test_resume_is_bit_for_bit() -> None:
    batches = [random_batch(ROBOT_SPEC, seed=s) for s in range(4)]
    a = IQL(SMALL, ROBOT_SPEC, box())
    for b in batches[:2]:
        a.update(b)
    snapshot = a.state_dict()
    b_agent = IQL(dataclasses.replace(SMALL, seed=7), ROBOT_SPEC, box())
    b_agent.load_state_dict(snapshot)
    for b in batches[2:]:
        ma, mb = a.update(b), b_agent.update(b)
        assert ma == mb
    for x, y in zip(a.state_dict()["actor"].values(), b_agent.state_dict()["actor"].values(), strict=True):
        assert torch.equal(x, y)
    for x, y in zip(a.state_dict()["critic"].values(), b_agent.state_dict()["critic"].values(), strict=True):
        assert torch.equal(x, y)
    obs = random_obs(ROBOT_SPEC, 1, np.random.default_rng(3))
    np.testing.assert_array_equal(a.act(obs, deterministic=False), b_agent.act(obs, deterministic=False))


def test_export_matches_the_agent(tmp_path) -> None:
    agent = IQL(SMALL, ROBOT_SPEC, box())
    for s in range(3):
        agent.update(random_batch(ROBOT_SPEC, seed=s))
    policy = load_policy(export_policy(agent, tmp_path / "policy.pt"))
    obs = random_obs(ROBOT_SPEC, 4, np.random.default_rng(5))
    np.testing.assert_allclose(policy(obs), agent.act(obs), rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(
        policy({k: v[0] for k, v in obs.items()}), agent.act(obs)[0], rtol=1e-5, atol=1e-5
    )


def test_bad_input_is_refused() -> None:
    with pytest.raises(AgentError, match="1-D Box"):
        IQL(SMALL, STATE_SPEC, gym.spaces.Discrete(3))  # type: ignore[arg-type]
    with pytest.raises(AgentError, match="expectile"):
        IQL(dataclasses.replace(SMALL, expectile=1.0), STATE_SPEC, box())
    agent = IQL(SMALL, STATE_SPEC, box())
    with pytest.raises(AgentError, match="missing key 'state'"):
        agent.act({"other": np.zeros(5, np.float32)})
    other = IQL(dataclasses.replace(SMALL, hidden_dims=(16,)), STATE_SPEC, box())
    with pytest.raises(AgentError, match="does not match"):
        other.load_state_dict(agent.state_dict())


def test_one_update_is_the_iql_step_written_out() -> None:
    """Value (expectile), Q (TD to r + discount * V(s')) and actor (advantage-weighted log-likelihood of a
    Gaussian around tanh(mean)) losses, their logged values and the one optimizer step on their sum, against
    the formulas computed here from a copy of the agent."""
    import math

    cfg = dataclasses.replace(SMALL, temperature=2.0, max_weight=5.0)
    agent = IQL(cfg, STATE_SPEC, box())
    rng = np.random.default_rng(3)
    batch = random_batch(
        STATE_SPEC,
        seed=3,
        discount=rng.choice([0.0, 0.9, 0.99], 16).astype(np.float32),
        weights=rng.uniform(0.2, 2.0, 16).astype(np.float32),
    )
    ref = IQL(cfg, STATE_SPEC, box())
    ref.load_state_dict(agent.state_dict())
    obs, next_obs = ref.obs_to_tensors(batch.obs), ref.obs_to_tensors(batch.next_obs)
    ref.encoder.update_statistics(obs)
    low, high = torch.as_tensor(box().low), torch.as_tensor(box().high)
    action = (2.0 * (torch.as_tensor(batch.action) - low) / (high - low) - 1.0).clamp(-1.0, 1.0)
    reward, discount = torch.as_tensor(batch.reward), torch.as_tensor(batch.discount)
    weights = torch.as_tensor(batch.weights)
    none = torch.zeros(16, 0)
    features = ref.encoder(obs)
    with torch.no_grad():
        q_data = ref.critic_target(features, action).min(dim=0).values
        q_target = reward + discount * ref.value(ref.encoder(next_obs), none)[0]
    v = ref.value(features.detach(), none)[0]
    u = q_data - v
    value_loss = (torch.where(u > 0, 0.7, 0.3) * u**2).mean()
    q = ref.critic(features, action)
    critic_loss = sum(0.5 * (weights * (q[i] - q_target) ** 2).mean() for i in range(q.shape[0]))
    advantage = u.detach()
    awr = torch.exp(2.0 * advantage).clamp(max=5.0)
    mean, log_std = ref.actor(features.detach())
    std = torch.exp(log_std)
    log_prob = (
        -((action - torch.tanh(mean)) ** 2) / (2 * std**2) - log_std - 0.5 * math.log(2 * math.pi)
    ).sum(-1)
    actor_loss = -(awr * log_prob).mean()
    ref.optimizer.zero_grad()
    (value_loss + critic_loss + actor_loss).backward()
    ref.optimizer.step()

    metrics = agent.update(batch)
    expected = {
        "value_loss": value_loss,
        "critic_loss": critic_loss,
        "actor_loss": actor_loss,
        "v_mean": v.mean(),
        "q_mean": q.mean(),
        "advantage": advantage.mean(),
        "awr_weight": awr.mean(),
    }
    for name, value in expected.items():
        assert metrics[name] == pytest.approx(float(value.detach()), rel=1e-4, abs=1e-6), name
    for net in ("actor", "critic", "value", "encoder"):
        for got, want in zip(getattr(agent, net).parameters(), getattr(ref, net).parameters(), strict=True):
            torch.testing.assert_close(got, want, rtol=1e-5, atol=1e-6, msg=lambda m, n=net: f"{n}: {m}")
    assert agent.num_updates == 1
    agent.update(batch)
    assert agent.num_updates == 2
