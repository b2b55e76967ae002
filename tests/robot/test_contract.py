"""The Env contract checker: a conforming toy env passes, and each kind of violation is named."""

from __future__ import annotations

from typing import Any

import gymnasium
import numpy as np
import pytest
from gymnasium import spaces

from robot.contract import JOINT_KEYS, Env, check_env, env_spec, pixel_key
from robot.errors import RobotError


class ToyEnv(gymnasium.Env):
    """A 2-D point that moves toward a goal; renders a 16 px frame whose brightness follows the state."""

    task_description = "Move the point to the goal."

    def __init__(self) -> None:
        self.observation_space = spaces.Dict(
            {
                "state": spaces.Box(-np.inf, np.inf, shape=(4,), dtype=np.float32),
                pixel_key("front"): spaces.Box(0, 255, shape=(16, 16, 3), dtype=np.uint8),
                JOINT_KEYS[0]: spaces.Box(-110.0, 110.0, shape=(1,), dtype=np.float32),
            }
        )
        self.action_space = spaces.Box(-1.0, 1.0, shape=(2,), dtype=np.float32)
        self.point = np.zeros(2)
        self.goal = np.zeros(2)

    def _obs(self) -> dict[str, np.ndarray]:
        frame = np.full((16, 16, 3), int(abs(self.point[0]) * 50) % 256, dtype=np.uint8)
        return {
            "state": np.concatenate([self.point, self.goal]).astype(np.float32),
            pixel_key("front"): frame,
            JOINT_KEYS[0]: np.array([self.point[1]], dtype=np.float32),
        }

    def _info(self) -> dict[str, Any]:
        distance = float(np.linalg.norm(self.point - self.goal))
        return {"success": distance < 0.1, "progress": float(np.clip(1.0 - distance / 3.0, 0.0, 1.0))}

    def reset(self, *, seed: int | None = None, options: dict[str, Any] | None = None):
        super().reset(seed=seed)
        self.point = self.np_random.uniform(-1, 1, size=2)
        self.goal = self.np_random.uniform(-1, 1, size=2)
        return self._obs(), self._info()

    def step(self, action: np.ndarray):
        action = np.asarray(action, dtype=np.float32)
        if action.shape != (2,) or not np.all(np.isfinite(action)):
            raise ValueError(f"bad action {action!r}")
        self.point = self.point + 0.1 * action
        info = self._info()
        return self._obs(), float(info["success"]), bool(info["success"]), False, info


def test_conforming_env_passes_and_spec_reads_the_spaces() -> None:
    env = ToyEnv()
    assert isinstance(env, Env)
    spec = check_env(env, n_steps=5)
    assert spec.state_dim == 4
    assert spec.cameras == ("front",)
    assert spec.action_shape == (2,)
    assert spec.obs_spec()["pixels/front"] == ((16, 16, 3), np.dtype(np.uint8))
    assert spec.task_description == ToyEnv.task_description
    assert env_spec(env).obs == spec.obs


class Float64State(ToyEnv):
    def __init__(self) -> None:
        super().__init__()
        self.observation_space.spaces["state"] = spaces.Box(-np.inf, np.inf, shape=(4,), dtype=np.float64)


class NoProgress(ToyEnv):
    def _info(self) -> dict[str, Any]:
        return {"success": False}


class ProgressOutOfRange(ToyEnv):
    def _info(self) -> dict[str, Any]:
        return {"success": False, "progress": 1.5}


class WrongPixelShape(ToyEnv):
    def _obs(self) -> dict[str, np.ndarray]:
        obs = super()._obs()
        obs[pixel_key("front")] = obs[pixel_key("front")][:, :, :2].copy()
        return obs


class NotDeterministic(ToyEnv):
    def reset(self, *, seed: int | None = None, options: dict[str, Any] | None = None):
        _, info = super().reset(seed=seed)
        self.point = np.random.uniform(-1, 1, size=2)  # ignores the seed
        return self._obs(), info


class AcceptsNaN(ToyEnv):
    def step(self, action: np.ndarray):
        info = self._info()
        return self._obs(), 0.0, False, False, info


class RewardNotDeterministic(ToyEnv):
    def step(self, action: np.ndarray):
        obs, _, terminated, truncated, info = super().step(action)
        return obs, float(np.random.uniform()), terminated, truncated, info


class JointOutOfBounds(ToyEnv):
    def _obs(self) -> dict[str, np.ndarray]:
        obs = super()._obs()
        obs[JOINT_KEYS[0]] = np.array([500.0], dtype=np.float32)
        return obs


class NoDescription(ToyEnv):
    task_description = ""


class UnboundedActions(ToyEnv):
    def __init__(self) -> None:
        super().__init__()
        self.action_space = spaces.Box(-np.inf, np.inf, shape=(2,), dtype=np.float32)


@pytest.mark.parametrize(
    ("env_class", "message"),
    [
        (Float64State, "'state' must be float32"),
        (NoProgress, "no 'progress' key"),
        (ProgressOutOfRange, "progress'] must be a float in [0, 1]"),
        (WrongPixelShape, "'pixels/front' is uint8[16, 16, 2]"),
        (NotDeterministic, "not deterministic"),
        (RewardNotDeterministic, "different '<reward>'"),
        (JointOutOfBounds, "outside its space's bounds"),
        (AcceptsNaN, "accepted a NaN action"),
        (NoDescription, "task_description"),
        (UnboundedActions, "bounds must be finite"),
    ],
)
def test_each_violation_is_reported(env_class: type, message: str) -> None:
    with pytest.raises(RobotError, match="env contract") as error:
        check_env(env_class(), n_steps=5)
    assert message in str(error.value)
    assert "\n" not in str(error.value)
