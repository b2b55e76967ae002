"""The SO-101 twin as a gymnasium env: composition of an ``SO101Sim`` and a ``Task``."""

from __future__ import annotations

import inspect
import math
from collections import deque
from collections.abc import Callable, Mapping
from typing import Any

import gymnasium
import numpy as np
from gymnasium import spaces

from robot.config import SO101_MAX_STEP
from robot.contract import (
    JOINT_KEYS,
    JOINT_NAMES,
    STATE_KEY,
    TARGETS_KEY,
    bound_windup,
    pixel_key,
    state_and_pixel_spaces,
)
from sim.config import RandomizeConfig, SimConfig, joint_delta_scale
from sim.errors import SimError
from sim.randomization import (
    Perturbation,
    Randomizer,
    Ranges,
    camera_ranges,
    draw,
    episode_generator,
    resolve_ranges,
)
from sim.rewards import shaped_or_sparse_reward
from sim.so101.arm import CAMERAS, SO101Sim, joint_limits
from sim.so101.calibrated_cameras import apply_camera_calibration, calibration_uncertainty
from sim.so101.geometry import HOME_TCP
from sim.so101.kinematics import (
    EE_ACTION_NAMES,
    ee_delta_step,
    forward_kinematics,
    inverse_kinematics,
)
from sim.so101.tasks import SUCCESS_RADIUS_M, TASKS, Task, TaskStatus

STATE_NAMES: tuple[str, ...] = (
    *(f"{name}_rad" for name in JOINT_NAMES[:5]),
    "gripper_open_frac",
    "tcp_x_m",
    "tcp_y_m",
    "tcp_z_m",
    "cube_x_m",
    "cube_y_m",
    "cube_z_m",
    "goal_x_m",
    "goal_y_m",
    "goal_z_m",
    "cube_minus_tcp_x_m",
    "cube_minus_tcp_y_m",
    "cube_minus_tcp_z_m",
    "goal_minus_ref_x_m",
    "goal_minus_ref_y_m",
    "goal_minus_ref_z_m",
    "cube_sin_4yaw",
    "cube_cos_4yaw",
)
"""Layout of ``obs["state"]``. goal: reach target, lift point, push zone or bin centre; ref: the tool
centre point for reach, the cube otherwise. Parked (unused) objects keep constant far-away values."""

_ARM_JOINTS = np.array([name != "gripper" for name in JOINT_NAMES])
"""Which of ``JOINT_NAMES`` the anti-windup bound applies to: all but the gripper."""
_ARM_MAX_STEP = np.array([SO101_MAX_STEP[f"{name}.pos"] for name in JOINT_NAMES], dtype=np.float32)
"""The SO-101 safety layer's largest command change per step, in ``JOINT_NAMES`` order (``ee_arm_steps``)."""

HOME_TCP_M = np.array(HOME_TCP)
"""Tool centre point of the home pose episodes start near (gripper 60 deg below horizontal)."""
_HOME_NOISE_DEG = 6.0


def privileged_state(sim: SO101Sim, task: Task, joints: Mapping[str, float]) -> np.ndarray:
    """The twin's ``state`` vector (``STATE_NAMES``) with the arm at ``joints`` (as observed, LeRobot
    units): what ``vlmrl train`` stores and a state policy reads, and what ``vlmrl record`` stores as
    ``state`` when it records the twin (``sim.lerobot_twin``), so recordings and training share a layout."""
    tcp = sim.tcp_position()
    cube = sim.cube_position()
    goal = np.asarray(task.goal(), dtype=np.float64)
    yaw4 = 4.0 * sim.cube_yaw_rad()
    return np.concatenate(
        [
            [math.radians(joints[n]) for n in JOINT_NAMES[:5]],
            [joints["gripper"] / 100.0],
            tcp,
            cube,
            goal,
            cube - tcp,
            goal - task.goal_reference(sim),
            [math.sin(yaw4), math.cos(yaw4)],
        ]
    ).astype(np.float32)


