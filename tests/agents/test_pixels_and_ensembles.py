"""Issue #13 parts of SAC: policy image size, frozen/loaded encoders, critic ensembles, asymmetric critics."""

from __future__ import annotations

import dataclasses

import gymnasium as gym
import numpy as np
import pytest
import torch

from agents.config import PixelEncoderConfig, SACConfig
from agents.encoders import PixelEncoder, save_pixel_weights
from agents.errors import AgentError
from agents.export import export_onnx, export_policy, load_policy
from agents.sac import SAC
from buffer.batch import Batch

JOINTS = {f"{name}.pos": ((1,), np.dtype(np.float32)) for name in ("shoulder_pan", "gripper")}
ROBOT_SPEC = {**JOINTS, "pixels/front": ((32, 32, 3), np.dtype(np.uint8))}
SIM_SPEC = {**ROBOT_SPEC, "state": ((5,), np.dtype(np.float32))}
PIXELS = PixelEncoderConfig(image_size=16, channels=4, first_channels=4, num_layers=2, feature_dim=8)
SMALL = SACConfig(hidden_dims=(32, 32), pixel=PIXELS)
BOX = gym.spaces.Box(-1.0, 1.0, (2,), np.float32)


def random_obs(spec, batch: int, rng: np.random.Generator) -> dict[str, np.ndarray]:
    return {
        key: rng.integers(0, 256, (batch, *shape), dtype=np.uint8)
        if dtype == np.uint8
        else rng.normal(size=(batch, *shape)).astype(np.float32)
        for key, (shape, dtype) in spec.items()
    }


def random_batch(spec, batch: int = 16, seed: int = 0) -> Batch:
    rng = np.random.default_rng(seed)
    ones = np.ones(batch, np.float32)
    return Batch(
        random_obs(spec, batch, rng),
        rng.uniform(-1, 1, (batch, 2)).astype(np.float32),
        rng.normal(size=batch).astype(np.float32),
        random_obs(spec, batch, rng),
        0 * ones,
        0.99 * ones,
        ones,
        np.arange(batch),
    )


def params(module: torch.nn.Module) -> list[torch.Tensor]:
    return [p.detach().clone() for p in module.parameters()]


def test_frames_are_subsampled_to_the_policy_image_size() -> None:
    cfg = PixelEncoderConfig(image_size=32, num_layers=2)
    assert PixelEncoder((64, 64, 3), cfg).image_px == (32, 32)
    assert PixelEncoder((84, 84, 3), cfg).image_px == (42, 42)  # integer stride 2
    assert PixelEncoder((100, 100, 3), cfg).image_px == (34, 34)  # stride 3 keeps rows 0, 3, ..., 99
    assert PixelEncoder((20, 20, 3), cfg).image_px == (20, 20)  # never upsampled
    assert PixelEncoder((64, 64, 3), PixelEncoderConfig(image_size=0, num_layers=2)).image_px == (64, 64)
    # A 64 px frame made of 2x2 blocks of equal pixels encodes exactly as its 32 px version does.
    encoder = PixelEncoder((64, 64, 3), cfg)
    small = torch.randint(0, 256, (2, 32, 32, 3), dtype=torch.uint8)
    large = small.repeat_interleave(2, dim=1).repeat_interleave(2, dim=2)
    same_weights = PixelEncoder((32, 32, 3), cfg)
    same_weights.load_state_dict(encoder.state_dict())
    torch.testing.assert_close(encoder(large), same_weights(small))


def test_too_many_layers_for_the_image_is_one_agent_error() -> None:
    with pytest.raises(AgentError, match="do not fit 4x4 px policy images"):
        PixelEncoder((8, 8, 3), PixelEncoderConfig(image_size=4, num_layers=3))


