"""`vlmrl train --task-ramp-steps`: a curriculum from short pushes to the task's own."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

from sim import make_env
from sim.config import SimConfig
from sim.errors import SimError
from sim.so101.tasks import PUSH_DISTANCE_M
from vlmrl.errors import ConfigError
from vlmrl.online.trainer import Trainer
from vlmrl.pipelines.train import main

from .test_train import tiny

PUSH = SimConfig(task="push", action_mode="delta", cameras=(), max_episode_steps=5)


def zone_distance(env, seed: int, options: dict | None = None) -> tuple[float, np.ndarray]:
    env.reset(seed=seed, options=options)
    twin = env.unwrapped
    cube = twin.sim.cube_position()
    return float(np.linalg.norm(twin.task.goal()[:2] - cube[:2])), cube.copy()


def test_push_difficulty_narrows_the_zone_distance_and_keeps_the_task_at_one() -> None:
    env = make_env(PUSH)
    try:
        for seed in range(20):
            full, cube = zone_distance(env, seed)
            same, same_cube = zone_distance(env, seed, {"difficulty": 1.0})
            assert same == full and np.array_equal(same_cube, cube)  # difficulty 1 is the task's own draw
            easiest, _ = zone_distance(env, seed, {"difficulty": 0.0})
            assert easiest == pytest.approx(PUSH_DISTANCE_M[0], abs=1e-9)
            half, _ = zone_distance(env, seed, {"difficulty": 0.5})
            assert PUSH_DISTANCE_M[0] <= half <= sum(PUSH_DISTANCE_M) / 2 + 1e-9
            assert PUSH_DISTANCE_M[0] <= full <= PUSH_DISTANCE_M[1] + 1e-9
        with pytest.raises(SimError, match=r"difficulty must be in \[0, 1\], got 1.5"):
            env.reset(seed=0, options={"difficulty": 1.5})
    finally:
        env.close()
    reach = make_env(dataclasses.replace(PUSH, task="reach"))
    try:
        reach.reset(seed=0, options={"difficulty": 1.0})  # the task's own: any task takes it
        with pytest.raises(SimError, match="reset option difficulty: task 'reach' has none"):
            reach.reset(seed=0, options={"difficulty": 0.5})
    finally:
        reach.close()


def test_the_task_curriculum_ramps_training_episodes_only(tmp_path) -> None:
    base = tiny(tmp_path / "ramp", sim=PUSH, task_ramp_steps=200)
    trainer = Trainer.create(base)
    try:
        source, twin = trainer.episode_source(), trainer.env.unwrapped
        distances = []
        for step in (0, 100, 200, 400):
            trainer.state.step = step
            stats = source.collect(3, lambda obs: np.zeros(6, np.float32), lambda: None)
            assert stats["difficulty"] == min(1.0, step / 200)  # logged as train/difficulty
            distances.append(float(np.linalg.norm(twin.task.goal()[:2] - twin.sim.cube_position()[:2])))
        assert distances[0] == pytest.approx(
            PUSH_DISTANCE_M[0], abs=0.005
        )  # the cube barely moves in 5 steps
        assert distances[0] < distances[1] < distances[2] == pytest.approx(distances[3], abs=1e-3)
    finally:
        trainer.env.close()
        trainer.eval_env.close()


def test_the_task_curriculum_is_refused_off_push(tmp_path) -> None:
    with pytest.raises(
        ConfigError, match=r"task_ramp_steps ramps the push zone.s distance: it needs --sim\.task push"
    ):
        main(tiny(tmp_path / "reach", task_ramp_steps=100))
    with pytest.raises(ConfigError, match="task_ramp_steps is not supported with --actors"):
        main(tiny(tmp_path / "actors", sim=PUSH, task_ramp_steps=100, actors=2))
    with pytest.raises(ConfigError, match="task_ramp_steps must be >= 0"):
        main(tiny(tmp_path / "neg", sim=PUSH, task_ramp_steps=-1))