class SO101Env(gymnasium.Env):
    """SO-101 twin task env (see ``sim.config.SimConfig`` for the options).

    Observations: ``state`` (``STATE_NAMES``), ``pixels/<camera>`` for each configured camera and the
    LeRobot joint keys (``shoulder_pan.pos`` ... in degrees, ``gripper.pos`` in 0..100).
    Actions: absolute: 6 LeRobot-unit targets in ``JOINT_NAMES`` order; delta: 6 joint deltas in [-1, 1];
    ee_delta: ``EE_ACTION_NAMES`` in [-1, 1] (tool-centre-point moves through IK, then roll and gripper).
    Reward: sparse 1 on success; shaped: 1 on success, else ``progress - 1`` (in [-1, 0)), so ending the
    episode by succeeding always pays.
    ``calibrated_cameras`` maps each camera ``camera_calibration`` names to the calibrated camera it renders.
    With ``cfg.randomize`` on, each reset draws a ``sim.randomization.Perturbation`` after placing the
    objects (so the nominal and the randomised twin start from the same states for a seed);
    ``reset(options={"perturbation": p})`` applies ``p`` instead (the held-out evaluation grid), and
    ``perturbation`` holds the episode's draw. ``reset(options={"difficulty": d})`` (d in [0, 1]) narrows the
    task's placements to their easiest share (push: the zone d of the way from 7 to 11 cm; a training curriculum).
    """

    metadata = {"render_modes": ["rgb_array"]}  # noqa: RUF012 (gymnasium declares it an instance variable)

    def __init__(self, cfg: SimConfig) -> None:
        if cfg.task not in TASKS:
            raise SimError(f"unknown so101 task {cfg.task!r}; expected one of {sorted(TASKS)}")
        for camera in cfg.cameras:
            if camera not in CAMERAS:
                raise SimError(f"unknown so101 camera {camera!r}; expected one of {list(CAMERAS)}")
        self.cfg = cfg
        self.metadata = {
            **self.metadata,
            "render_fps": cfg.control_hz,
        }  # video writers play at the control rate
        self.task: Task = TASKS[cfg.task]()
        self.task_description: str = self.task.description
        if cfg.reward_radius_m is not None:
            radius = SUCCESS_RADIUS_M.get(cfg.task)
            if radius is None or cfg.reward_radius_m > radius:
                raise SimError(
                    f"reward_radius_m {cfg.reward_radius_m} needs a task with a success radius at least that "
                    f"wide ({', '.join(f'{k} {v}' for k, v in SUCCESS_RADIUS_M.items())}), not {cfg.task!r}"
                )
        self.render_mode = "rgb_array"
        self.sim = SO101Sim(max_image_size=cfg.image_size, shadows=cfg.shadows, antialias=cfg.antialias)
        self.calibrated_cameras = apply_camera_calibration(self.sim.model, cfg)
        self.randomize_ranges = resolve_ranges(cfg)
        self.camera_uncertainty = calibration_uncertainty(cfg, self.calibrated_cameras)
        self._camera_ranges = self.camera_ranges(self.randomize_ranges, cfg.randomize)
        self._randomizer = Randomizer(self.sim.model, CAMERAS)  # after calibration: those poses are nominal
        self.perturbation = Perturbation()
        self._noise_rng = np.random.default_rng(0)
        self._pending: deque[np.ndarray] = deque()
        self.n_substeps = max(1, round(1.0 / (cfg.control_hz * self.sim.timestep_s)))
        self.max_episode_steps = cfg.max_episode_steps or self.task.default_max_steps
        limits = joint_limits()
        low = np.array([limits[n][0] for n in JOINT_NAMES], dtype=np.float32)
        high = np.array([limits[n][1] for n in JOINT_NAMES], dtype=np.float32)
        self._low, self._high = low, high
        if cfg.action_mode == "absolute":
            self.action_space = spaces.Box(low, high, dtype=np.float32)
        elif cfg.action_mode == "delta":
            self.action_space = spaces.Box(-1.0, 1.0, shape=(len(JOINT_NAMES),), dtype=np.float32)
        else:
            self.action_space = spaces.Box(-1.0, 1.0, shape=(len(EE_ACTION_NAMES),), dtype=np.float32)
        self._delta_scale = np.array(
            joint_delta_scale(cfg.max_delta_deg, cfg.max_delta_gripper), dtype=np.float32
        )
        obs_spaces = state_and_pixel_spaces(len(STATE_NAMES), cfg.cameras, cfg.image_size)
        for i, key in enumerate(JOINT_KEYS):
            obs_spaces[key] = spaces.Box(low[i : i + 1], high[i : i + 1], dtype=np.float32)
        if cfg.observe_targets:
            obs_spaces[TARGETS_KEY] = spaces.Box(low, high, dtype=np.float32)
        self.observation_space = spaces.Dict(obs_spaces)
        self._targets = np.zeros(len(JOINT_NAMES), dtype=np.float32)
        self._tcp_target = np.zeros(3)
        self._steps = 0

    def reset(
        self, *, seed: int | None = None, options: dict[str, Any] | None = None
    ) -> tuple[dict[str, np.ndarray], dict[str, Any]]:
        super().reset(seed=seed)
        rng = self.np_random

        def noisy_home() -> dict[str, float]:
            home = inverse_kinematics(HOME_TCP_M, pitch_deg=60.0)
            assert home is not None  # a fixed, reachable pose
            joints = {
                name: value + rng.uniform(-_HOME_NOISE_DEG, _HOME_NOISE_DEG) for name, value in home.items()
            }
            joints["wrist_roll"] = rng.uniform(-_HOME_NOISE_DEG, _HOME_NOISE_DEG)
            joints["gripper"] = 100.0
            return joints

        options = options or {}
        self.start_episode(
            rng,
            noisy_home,
            options.get("perturbation"),
            options.get("randomize_scale", 1.0),
            float(options.get("difficulty", 1.0)),
        )
        status = self.task.evaluate(self.sim)
        return self._observation(), {"success": status.success, "progress": status.progress}

    def start_episode(
        self,
        rng: np.random.Generator,
        start_joints: Callable[[], Mapping[str, float]],
        perturbation: Perturbation | None = None,
        randomize_scale: float = 1.0,
        difficulty: float = 1.0,
    ) -> None:
        """Reset the physics, let the task place its objects, put the arm at ``start_joints()`` and draw
        (or take) the episode's perturbation, all from ``rng`` in that order. ``reset`` starts its episodes
        here; so does the LeRobot twin (``sim.lerobot_twin``), from its own seed and start pose."""
        if not 0.0 <= difficulty <= 1.0:
            raise SimError(f"reset option difficulty must be in [0, 1], got {difficulty}")
        if difficulty != 1.0 and "difficulty" not in inspect.signature(self.task.reset).parameters:
            raise SimError(f"reset option difficulty: task {self.cfg.task!r} has none (push has)")
        self.sim.reset()
        if difficulty == 1.0:  # the task's own ranges (tasks without a difficulty take no keyword)
            self.task.reset(self.sim, rng)
        else:
            self.task.reset(self.sim, rng, difficulty=difficulty)  # type: ignore[call-arg]  # checked above
        self.sim.set_joint_positions(start_joints())
        self._targets = np.array([self.sim.joint_targets()[n] for n in JOINT_NAMES], dtype=np.float32)
        self._tcp_target = self.sim.tcp_position()
        self._steps = 0
        self._perturb(rng, perturbation, randomize_scale)

    def _perturb(self, rng: np.random.Generator, given: Perturbation | None, scale: float = 1.0) -> None:
        """Draw (or take) this episode's perturbation and write it into the model; ``scale`` in [0, 1]
        caps the drawn magnitudes at that share of the ranges (a curriculum; the same draws are made)."""
        if not 0.0 <= scale <= 1.0:
            raise SimError(f"reset option randomize_scale must be in [0, 1], got {scale}")
        if given is None and not self.randomize_ranges.active():
            if self.perturbation != Perturbation():
                # A previous episode was given one. The nominal table has no texture: nothing to upload.
                self._randomizer.apply(Perturbation(), self.sim.data)
                self.perturbation = Perturbation()
            self._pending.clear()
            return
        # Drawn after the task placed the objects: a seed starts from the same state with or without it.
        episode_rng = episode_generator(int(rng.integers(2**63)), self.cfg.randomize.seed_salt)
        if given is None:
            given = draw(
                self.randomize_ranges, episode_rng, CAMERAS, (0.0, scale), per_camera=self._camera_ranges
            )
        self.perturbation = given
        self._noise_rng = episode_rng
        self.sim.upload_textures(self._randomizer.apply(given, self.sim.data))
        cube = self.sim.cube_position()
        if cube[2] > 0:  # the task uses the cube: rest it on the table at its new size
            half = self._randomizer.nominal_cube_half_m
            cube[2] += half * (given.cube_size_scale - 1.0)
            self.sim.set_cube_pose(cube, self.sim.cube_yaw_rad())
        self._pending = deque([self._targets.copy() for _ in range(given.latency_steps)])

    def camera_ranges(self, ranges: Ranges, randomize: RandomizeConfig) -> dict[str, Ranges]:
        """Per camera, the ranges ``ranges`` draws with in this twin: calibrated cameras whose files store
        their uncertainty get ranges of that size (``sim.randomization.camera_ranges``)."""
        if not ranges.active() or not self.camera_uncertainty:
            return {}
        return camera_ranges(ranges, randomize, CAMERAS, self.camera_uncertainty)

    def joint_targets_array(self) -> np.ndarray:
        """The position targets last commanded, ``JOINT_NAMES`` order, LeRobot units."""
        return self._targets.copy()

    def _check_action(self, action: Any) -> np.ndarray:
        array = np.asarray(action, dtype=np.float32)
        if array.shape != self.action_space.shape:
            raise SimError(f"action must have shape {self.action_space.shape}, got {array.shape}")
        if not np.all(np.isfinite(array)):
            raise SimError(f"action must be finite, got {array.tolist()}")
        return array

    def step(self, action: np.ndarray) -> tuple[dict[str, np.ndarray], float, bool, bool, dict[str, Any]]:
        array = self._check_action(action)
        if self.cfg.action_mode == "absolute":
            targets = np.clip(array, self._low, self._high)
        elif self.cfg.action_mode == "delta":
            step = np.clip(array, -1.0, 1.0) * self._delta_scale
            targets = np.clip(self._targets + step, self._low, self._high)
            if self.cfg.max_windup_deg > 0:  # anti-windup: arm targets stay near the measured joints
                measured = self.sim.joint_positions()
                positions = np.array([measured[n] for n in JOINT_NAMES])
                targets = bound_windup(targets, positions, self.cfg.max_windup_deg, _ARM_JOINTS)
        else:
            targets = self._ee_delta_targets(np.clip(array, -1.0, 1.0))
        self._advance(targets)
        status = self.task.evaluate(self.sim)
        rewarded, progress = self._rewarded_success(status)
        reward = shaped_or_sparse_reward(self.cfg.reward, rewarded, progress)
        terminated = rewarded and self.cfg.terminate_on_success
        truncated = self._steps >= self.max_episode_steps and not terminated
        info = {"success": status.success, "progress": status.progress}
        return self._observation(), reward, terminated, truncated, info

    def _rewarded_success(self, status: TaskStatus) -> tuple[bool, float]:
        """The success the reward (and termination) counts, and the progress that goes with it: the task's,
        or with ``reward_radius_m`` only a success that close to the goal (progress just under 1 until then)."""
        if self.cfg.reward_radius_m is None or not status.success:
            return status.success, status.progress
        if self.task.goal_distance(self.sim) < self.cfg.reward_radius_m:  # type: ignore[attr-defined]
            return True, 1.0
        return False, 0.99

    def command(self, targets: Mapping[str, float]) -> dict[str, float]:
        """Command joint targets (LeRobot units; joints left out keep theirs), clipped to the joint ranges,
        and advance one control period as ``step`` does (action latency included), without evaluating
        the task or rendering. Returns the targets commanded. The LeRobot twin's ``send_action``."""
        current = dict(zip(JOINT_NAMES, self._targets.tolist()))
        wanted = np.array([float(targets.get(n, current[n])) for n in JOINT_NAMES])
        clipped = np.clip(wanted, self._low, self._high)
        self._advance(clipped)
        return {n: float(v) for n, v in zip(JOINT_NAMES, clipped) if n in targets}

    def _advance(self, targets: np.ndarray) -> None:
        self._targets = targets.astype(np.float32)
        if self._pending:  # action latency: the servos receive the command of ``latency_steps`` ago
            self._pending.append(self._targets.copy())
            targets = self._pending.popleft()
        self.sim.set_joint_targets(dict(zip(JOINT_NAMES, targets.tolist())))
        self.sim.step(self.n_substeps)
        self._steps += 1

    def _ee_delta_targets(self, action: np.ndarray) -> np.ndarray:
        current = dict(zip(JOINT_NAMES, self._targets.tolist(), strict=True))
        if self.cfg.ee_arm_steps:  # from where the last targets put the tool, as deploy does on an arm
            self._tcp_target = forward_kinematics(current)
        joints, self._tcp_target = ee_delta_step(
            current,
            self._tcp_target,
            action,
            self.cfg.max_delta_m,
            self.cfg.max_delta_deg,
            self.cfg.max_delta_gripper,
        )
        targets = np.array([joints[name] for name in JOINT_NAMES], dtype=np.float32)
        if self.cfg.ee_arm_steps:  # the safety layer's per-step limit
            targets = np.clip(targets, self._targets - _ARM_MAX_STEP, self._targets + _ARM_MAX_STEP)
        return np.clip(targets, self._low, self._high)

    def _observation(self) -> dict[str, np.ndarray]:
        joints = self.observed_joints()
        obs = {STATE_KEY: privileged_state(self.sim, self.task, joints)}
        for camera in self.cfg.cameras:
            obs[pixel_key(camera)] = self.sim.render(camera, self.cfg.image_size)
        for name, key in zip(JOINT_NAMES, JOINT_KEYS):
            obs[key] = np.array([joints[name]], dtype=np.float32)
        if self.cfg.observe_targets:
            obs[TARGETS_KEY] = self._targets.copy()
        return obs

    def observed_joints(self) -> dict[str, float]:
        """The joint positions an observation reports (LeRobot units): measured, plus this episode's
        joint observation noise (``Perturbation.joint_noise_std``), within the joint ranges. Each call
        draws new noise."""
        joints = self.sim.joint_positions()
        if self.perturbation.joint_noise_std > 0:
            noise = self._noise_rng.normal(0.0, self.perturbation.joint_noise_std, size=len(JOINT_NAMES))
            joints = {
                n: float(np.clip(joints[n] + e, self._low[i], self._high[i]))
                for i, (n, e) in enumerate(zip(JOINT_NAMES, noise))
            }
        return joints

    def render(self) -> np.ndarray:  # type: ignore[override]
        """Front camera frame at the configured size."""
        return self.sim.render("front", self.cfg.image_size)

    def close(self) -> None:
        self.sim.close()
