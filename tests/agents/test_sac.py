"""SAC: update semantics (weights, discounts, TD errors), encoder training, checkpoints, bad input."""

from __future__ import annotations

import dataclasses
import math

import gymnasium as gym
import numpy as np
import pytest
import torch

from agents.config import PixelEncoderConfig, SACConfig
from agents.errors import AgentError
from agents.networks import TwinCritic, squash
from agents.sac import SAC
from buffer.batch import Batch

STATE_SPEC = {"state": ((5,), np.dtype(np.float32))}
PIXEL_SPEC = {"state": ((3,), np.dtype(np.float32)), "pixels/front": ((24, 24, 3), np.dtype(np.uint8))}
SMALL = SACConfig(hidden_dims=(32, 32), pixel=PixelEncoderConfig(channels=4, num_layers=2, feature_dim=8))


def box(dim: int = 2, low: float = -2.0, high: float = 3.0) -> gym.spaces.Box:
    return gym.spaces.Box(low, high, (dim,), np.float32)


def random_obs(spec, batch: int, rng: np.random.Generator) -> dict[str, np.ndarray]:
    obs = {}
    for key, (shape, dtype) in spec.items():
        if dtype == np.uint8:
            obs[key] = rng.integers(0, 256, (batch, *shape), dtype=np.uint8)
        else:
            obs[key] = rng.normal(size=(batch, *shape)).astype(np.float32)
    return obs