def test_a_frozen_encoder_takes_no_gradient_and_loads_saved_weights(tmp_path) -> None:
    trained = SAC(SMALL, ROBOT_SPEC, BOX)
    for seed in range(2):
        trained.update(random_batch(ROBOT_SPEC, seed=seed))
    path = tmp_path / "encoder.pt"
    save_pixel_weights(trained.encoder, str(path))
    frozen_cfg = PixelEncoderConfig(**{**PIXELS.__dict__, "frozen": True, "weights_path": str(path)})
    frozen = SAC(SACConfig(hidden_dims=(32, 32), pixel=frozen_cfg, seed=3), ROBOT_SPEC, BOX)
    loaded = params(frozen.encoder.pixel_encoders)
    for a, b in zip(loaded, params(trained.encoder.pixel_encoders), strict=True):
        torch.testing.assert_close(a, b)
    critic_before = params(frozen.critic)
    frozen.update(random_batch(ROBOT_SPEC, seed=5))
    for a, b in zip(loaded, params(frozen.encoder.pixel_encoders), strict=True):
        assert torch.equal(a, b)
    assert not all(torch.equal(a, b) for a, b in zip(critic_before, params(frozen.critic), strict=True))


def test_bad_encoder_weights_are_one_agent_error(tmp_path) -> None:
    path = tmp_path / "other.pt"
    torch.save({"convs.0.weight": torch.zeros(3, 3, 3, 3)}, path)
    bad = PixelEncoderConfig(**{**PIXELS.__dict__, "weights_path": str(path)})
    with pytest.raises(AgentError, match="do not fit this encoder") as error:
        SAC(SACConfig(hidden_dims=(8,), pixel=bad), ROBOT_SPEC, BOX)
    # the line names what does not fit (not torch's header) and the flags of the former encoder
    assert "Missing key(s)" in str(error.value) and "--agent.pixel.patch-size 0" in str(error.value)
    missing = PixelEncoderConfig(**{**PIXELS.__dict__, "weights_path": str(tmp_path / "none.pt")})
    with pytest.raises(AgentError, match="cannot read pixel encoder weights"):
        SAC(SACConfig(hidden_dims=(8,), pixel=missing), ROBOT_SPEC, BOX)


def test_ensemble_runs_as_one_stacked_critic_and_rejects_bad_subsets() -> None:
    sac = SAC(SACConfig(hidden_dims=(16,), num_critics=5, target_critics=2), JOINTS, BOX)
    assert sac.critic.weights[0].shape[0] == 5
    metrics = sac.update(random_batch(JOINTS))
    assert metrics["td_error"].shape == (16,) and np.isfinite(metrics["q_mean"])
    with pytest.raises(AgentError, match="target_critics"):
        SAC(SACConfig(num_critics=2, target_critics=3), JOINTS, BOX)


def test_subset_target_matches_a_hand_computed_one() -> None:
    """With every TD weight but one zero, the critic moves towards r + d * min over the drawn subset."""
    cfg = SACConfig(
        hidden_dims=(16,), num_critics=4, target_critics=2, normalize_obs=False, autotune_alpha=False
    )
    sac = SAC(cfg, JOINTS, BOX)
    batch = random_batch(JOINTS, seed=1)
    obs, next_obs = sac.obs_to_tensors(batch.obs), sac.obs_to_tensors(batch.next_obs)
    gen = torch.Generator().manual_seed(0)
    gen.set_state(sac.generator.get_state())
    next_noise = torch.randn((16, 2), generator=gen)
    torch.randn((16, 2), generator=gen)  # the actor's noise
    subset = torch.randperm(4, generator=gen)[:2]
    with torch.no_grad():
        from agents.networks import squash

        mean, log_std = sac.actor(sac.encoder(next_obs))
        next_action, log_prob = squash(mean, log_std, next_noise)
        next_q = sac.critic_target(sac.encoder(next_obs), next_action)[subset].min(dim=0).values
        target = torch.as_tensor(batch.reward) + 0.99 * (next_q - sac.alpha * log_prob)
        q = sac.critic(sac.encoder(obs), sac.to_unit(torch.as_tensor(batch.action)))
    metrics = sac.update(batch)
    np.testing.assert_allclose(
        metrics["td_error"], (q - target).abs().mean(dim=0).numpy(), rtol=1e-5, atol=1e-5
    )


