"""`vlmrl train --jump-start-steps`: the scripted expert drives the first steps of training episodes (JSRL)."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

from sim.config import SimConfig
from sim.experts import make_expert
from vlmrl.errors import ConfigError
from vlmrl.online.trainer import Trainer
from vlmrl.pipelines.train import main

from .test_train import tiny

PUSH = SimConfig(task="push", action_mode="delta", cameras=(), max_episode_steps=30)


class Policy:
    """A policy that holds still and counts the steps it was asked for."""

    def __init__(self) -> None:
        self.calls = 0

    def __call__(self, obs) -> np.ndarray:
        self.calls += 1
        return np.zeros(6, np.float32)


def test_the_expert_drives_the_first_steps_and_its_share_falls_to_none(tmp_path) -> None:
    trainer = Trainer.create(tiny(tmp_path / "js", sim=PUSH, jump_start_steps=1000, jump_start_horizon=20))
    try:
        source = trainer.episode_source()
        guided = []
        for episode in range(12):
            policy = Policy()
            stats = source.collect(episode, policy, lambda: None)
            assert 0 <= stats["guide_steps"] <= 20  # logged as train/guide_steps
            assert policy.calls == stats["length"] - stats["guide_steps"]  # then the policy drives
            guided.append(stats["guide_steps"])
        assert len(set(guided)) > 3  # drawn per episode, not fixed
        # The same episode at the same step draws the same guided steps (a resumed run repeats the first).
        assert source.collect(5, Policy(), lambda: None)["guide_steps"] == guided[5]
        trainer.state.step = 500  # halfway: at most 10
        halfway = [source.collect(e, Policy(), lambda: None)["guide_steps"] for e in range(12)]
        assert max(halfway) <= 10 and max(halfway) > 0
        trainer.state.step = 1000  # the ramp's end: the policy drives every step
        policy = Policy()
        stats = source.collect(0, policy, lambda: None)
        assert stats["guide_steps"] == 0 and policy.calls == stats["length"] == 30
    finally:
        trainer.env.close()
        trainer.eval_env.close()


def test_the_guided_steps_are_the_experts_own(tmp_path) -> None:
    """The stored prefix is what the scripted expert does from the same reset, step for step."""
    trainer = Trainer.create(tiny(tmp_path / "js", sim=PUSH, jump_start_steps=10_000, jump_start_horizon=25))
    try:
        source = trainer.episode_source()
        episode = next(e for e in range(50) if trainer._jump_start(e)[0] >= 10)
        moved_by_guide = []

        def record(obs) -> np.ndarray:
            moved_by_guide.append(obs["state"].copy())
            return np.zeros(6, np.float32)

        stats = source.collect(episode, record, lambda: None)
        guided = int(stats["guide_steps"])
        env = trainer.env
        obs, _ = env.reset(seed=source.seed_base + episode)
        expert = make_expert(env)
        expert.reset()
        for _ in range(guided):
            obs, *_ = env.step(expert.act(obs))
        # The policy's first observation is the state the expert left.
        np.testing.assert_allclose(moved_by_guide[0], obs["state"], atol=1e-6)
    finally:
        trainer.env.close()
        trainer.eval_env.close()


def test_jump_starts_are_refused_without_an_expert_or_with_actors(tmp_path) -> None:
    with pytest.raises(
        ConfigError, match=r"jump_start_steps needs a scripted expert .* 'robosuite' has none"
    ):
        main(
            tiny(
                tmp_path / "rs",
                sim=dataclasses.replace(PUSH, suite="robosuite", task="Lift"),
                jump_start_steps=10,
            )
        )
    with pytest.raises(ConfigError, match="jump_start_steps is not supported with --actors"):
        main(tiny(tmp_path / "actors", sim=PUSH, jump_start_steps=100, actors=2))
    with pytest.raises(ConfigError, match="jump_start_horizon must be >= 1"):
        main(tiny(tmp_path / "h0", sim=PUSH, jump_start_steps=100, jump_start_horizon=0))
