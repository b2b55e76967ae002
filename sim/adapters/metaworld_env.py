"""Meta-World 3 MT1 tasks (Sawyer) behind the Env contract.

Each reset picks one of the benchmark's 50 goal variations with the env's seeded generator. Frames come
from our own offscreen renderer (so cameras, size and shadows follow ``SimConfig`` and several cameras
can be rendered per step; ``image_size`` is the size a scorer gets, e.g. the one a learned scorer was
fitted at).

``info`` carries the contract's ``success`` (Meta-World's own ``info["success"]``) and a privileged
``progress`` in [0, 1]: the task's dense reward (0..10, Meta-World's staged reach / grasp / place terms)
divided by 10, and 1 on success. Both come from the simulator's object poses, which a camera does not
give: the oracle scorer reads them (an upper bound, not a VLM). With ``reward="sparse"`` the reward is
``info["success"]`` as 0 or 1; with ``terminate_on_success`` the first successful step ends the episode
(pair it with ``BufferConfig.absorbing_terminal``, docs/deployable.md). ``sim.experts.make_expert`` gives
Meta-World's scripted policy for the task (``MetaWorldExpert``) for demonstrations and recordings.
"""

from __future__ import annotations

from typing import Any

import gymnasium
import numpy as np
from gymnasium import spaces

from robot.contract import STATE_KEY, pixel_key, state_and_pixel_spaces
from sim.config import SimConfig
from sim.errors import SimError
from sim.rendering import FrameRenderer
from sim.rewards import shaped_or_sparse_reward

CAMERAS: tuple[str, ...] = (
    "corner",
    "corner2",
    "corner3",
    "corner4",
    "topview",
    "behindGripper",
    "gripperPOV",
)
"""Meta-World camera names."""
UPSIDE_DOWN_CAMERAS: frozenset[str] = frozenset({"corner", "corner2", "corner4"})
"""Cameras whose MJCF orientation is rolled by 180 degrees (the table appears at the top): their frames
are rotated back so row 0 is the top of the scene."""
DEFAULT_MAX_EPISODE_STEPS = 200
_MAX_REWARD = 10.0


def task_description(env_name: str) -> str:
    """A prompt sentence from an MT1 name (``"pick-place-v3"`` -> "Pick place: ...")."""
    words = env_name.removesuffix("-v3").replace("-", " ")
    return f"Make the Sawyer robot arm complete the task: {words}."


class MetaWorldEnv(gymnasium.Env):
    """One Meta-World MT1 task; observations ``state`` (Meta-World's 39-d vector) and pixels."""

    metadata = {"render_modes": ["rgb_array"]}  # noqa: RUF012 (gymnasium declares it an instance variable)

    def __init__(self, cfg: SimConfig) -> None:
        import metaworld  # slow: only when a Meta-World env is asked for

        names = sorted(metaworld.MT1.ENV_NAMES)
        if cfg.task not in names:
            raise SimError(f"unknown metaworld task {cfg.task!r}; expected an MT1 name such as {names[:6]}")
        for camera in cfg.cameras:
            if camera not in CAMERAS:
                raise SimError(f"unknown metaworld camera {camera!r}; expected one of {list(CAMERAS)}")
        self.cfg = cfg
        self.task_description = task_description(cfg.task)
        self.max_episode_steps = cfg.max_episode_steps or DEFAULT_MAX_EPISODE_STEPS
        benchmark = metaworld.MT1(cfg.task, seed=0)
        self._tasks = list(benchmark.train_tasks)
        self._env = benchmark.train_classes[cfg.task]()
        self._env.max_path_length = self.max_episode_steps + 1
        self._env.set_task(self._tasks[0])
        self.metadata = {**self.metadata, "render_fps": self._env.metadata.get("render_fps", 80)}
        self._renderer: FrameRenderer | None = None
        if cfg.cameras:
            self._env.model.vis.global_.offwidth = max(self._env.model.vis.global_.offwidth, cfg.image_size)
            self._env.model.vis.global_.offheight = max(self._env.model.vis.global_.offheight, cfg.image_size)
            self._env.model.light_castshadow[:] = int(cfg.shadows)
            self._renderer = FrameRenderer(self._env.model, cfg.image_size, cfg.shadows, cfg.antialias)
        raw_action: Any = self._env.action_space
        raw_obs: Any = self._env.observation_space
        self._low = raw_action.low.astype(np.float32)
        self._high = raw_action.high.astype(np.float32)
        self.action_space = spaces.Box(self._low, self._high, dtype=np.float32)
        state_dim = int(raw_obs.shape[0])
        self.observation_space = spaces.Dict(state_and_pixel_spaces(state_dim, cfg.cameras, cfg.image_size))
        self._steps = 0
        self._state = np.zeros(state_dim, np.float32)

    @property
    def raw_env(self) -> Any:
        """The wrapped Meta-World env."""
        return self._env

    @property
    def last_state(self) -> np.ndarray:
        """Meta-World's 39-d observation after the last reset or step (what its scripted policies read),
        also when ``state`` is not an observation the policy gets."""
        return self._state.copy()

    def _observation(self, state: np.ndarray) -> dict[str, np.ndarray]:
        self._state = np.asarray(state, dtype=np.float32)
        obs = {STATE_KEY: self._state.copy()}
        for camera in self.cfg.cameras:
            assert self._renderer is not None
            frame = self._renderer.render(self._env.data, camera)
            if camera in UPSIDE_DOWN_CAMERAS:
                frame = np.ascontiguousarray(frame[::-1, ::-1])
            obs[pixel_key(camera)] = frame
        return obs

    def reset(
        self, *, seed: int | None = None, options: dict[str, Any] | None = None
    ) -> tuple[dict[str, np.ndarray], dict[str, Any]]:
        super().reset(seed=seed)
        task = self._tasks[int(self.np_random.integers(len(self._tasks)))]
        self._env.set_task(task)
        self._env.seed(int(self.np_random.integers(2**31 - 1)))
        state, _ = self._env.reset()
        self._steps = 0
        reward, info = self._env.evaluate_state(state, np.zeros_like(self._low))
        return self._observation(state), self._status(float(reward), info)

    @staticmethod
    def _status(reward: float, info: dict[str, Any]) -> dict[str, Any]:
        success = bool(info.get("success", 0.0) >= 1.0)
        progress = 1.0 if success else float(np.clip(reward / _MAX_REWARD, 0.0, 1.0))
        return {"success": success, "progress": progress}

    def step(self, action: np.ndarray) -> tuple[dict[str, np.ndarray], float, bool, bool, dict[str, Any]]:
        array = np.asarray(action, dtype=np.float32)
        if array.shape != self._low.shape:
            raise SimError(f"action must have shape {self._low.shape}, got {array.shape}")
        if not np.all(np.isfinite(array)):
            raise SimError(f"action must be finite, got {array.tolist()}")
        state, dense, _, _, raw_info = self._env.step(np.clip(array, self._low, self._high))
        self._steps += 1
        info = self._status(float(dense), raw_info)
        reward = shaped_or_sparse_reward(self.cfg.reward, info["success"], info["progress"])
        terminated = info["success"] and self.cfg.terminate_on_success
        truncated = self._steps >= self.max_episode_steps and not terminated
        return self._observation(state), reward, terminated, truncated, info

    def close(self) -> None:
        if self._renderer is not None:
            self._renderer.close()
        self._env.close()