def test_asymmetric_critic_reads_privileged_state_and_the_actor_never_does(tmp_path) -> None:
    sac = SAC(SMALL, SIM_SPEC, BOX, privileged_keys=("state",))
    assert sac.encoder.privileged_dim == 5 and "state" not in sac.actor_obs_spec
    assert sac.critic.weights[0].shape[1] == sac.encoder.feature_dim + 5 + 2
    for seed in range(3):
        sac.update(random_batch(SIM_SPEC, seed=seed))
    assert float(sac.encoder.privileged_normalizer.count) == 48
    robot_obs = {k: v[0] for k, v in random_obs(ROBOT_SPEC, 1, np.random.default_rng(9)).items()}
    action = sac.act(robot_obs, deterministic=True)  # no "state" needed to act
    policy = load_policy(export_policy(sac, tmp_path / "policy.pt"))
    assert set(policy.obs_spec) == set(ROBOT_SPEC)
    np.testing.assert_allclose(policy(robot_obs), action, rtol=1e-5, atol=1e-6)
    export_onnx(sac, tmp_path / "policy.onnx")  # checked in onnxruntime against the torch policy
    # The critic does use the privileged part: changing it changes Q.
    obs = sac.obs_to_tensors(random_batch(SIM_SPEC, seed=4).obs)
    features = sac.encoder(obs)
    act = torch.zeros(16, 2)
    q1 = sac.critic(torch.cat([features, sac.encoder.privileged(obs)], -1), act)
    obs["state"] = obs["state"] + 3.0
    q2 = sac.critic(torch.cat([features, sac.encoder.privileged(obs)], -1), act)
    assert not torch.allclose(q1, q2)
    with pytest.raises(AgentError, match="privileged key 'pixels/front'"):
        SAC(SMALL, SIM_SPEC, BOX, privileged_keys=("pixels/front",))


def test_privileged_aux_loss_teaches_the_encoder_what_the_critic_reads_from_the_state() -> None:
    """With an asymmetric critic the encoder learns to predict the privileged state from the pixels
    (issue #13); the actor still reads only the robot keys, and a robot run has no head at all."""
    cfg = SACConfig(hidden_dims=(32, 32), pixel=PIXELS, privileged_aux_weight=1.0, critic_lr=3e-3)
    sac = SAC(cfg, SIM_SPEC, BOX, privileged_keys=("state",))
    assert sac.privileged_head is not None and "state" not in sac.actor_obs_spec
    batch = random_batch(SIM_SPEC, batch=32, seed=5)
    levels = np.random.default_rng(6).integers(0, 256, (2, 32), dtype=np.uint8)
    for obs, level in zip((batch.obs, batch.next_obs), levels):  # a state the pixels reveal: brightness
        obs["pixels/front"] = np.broadcast_to(level[:, None, None, None], (32, 32, 32, 3)).copy()
        obs["state"] = np.repeat(level[:, None], 5, 1).astype(np.float32)
    losses = [sac.update(batch)["privileged_aux_loss"] for _ in range(150)]
    assert losses[-1] < 0.3 * losses[0], (losses[0], losses[-1])
    again = SAC(cfg, SIM_SPEC, BOX, privileged_keys=("state",))
    again.load_state_dict(sac.state_dict())
    assert again.privileged_head is not None
    torch.testing.assert_close(again.privileged_head.weight, sac.privileged_head.weight)
    # No privileged keys (a robot, finetune) or a frozen encoder: no head, no auxiliary loss.
    assert SAC(cfg, ROBOT_SPEC, BOX).privileged_head is None
    frozen = SACConfig(hidden_dims=(32, 32), pixel=PixelEncoderConfig(**{**PIXELS.__dict__, "frozen": True}))
    assert SAC(frozen, SIM_SPEC, BOX, privileged_keys=("state",)).privileged_head is None
    assert SAC(SMALL, SIM_SPEC, BOX, privileged_keys=("state",)).update(batch)["privileged_aux_loss"] == 0.0
    with pytest.raises(AgentError, match="privileged_aux_weight >= 0"):
        SAC(SACConfig(privileged_aux_weight=-1.0), SIM_SPEC, BOX)


