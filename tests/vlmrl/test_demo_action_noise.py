"""`vlmrl train --demo-action-noise`: demonstrations recorded with noise on the scripted expert's actions."""

from __future__ import annotations

import dataclasses

import gymnasium as gym
import numpy as np
import pytest

from buffer import make_buffer
from sim import make_env
from vlmrl.errors import ConfigError
from vlmrl.loop.checkpoint import load_checkpoint
from vlmrl.online.trainer import DEMO_SEED_OFFSET, TRAIN_SEED_STRIDE, noisy_actions
from vlmrl.pipelines.train import main

from .test_train import tiny

SPACE = gym.spaces.Box(-1.0, 1.0, shape=(6,), dtype=np.float32)


def test_noise_is_scaled_to_the_action_range_clipped_and_seeded() -> None:
    wide = gym.spaces.Box(-4.0, 4.0, shape=(6,), dtype=np.float32)
    clean = np.full(6, 0.5, np.float32)
    draws = np.stack([noisy_actions(lambda obs: clean, wide, 0.1, seed=s)(None) for s in range(2000)])
    assert abs(float((draws - clean).std()) - 0.1 * 4.0) < 0.02  # 0.1 half-ranges of a range of 8
    assert abs(float((draws - clean).mean())) < 0.02
    at_edge = noisy_actions(lambda obs: np.ones(6, np.float32), SPACE, 0.5, seed=0)
    edges = np.stack([at_edge(None) for _ in range(200)])
    assert edges.max() <= 1.0 and edges.min() >= -1.0 and (edges < 1.0).any()
    same = [noisy_actions(lambda obs: clean, SPACE, 0.2, seed=3) for _ in range(2)]
    assert np.array_equal(same[0](None), same[1](None))
    assert not np.array_equal(same[0](None), noisy_actions(lambda obs: clean, SPACE, 0.2, seed=4)(None))


def demo_rows(run) -> tuple[np.ndarray, np.ndarray]:
    """The first demonstration's stored states [T + 1, S] and actions [T, A]."""
    cfg = load_checkpoint(run)["config"]
    env = make_env(cfg.sim)
    try:
        state_shape = env.observation_space["state"].shape
    finally:
        env.close()
    buffer = make_buffer(
        cfg.buffer, {"state": (state_shape, np.dtype(np.float32))}, 6, path=str(run / "buffer.zarr")
    )
    try:
        episodes = buffer.storage.episodes()
        start, end = episodes.bounds(episodes.first)
        rows = np.arange(start, end)
        return buffer.storage.read("state", rows), buffer.storage.read("action", rows[:-1])
    finally:
        buffer.close()


def test_noisy_demonstrations_store_the_actions_the_arm_executed(tmp_path, capsys) -> None:
    runs = {}
    for noise in (0.0, 0.3):
        run = tmp_path / f"noise{noise}"
        base = tiny(run, demo_episodes=1, total_steps=30, learning_starts=30, demo_action_noise=noise)
        cfg = dataclasses.replace(
            base, buffer=dataclasses.replace(base.buffer, storage="zarr"), replay="uniform"
        )
        assert main(cfg) == 0
        runs[noise] = (cfg, *demo_rows(run))
    out = capsys.readouterr().out
    assert "action noise 0.3" in out
    (_, _, clean), (cfg, states, noisy) = runs[0.0], runs[0.3]
    steps = min(len(clean), len(noisy))
    assert np.abs(noisy[:steps] - clean[:steps]).mean() > 0.05  # the expert's clean actions were perturbed
    assert noisy.min() >= -1.0 and noisy.max() <= 1.0
    # replaying the stored actions from the demonstration's seed retraces its stored states: they are the
    # actions the arm executed, not the expert's clean ones
    env = make_env(cfg.sim)
    try:
        obs, _ = env.reset(seed=cfg.seed * TRAIN_SEED_STRIDE + DEMO_SEED_OFFSET)
        np.testing.assert_allclose(obs["state"], states[0], atol=1e-5)
        for t, action in enumerate(noisy):
            obs, *_ = env.step(action)
            np.testing.assert_allclose(obs["state"], states[t + 1], atol=1e-4)
    finally:
        env.close()


def test_negative_or_nan_noise_is_refused(tmp_path) -> None:
    for bad in (-0.1, float("nan")):
        with pytest.raises(ConfigError, match="demo_action_noise must be >= 0"):
            main(tiny(tmp_path / "bad", demo_episodes=1, demo_action_noise=bad))
