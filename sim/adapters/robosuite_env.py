"""robosuite 1.5 (Panda, default OSC composite controller) behind the Env contract.

robosuite renders with OpenGL's bottom-up row order; frames are flipped so row 0 is the top. Shadows
are switched off unless asked for. ``progress`` is robosuite's own staged dense reward (normalised to
[0, 1] by ``reward_scale=1``); ``success`` is the task's ``_check_success``. Rewards follow
``sim.rewards.shaped_or_sparse_reward`` like every sim env.
"""

from __future__ import annotations

from typing import Any

import gymnasium
import numpy as np
from gymnasium import spaces

from robot.contract import STATE_KEY, pixel_key, state_and_pixel_spaces
from sim.config import SimConfig
from sim.errors import SimError
from sim.rendering import preload_triton, set_antialias
from sim.rewards import shaped_or_sparse_reward

TASK_DESCRIPTIONS: dict[str, str] = {
    "Lift": "Pick up the red cube and lift it off the table.",
    "Stack": "Stack the red cube on top of the green cube.",
    "Door": "Open the door by turning its handle and pulling it.",
    "PickPlaceCan": "Pick up the can and place it in its bin.",
}
"""Supported robosuite tasks and their prompt sentences."""
CAMERAS: tuple[str, ...] = (
    "frontview",
    "birdview",
    "agentview",
    "sideview",
    "robot0_robotview",
    "robot0_eye_in_hand",
)
"""Cameras every supported robosuite task has."""
DEFAULT_MAX_EPISODE_STEPS = 200


class RobosuiteEnv(gymnasium.Env):
    """One robosuite task with a Panda arm; observations ``state`` (proprio + object state) and pixels."""

    metadata = {"render_modes": ["rgb_array"]}  # noqa: RUF012 (gymnasium declares it an instance variable)

    def __init__(self, cfg: SimConfig) -> None:
        if cfg.task not in TASK_DESCRIPTIONS:
            raise SimError(
                f"unknown robosuite task {cfg.task!r}; expected one of {sorted(TASK_DESCRIPTIONS)}"
            )
        for camera in cfg.cameras:
            if camera not in CAMERAS:
                raise SimError(f"unknown robosuite camera {camera!r}; expected one of {list(CAMERAS)}")
        preload_triton()  # robosuite creates its GL context itself: triton must be imported before it
        import robosuite  # slow (seconds): only when a robosuite env is asked for

        self.cfg = cfg
        self.metadata = {**self.metadata, "render_fps": cfg.control_hz}
        self.task_description = TASK_DESCRIPTIONS[cfg.task]
        self.max_episode_steps = cfg.max_episode_steps or DEFAULT_MAX_EPISODE_STEPS
        render = bool(cfg.cameras)
        self._env = robosuite.make(
            cfg.task,
            robots="Panda",
            has_renderer=False,
            has_offscreen_renderer=render,
            use_camera_obs=render,
            use_object_obs=True,
            camera_names=list(cfg.cameras) if render else "agentview",
            camera_heights=cfg.image_size,
            camera_widths=cfg.image_size,
            reward_shaping=True,
            reward_scale=1.0,
            control_freq=cfg.control_hz,
            horizon=self.max_episode_steps,
            ignore_done=True,
            hard_reset=False,
        )
        if render:
            self._apply_antialias(cfg.antialias)
        low, high = self._env.action_spec
        self._low, self._high = low.astype(np.float32), high.astype(np.float32)
        self.action_space = spaces.Box(self._low, self._high, dtype=np.float32)
        raw = self._env.reset()
        state_dim = self._state(raw).shape[0]
        self.observation_space = spaces.Dict(state_and_pixel_spaces(state_dim, cfg.cameras, cfg.image_size))
        self._steps = 0

    @property
    def raw_env(self) -> Any:
        """The wrapped robosuite env."""
        return self._env

    def _apply_antialias(self, antialias: bool) -> None:
        """robosuite made its offscreen context with the model's multisampling: rebuild it with ours."""
        set_antialias(self._env.sim.model._model, antialias)
        context = self._env.sim._render_context_offscreen
        if context is not None:
            context.gl_ctx.make_current()
            context.con.free()
            context._set_mujoco_context_and_buffers()

    @staticmethod
    def _state(raw: dict[str, np.ndarray]) -> np.ndarray:
        return np.concatenate([raw["robot0_proprio-state"], raw["object-state"]]).astype(np.float32)

    def _observation(self, raw: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
        obs = {STATE_KEY: self._state(raw)}
        for camera in self.cfg.cameras:
            obs[pixel_key(camera)] = np.ascontiguousarray(raw[f"{camera}_image"][::-1])  # OpenGL rows: flip
        return obs

    def _status(self, shaped_reward: float) -> dict[str, Any]:
        success = bool(self._env._check_success())
        progress = 1.0 if success else float(np.clip(shaped_reward, 0.0, 1.0))
        return {"success": success, "progress": progress}

    def reset(
        self, *, seed: int | None = None, options: dict[str, Any] | None = None
    ) -> tuple[dict[str, np.ndarray], dict[str, Any]]:
        super().reset(seed=seed)
        # robosuite's placement samplers share env.rng: reseed that generator in place.
        generator = np.random.default_rng(int(self.np_random.integers(2**63 - 1)))
        self._env.rng.bit_generator.state = generator.bit_generator.state
        raw = self._env.reset()
        self._env.sim.model.light_castshadow[:] = int(self.cfg.shadows)
        self._steps = 0
        return self._observation(raw), self._status(float(self._env.reward(None)))

    def step(self, action: np.ndarray) -> tuple[dict[str, np.ndarray], float, bool, bool, dict[str, Any]]:
        array = np.asarray(action, dtype=np.float32)
        if array.shape != self._low.shape:
            raise SimError(f"action must have shape {self._low.shape}, got {array.shape}")
        if not np.all(np.isfinite(array)):
            raise SimError(f"action must be finite, got {array.tolist()}")
        raw, shaped, _, _ = self._env.step(np.clip(array, self._low, self._high))
        self._steps += 1
        info = self._status(float(shaped))
        reward = shaped_or_sparse_reward(self.cfg.reward, info["success"], info["progress"])
        terminated = info["success"] and self.cfg.terminate_on_success
        truncated = self._steps >= self.max_episode_steps and not terminated
        return self._observation(raw), reward, terminated, truncated, info

    def close(self) -> None:
        self._env.close()