def random_batch(spec, batch: int = 16, seed: int = 0, action_dim: int = 2, **overrides) -> Batch:
    rng = np.random.default_rng(seed)
    fields = {
        "obs": random_obs(spec, batch, rng),
        "action": rng.uniform(-2.0, 3.0, (batch, action_dim)).astype(np.float32),
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


def test_twin_critic_is_two_independent_mlps() -> None:
    torch.manual_seed(0)
    critic = TwinCritic(7, (16, 8), num_critics=2)
    features, action = torch.randn(5, 5), torch.randn(5, 2)
    q = critic(features, action)
    x = torch.cat([features, action], dim=-1)
    for i in range(2):
        h = torch.relu(x @ critic.weights[0][i] + critic.biases[0][i])
        h = torch.relu(h @ critic.weights[1][i] + critic.biases[1][i])
        expected = h @ critic.last_weight[i, 0] + critic.last_bias[i]
        torch.testing.assert_close(q[i], expected)


def test_update_returns_metrics_and_per_sample_td_errors() -> None:
    sac = SAC(SMALL, STATE_SPEC, box())
    metrics = sac.update(random_batch(STATE_SPEC, batch=16))
    for key in ("critic_loss", "actor_loss", "alpha_loss", "alpha", "entropy", "q_mean"):
        assert np.isfinite(metrics[key]), key
    assert metrics["td_error"].shape == (16,)
    assert metrics["td_error"].dtype == np.float32
    assert np.all(metrics["td_error"] >= 0)
    assert sac.num_updates == 1


def test_zero_importance_weights_leave_the_critics_untouched() -> None:
    sac = SAC(SMALL, STATE_SPEC, box())
    critic_before, actor_before = params(sac.critic), params(sac.actor)
    sac.update(random_batch(STATE_SPEC, weights=np.zeros(16, np.float32)))
    assert same(critic_before, params(sac.critic))
    assert not same(actor_before, params(sac.actor))


def test_discount_zero_makes_the_critic_regress_the_reward() -> None:
    """With discount 0 (terminal / n-step end) the target is the reward itself, whatever V(s') is."""
    cfg = SACConfig(hidden_dims=(64, 64), critic_lr=3e-3, normalize_obs=False)
    sac = SAC(cfg, STATE_SPEC, box())
    rng = np.random.default_rng(1)
    for _ in range(300):
        obs = random_obs(STATE_SPEC, 64, rng)
        action = rng.uniform(-2, 3, (64, 2)).astype(np.float32)
        reward = (obs["state"][:, 0] + action[:, 1]).astype(np.float32)
        batch = random_batch(
            STATE_SPEC, 64, action=action, obs=obs, reward=reward, discount=np.zeros(64, np.float32)
        )
        metrics = sac.update(batch)
    assert float(np.mean(metrics["td_error"])) < 0.25


def test_pixel_encoder_is_trained_by_the_critic_only() -> None:
    sac = SAC(SMALL, PIXEL_SPEC, box())
    encoder_before = params(sac.encoder)
    sac.update(random_batch(PIXEL_SPEC, weights=np.zeros(16, np.float32)))  # critic loss 0: actor loss only
    assert same(encoder_before, params(sac.encoder))
    sac.update(random_batch(PIXEL_SPEC, seed=1))
    assert not same(encoder_before, params(sac.encoder))


def test_actor_trains_encoder_lets_the_actor_loss_reach_the_encoder_and_not_the_critics() -> None:
    cfg = dataclasses.replace(SMALL, actor_trains_encoder=True)
    sac = SAC(cfg, PIXEL_SPEC, box())
    encoder_before, critic_before = params(sac.encoder), params(sac.critic)
    sac.update(random_batch(PIXEL_SPEC, weights=np.zeros(16, np.float32)))  # critic loss 0: actor loss only
    assert not same(encoder_before, params(sac.encoder))
    assert same(critic_before, params(sac.critic))


def test_target_networks_follow_by_polyak_averaging() -> None:
    sac = SAC(SACConfig(hidden_dims=(16,), tau=0.25), STATE_SPEC, box())
    target_before = params(sac.critic_target)
    sac.update(random_batch(STATE_SPEC))
    for old, online, new in zip(target_before, params(sac.critic), params(sac.critic_target)):
        torch.testing.assert_close(new, 0.75 * old + 0.25 * online)


def test_temperature_is_learned_only_when_autotuned() -> None:
    tuned = SAC(SMALL, STATE_SPEC, box())
    fixed = SAC(SACConfig(hidden_dims=(32, 32), autotune_alpha=False, init_alpha=0.2), STATE_SPEC, box())
    for seed in range(3):
        tuned.update(random_batch(STATE_SPEC, seed=seed))
        fixed.update(random_batch(STATE_SPEC, seed=seed))
    assert tuned.alpha != pytest.approx(1.0)
    assert fixed.alpha == pytest.approx(0.2)
    assert tuned.num_updates == fixed.num_updates == 3


def test_layer_norm_critics_train() -> None:
    sac = SAC(SACConfig(hidden_dims=(32, 32), layer_norm=True), STATE_SPEC, box())
    before = params(sac.critic)
    metrics = sac.update(random_batch(STATE_SPEC))
    assert np.isfinite(metrics["critic_loss"])
    assert len(before) == 2 + 2 + 2 + 2 * 2  # first, hidden and output layers, two LayerNorms
    assert not same(before, params(sac.critic))


def test_actions_are_in_env_units_and_deterministic_mode_is_repeatable() -> None:
    sac = SAC(SMALL, PIXEL_SPEC, box(3, low=10.0, high=20.0))
    obs = {k: v[0] for k, v in random_obs(PIXEL_SPEC, 1, np.random.default_rng(0)).items()}
    samples = np.stack([sac.act(obs) for _ in range(50)])
    assert samples.shape == (50, 3) and samples.dtype == np.float32
    assert np.all((samples >= 10.0) & (samples <= 20.0))
    assert samples.std(axis=0).min() > 0
    np.testing.assert_array_equal(sac.act(obs, deterministic=True), sac.act(obs, deterministic=True))
    batched = sac.act(random_obs(PIXEL_SPEC, 4, np.random.default_rng(1)), deterministic=True)
    assert batched.shape == (4, 3)


@pytest.mark.parametrize("target_critics", [None, 2])
def test_state_dict_resumes_bit_for_bit(target_critics) -> None:
    cfg = SMALL if target_critics is None else dataclasses.replace(SMALL, num_critics=4, target_critics=2)
    a = SAC(cfg, PIXEL_SPEC, box())
    for seed in range(2):
        a.update(random_batch(PIXEL_SPEC, seed=seed))
    b = SAC(dataclasses.replace(cfg, seed=7), PIXEL_SPEC, box())
    b.load_state_dict(a.state_dict())
    for seed in range(2, 4):
        ma, mb = a.update(random_batch(PIXEL_SPEC, seed=seed)), b.update(random_batch(PIXEL_SPEC, seed=seed))
        np.testing.assert_array_equal(ma["td_error"], mb["td_error"])
    assert same(params(a.actor), params(b.actor))
    assert same(params(a.critic_target), params(b.critic_target))
    obs = {k: v[0] for k, v in random_obs(PIXEL_SPEC, 1, np.random.default_rng(5)).items()}
    np.testing.assert_array_equal(a.act(obs), b.act(obs))


def test_bad_inputs_raise_agent_errors() -> None:
    with pytest.raises(AgentError, match="finite action bounds"):
        SAC(SMALL, STATE_SPEC, gym.spaces.Box(-np.inf, np.inf, (2,), np.float32))
    with pytest.raises(AgentError, match="pixels/front"):
        SAC(SMALL, {"pixels/front": ((24, 24, 3), np.dtype(np.float32))}, box())
    sac = SAC(SMALL, STATE_SPEC, box())
    with pytest.raises(AgentError, match="missing key 'state'"):
        sac.act({"pixels/front": np.zeros((24, 24, 3), np.uint8)})
    other = SAC(SACConfig(hidden_dims=(8,)), STATE_SPEC, box())
    with pytest.raises(AgentError, match="does not match"):
        sac.load_state_dict(other.state_dict())


def test_sac_learns_a_contextual_bandit() -> None:
    """One-step task: reward -(a - target(s))^2; the deterministic policy must track the target."""
    cfg = SACConfig(hidden_dims=(64, 64), actor_lr=1e-3, critic_lr=1e-3, init_alpha=0.1, tau=0.05)
    sac = SAC(cfg, {"state": ((2,), np.dtype(np.float32))}, box(1, low=-1.0, high=1.0))
    rng = np.random.default_rng(0)

    def target(state: np.ndarray) -> np.ndarray:
        return 0.8 * np.tanh(state[:, :1] - state[:, 1:])

    for _ in range(400):
        obs = {"state": rng.uniform(-1, 1, (64, 2)).astype(np.float32)}
        action = sac.act(obs)
        reward = -np.square(action - target(obs["state"])).sum(axis=1).astype(np.float32)
        ones = np.ones(64, np.float32)
        sac.update(Batch(obs, action, reward, obs, ones, 0 * ones, ones, np.arange(64)))
    test = {"state": rng.uniform(-1, 1, (200, 2)).astype(np.float32)}
    error = np.abs(sac.act(test, deterministic=True) - target(test["state"]))
    assert float(error.mean()) < 0.1


@pytest.mark.parametrize("backup_entropy", [True, False])
def test_td_target_with_discount_is_the_twin_minimum_minus_the_entropy_term(backup_entropy: bool) -> None:
    """Issue #15 (9b): the TD target r + d * (min(Q1', Q2')(s', a') - alpha * log pi(a'|s')), a' ~ pi(s'),
    computed here by hand from the networks (discount 0.9, a large temperature), against the TD errors the
    update reports. Taking the max of the twin, or adding the entropy term, changes them. Without
    ``backup_entropy`` (issue #32) the entropy term is left out of the target."""
    cfg = dataclasses.replace(SMALL, normalize_obs=False, init_alpha=0.7, backup_entropy=backup_entropy)
    sac = SAC(cfg, STATE_SPEC, box())
    batch = random_batch(STATE_SPEC, batch=32, seed=3, discount=np.full(32, 0.9, np.float32))
    noise_source = torch.Generator().manual_seed(0)
    noise_source.set_state(sac.generator.get_state())
    next_noise = torch.randn((32, 2), generator=noise_source)  # the first draw of the update
    with torch.no_grad():
        obs, next_obs = sac.obs_to_tensors(batch.obs), sac.obs_to_tensors(batch.next_obs)
        next_features = sac.encoder(next_obs)
        mean, log_std = sac.actor(next_features)
        pre_tanh = mean + log_std.exp() * next_noise
        next_action = torch.tanh(pre_tanh)
        log_pi = torch.distributions.Normal(mean, log_std.exp()).log_prob(pre_tanh).sum(-1) - torch.log(
            1 - next_action.pow(2)
        ).sum(-1)
        next_q = sac.critic_target(
            torch.cat([next_features, sac.encoder.privileged(next_obs)], -1), next_action
        )
        assert next_q.shape == (2, 32) and (next_q[0] - next_q[1]).abs().max() > 1e-2  # the min matters
        entropy_term = 0.7 * log_pi if backup_entropy else 0.0
        target = torch.as_tensor(batch.reward) + 0.9 * (torch.minimum(next_q[0], next_q[1]) - entropy_term)
        features = torch.cat([sac.encoder(obs), sac.encoder.privileged(obs)], -1)
        q = sac.critic(features, sac.to_unit(torch.as_tensor(batch.action)))
        expected = (q - target).abs().mean(dim=0).numpy()
        critic_loss = 0.5 * (q - target).pow(2).mean(dim=1).sum()  # summed over the twin, unit weights
    metrics = sac.update(batch)
    np.testing.assert_allclose(metrics["td_error"], expected, rtol=1e-4, atol=1e-4)
    assert metrics["critic_loss"] == pytest.approx(float(critic_loss), rel=1e-4)


def test_actions_map_between_env_units_and_the_actors_units() -> None:
    sac = SAC(SMALL, STATE_SPEC, box(2, low=-2.0, high=3.0))
    env = torch.tensor([[-2.0, 3.0], [0.5, 1.75], [-9.0, 9.0]])
    unit = sac.to_unit(env)
    torch.testing.assert_close(unit, torch.tensor([[-1.0, 1.0], [0.0, 0.5], [-1.0, 1.0]]))  # outside: clamped
    torch.testing.assert_close(sac.to_env(unit[:2]), env[:2])


def test_a_checkpoint_from_before_asymmetric_critics_still_loads() -> None:
    """Checkpoints written before the privileged-state normaliser existed lack its entries."""
    old = SAC(SMALL, STATE_SPEC, box())
    old.update(random_batch(STATE_SPEC))
    state = old.state_dict()
    state["encoder"] = {
        k: v for k, v in state["encoder"].items() if not k.startswith("privileged_normalizer.")
    }
    new = SAC(dataclasses.replace(SMALL, seed=3), STATE_SPEC, box())
    new.load_state_dict(state)
    obs = random_obs(STATE_SPEC, 4, np.random.default_rng(2))
    np.testing.assert_array_equal(old.act(obs, deterministic=True), new.act(obs, deterministic=True))


def test_a_mismatched_checkpoint_is_one_line_naming_the_network() -> None:
    sac, other = SAC(SMALL, STATE_SPEC, box()), SAC(SACConfig(hidden_dims=(8,)), STATE_SPEC, box())
    with pytest.raises(AgentError) as info:
        sac.load_state_dict(other.state_dict())
    assert (
        str(info.value)
        == "agent checkpoint does not match this agent: Error(s) in loading state_dict for Actor:"
    )


def noise_of_next_update(sac: SAC, batch_size: int) -> tuple[torch.Tensor, torch.Tensor]:
    """The (next-action, policy-action) noise the agent's next update draws, in that order."""
    source = torch.Generator().manual_seed(0)
    source.set_state(sac.generator.get_state())
    return torch.randn((batch_size, sac.action_dim), generator=source), torch.randn(
        (batch_size, sac.action_dim), generator=source
    )


def actor_objective(sac: SAC, batch: Batch, noise: torch.Tensor) -> float:
    """E[alpha * log pi(a|s) - Q(s, a)], a = pi(s) with the given noise; Q: the twin's minimum, the
    ensemble's mean for more critics (REDQ)."""
    with torch.no_grad():
        obs = sac.obs_to_tensors(batch.obs)
        features = sac.encoder(obs)
        action, log_pi = squash(*sac.actor(features), noise)
        q_all = sac.critic(torch.cat([features, sac.encoder.privileged(obs)], -1), action)
        q = q_all.min(dim=0).values if sac.cfg.num_critics <= 2 else q_all.mean(dim=0)
        return float((sac.alpha * log_pi - q).mean())


@pytest.mark.parametrize("num_critics", [2, 3])
def test_actor_loss_is_the_entropy_term_minus_the_critics_and_the_update_lowers_it(num_critics) -> None:
    """Zero importance weights: the critics stay put, so the actor's own step must lower its objective."""
    cfg = dataclasses.replace(
        SMALL, normalize_obs=False, autotune_alpha=False, init_alpha=0.5, num_critics=num_critics
    )
    sac = SAC(cfg, STATE_SPEC, box())
    batch = random_batch(STATE_SPEC, batch=32, seed=4, weights=np.zeros(32, np.float32))
    _, pi_noise = noise_of_next_update(sac, 32)
    before = actor_objective(sac, batch, pi_noise)
    metrics = sac.update(batch)
    assert metrics["actor_loss"] == pytest.approx(before, rel=1e-4, abs=1e-5)
    assert actor_objective(sac, batch, pi_noise) < before


def test_temperature_moves_towards_the_target_entropy() -> None:
    """alpha_loss = -log(alpha) * (target_entropy - entropy): alpha grows when the policy's entropy is below
    the target and shrinks above it."""
    for target_entropy in (-3.0, 3.0):  # below and above the entropy of a fresh policy (about 0.5)
        cfg = dataclasses.replace(SMALL, normalize_obs=False, init_alpha=0.5, target_entropy=target_entropy)
        sac = SAC(cfg, STATE_SPEC, box())
        metrics = sac.update(random_batch(STATE_SPEC, batch=32, seed=5))
        gap = target_entropy - metrics["entropy"]
        assert abs(gap) > 0.5
        assert metrics["alpha_loss"] == pytest.approx(-math.log(0.5) * gap, rel=1e-4)
        assert np.sign(math.log(sac.alpha) - math.log(0.5)) == np.sign(gap)


def test_redq_target_is_the_minimum_over_a_random_subset_of_the_ensemble() -> None:
    cfg = dataclasses.replace(SMALL, normalize_obs=False, num_critics=4, target_critics=2, seed=5)
    sac = SAC(cfg, STATE_SPEC, box())
    batch = random_batch(STATE_SPEC, batch=32, seed=6)
    source = torch.Generator().manual_seed(0)
    source.set_state(sac.generator.get_state())
    next_noise = torch.randn((32, 2), generator=source)
    torch.randn((32, 2), generator=source)  # the policy-action noise
    subset = torch.randperm(4, generator=source)[:2]
    with torch.no_grad():
        obs, next_obs = sac.obs_to_tensors(batch.obs), sac.obs_to_tensors(batch.next_obs)
        next_features = sac.encoder(next_obs)
        next_action, log_pi = squash(*sac.actor(next_features), next_noise)
        next_qs = sac.critic_target(next_features, next_action)
        subset_min, all_min = next_qs[subset].min(0).values, next_qs.min(0).values
        assert (subset_min - all_min).abs().max() > 0.1  # the subset matters (seed 5: critics 1 and 2)
        target = torch.as_tensor(batch.reward) + 0.99 * (subset_min - sac.alpha * log_pi)
        q = sac.critic(sac.encoder(obs), sac.to_unit(torch.as_tensor(batch.action)))
        expected = (q - target).abs().mean(dim=0).numpy()
    np.testing.assert_allclose(sac.update(batch)["td_error"], expected, rtol=1e-4, atol=1e-4)


def test_privileged_keys_reach_the_critics_but_not_the_actor() -> None:
    spec = STATE_SPEC | {"privileged": ((3,), np.dtype(np.float32))}
    cfg = dataclasses.replace(SMALL, normalize_obs=False)  # (normalising would cancel the shift below)
    agents = [SAC(cfg, spec, box(), privileged_keys=("privileged",)) for _ in range(2)]
    batch = random_batch(spec, seed=7)
    shifted = batch._replace(
        obs=batch.obs | {"privileged": batch.obs["privileged"] + 5.0},
        next_obs=batch.next_obs | {"privileged": batch.next_obs["privileged"] + 5.0},
    )
    td_same, td_shifted = agents[0].update(batch)["td_error"], agents[1].update(shifted)["td_error"]
    assert not np.allclose(td_same, td_shifted)  # the critics read the privileged state
    state = {"state": batch.obs["state"][:4]}
    np.testing.assert_array_equal(
        agents[0].act(state, deterministic=True).shape, (4, 2)
    )  # the actor does not


def test_a_one_pixel_drq_shift_is_applied() -> None:
    """Pad 0 trains on the frames as stored; any pad (1 pixel too) shifts them, which changes the TD errors."""
    batch = random_batch(PIXEL_SPEC, seed=8)
    td = {}
    for pad in (0, 1):
        cfg = dataclasses.replace(SMALL, pixel=dataclasses.replace(SMALL.pixel, shift_pad_px=pad))
        td[pad] = SAC(cfg, PIXEL_SPEC, box()).update(batch)["td_error"]
    assert not np.allclose(td[0], td[1])