def test_standardized_images_make_features_blind_to_global_light_and_colour(tmp_path) -> None:
    images = torch.rand(4, 3, 16, 16) - 0.5
    brighter = 0.6 * images + torch.tensor([0.1, -0.05, 0.2]).view(1, 3, 1, 1)  # darker, tinted
    plain = PixelEncoder((16, 16, 3), PIXELS)
    standardized = PixelEncoder((16, 16, 3), dataclasses.replace(PIXELS, standardize=True))
    standardized.load_state_dict(plain.state_dict())
    moved = (plain(brighter) - plain(images)).abs().max()
    moved_standardized = (standardized(brighter) - standardized(images)).abs().max()
    assert moved_standardized < 0.25 * moved  # what is left comes from the epsilon under the deviation
    # Part of the exported policy: TorchScript and ONNX give the training actor's actions.
    sac = SAC(
        dataclasses.replace(SMALL, pixel=dataclasses.replace(PIXELS, standardize=True)), ROBOT_SPEC, BOX
    )
    for seed in range(2):
        sac.update(random_batch(ROBOT_SPEC, seed=seed))
    obs = {k: v[0] for k, v in random_obs(ROBOT_SPEC, 1, np.random.default_rng(3)).items()}
    policy = load_policy(export_policy(sac, tmp_path / "policy.pt"))
    np.testing.assert_allclose(policy(obs), sac.act(obs, deterministic=True), rtol=1e-5, atol=1e-6)
    export_onnx(sac, tmp_path / "policy.onnx")  # checked in onnxruntime against the torch policy


def test_colour_jitter_varies_each_images_light_and_colour_but_not_its_layout() -> None:
    encoder = PixelEncoder((16, 16, 3), dataclasses.replace(PIXELS, color_jitter=0.3))
    images = torch.rand(64, 3, 16, 16) - 0.5
    generator = torch.Generator().manual_seed(0)
    jittered = encoder.color_jitter(images, 0.3, generator)
    assert jittered.shape == images.shape and jittered.min() >= -0.5 and jittered.max() <= 0.5
    assert encoder.color_jitter(images, 0.0) is images
    change = (jittered - images).abs().mean(dim=(1, 2, 3))
    assert change.min() > 0 and change.std() > 0  # every image changed, each by its own draw
    # A global gain and contrast: each channel stays an increasing function of the original pixel.
    for b in range(4):
        for c in range(3):
            order = images[b, c].flatten().argsort()
            kept = jittered[b, c].flatten()[order]
            assert torch.all(kept[1:] >= kept[:-1] - 1e-6)
    # The updates draw it from the agent's generator: with it on, the same seed gives the same update,
    # and a different one from the run without it.
    spec_cfg = dataclasses.replace(SMALL, pixel=dataclasses.replace(PIXELS, color_jitter=0.3))
    losses = [
        SAC(spec_cfg, ROBOT_SPEC, BOX).update(random_batch(ROBOT_SPEC))["critic_loss"] for _ in range(2)
    ]
    assert losses[0] == losses[1]
    assert SAC(SMALL, ROBOT_SPEC, BOX).update(random_batch(ROBOT_SPEC))["critic_loss"] != losses[0]
    with pytest.raises(AgentError, match=r"color_jitter must be in \[0, 1\), got 1.5"):
        PixelEncoder((16, 16, 3), dataclasses.replace(PIXELS, color_jitter=1.5))
