"""`LeRobotEnv`: any LeRobot ``Robot`` (SO-100/SO-101/Koch followers, or the MuJoCo twin) as a contract Env.

One step: refuse a bad action, pass the action through the `SafetyLayer`, ``robot.send_action``, sleep to
the control deadline (`RateKeeper`; late steps are counted), ``robot.get_observation``. A `Watchdog`
thread stops the arm when observations go stale or the loop overruns; an `EmergencyStop` (programmatic,
plus a key where a display exists) does the same on demand. A stop sets a latch that makes every later
``step`` raise `RobotError`; the stop action (``stop_mode``) holds the last measured position or turns
torque off. ``close`` (also on exceptions and SIGINT via ``with env:``, see `robot.signals`) holds
and disconnects.

The robot is used through LeRobot's ``Robot`` API only (duck-typed), so this module never imports lerobot.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import gymnasium as gym
import numpy as np
from gymnasium import spaces

from robot.config import DEFAULT_EPISODE_STEPS, LeRobotEnvConfig
from robot.contract import TARGETS_KEY, bound_windup
from robot.errors import ActionError, RobotError
from robot.estop import EmergencyStop
from robot.frames import FrameProcessor
from robot.rate import RateKeeper
from robot.safety import ForwardKinematics, SafetyLayer
from robot.watchdog import Watchdog

logger = logging.getLogger("robot.lerobot_env")

STATE_BOUND = 360.0
"""Bound of the joint-position observation boxes (LeRobot degrees; the gripper's 0..100 fits inside)."""


class LeRobotEnv(gym.Env):
    """A LeRobot robot and its cameras behind the Env contract (``robot/contract.py``).

    Observations: ``state`` (float32 joint positions in action-key order), each joint key (float32[1]),
    ``pixels/<camera>`` (uint8[H, W, 3], resized to ``image_size``), with ``observe_targets`` also
    ``joint_targets`` (the last command sent, ``last_sent``). Actions: absolute joint targets in
    the robot's units, bounded by the safety joint limits. ``info``: ``success``/``progress`` (from
    `mark_outcome` (human keys), else from ``robot.task_status()`` on a simulated robot unless
    ``privileged_status`` is off, else False/0.0: a real robot has no privileged task state), ``safety`` (clip reasons), ``sent_action``,
    ``overruns``. The reward is sparse: 1.0 on a successful step, which also ends the episode.

    Args:
        robot: a LeRobot ``Robot`` (built, connected or not).
        cfg: rate, episode length, image size, reset pose, stop mode, safety and watchdog limits.
        forward_kinematics: end-effector FK for the workspace check (None: joint limits only).
        clip_log: JSON-lines file every clipped command is appended to.
        warn_clips: log one warning per episode with its safety clips by reason (False: the caller reports
            them itself, from each step's ``info["safety"]``).
        privileged_status: on a simulated robot, read success and progress from ``robot.task_status()``
            when no outcome key was pressed; False: only ``mark_outcome`` (the operator's keys) sets them, as
            on a real arm (fine-tuning must not learn from the simulator's help).
        clock: monotonic clock; sleep: sleep function (tests may pass simulated ones).

    Raises:
        RobotError: a robot whose features do not fit (no float action keys, odd camera shapes).
    """

    metadata = {"render_modes": []}  # noqa: RUF012 - gymnasium reads this class attribute

    def __init__(
        self,
        robot: Any,
        cfg: LeRobotEnvConfig,
        forward_kinematics: ForwardKinematics | None = None,
        clip_log: str | None = None,
        warn_clips: bool = True,
        privileged_status: bool = True,
        clock: Callable[[], float] = time.monotonic,
        sleep: Callable[[float], None] = time.sleep,
    ) -> None:
        self.robot = robot
        self.cfg = cfg
        self.task_description = cfg.task_description
        self.action_keys = tuple(k for k, v in robot.action_features.items() if v is float)
        if not self.action_keys:
            raise RobotError(f"robot {robot} has no float action features: {robot.action_features}")
        self.cameras: dict[str, tuple[int, int]] = {}
        self._frames: dict[str, FrameProcessor] = {}
        for key, feature in robot.observation_features.items():
            if isinstance(feature, tuple):
                if len(feature) != 3 or feature[2] != 3:
                    raise RobotError(f"robot camera {key!r} has shape {feature}; expected (H, W, 3)")
                size = (cfg.image_size, cfg.image_size) if cfg.image_size else (feature[0], feature[1])
                self.cameras[key] = size
                if key in cfg.camera_calibration:
                    self._frames[key] = FrameProcessor.from_calibration(
                        key,
                        cfg.camera_calibration[key],
                        feature[:2],
                        cfg.image_size,
                        cfg.camera_crop,
                        cfg.calibration_dir,
                    )
                else:
                    self._frames[key] = FrameProcessor(key, cfg.image_size, cfg.camera_crop)
        unknown = sorted(set(cfg.camera_calibration) - set(self.cameras))
        if unknown:
            raise RobotError(
                f"camera_calibration names cameras {unknown} the robot does not have ({sorted(self.cameras)})"
            )
        missing = [k for k in self.action_keys if k not in robot.observation_features]
        if missing:
            raise RobotError(f"robot {robot} does not observe its action keys {missing}")
        self.safety = SafetyLayer(cfg.safety, self.action_keys, forward_kinematics, clip_log)
        self._clip_log = clip_log
        self._warn_clips = warn_clips
        self._privileged_status = privileged_status
        self._clips_at_start: dict[str, int] = {}
        self.rate = RateKeeper(cfg.control_hz, clock=clock, sleep=sleep)
        self.watchdog = Watchdog(cfg.watchdog, self.rate.period_s, self._stop, clock=clock)
        self.estop = EmergencyStop(on_stop=self._stop)
        if cfg.keyboard_estop:
            self.estop.listen_keyboard(cfg.estop_key)
        self.action_space = spaces.Box(
            low=np.array([cfg.safety.joint_limits[k][0] for k in self.action_keys], dtype=np.float32),
            high=np.array([cfg.safety.joint_limits[k][1] for k in self.action_keys], dtype=np.float32),
            dtype=np.float32,
        )
        joint_box = spaces.Box(-STATE_BOUND, STATE_BOUND, shape=(1,), dtype=np.float32)
        obs_spaces: dict[str, spaces.Space] = {
            "state": spaces.Box(-STATE_BOUND, STATE_BOUND, shape=(len(self.action_keys),), dtype=np.float32)
        }
        obs_spaces |= {k: joint_box for k in self.action_keys}
        if cfg.observe_targets:
            obs_spaces[TARGETS_KEY] = spaces.Box(
                self.action_space.low, self.action_space.high, dtype=np.float32
            )
        obs_spaces |= {
            f"pixels/{cam}": spaces.Box(0, 255, shape=(h, w, 3), dtype=np.uint8)
            for cam, (h, w) in self.cameras.items()
        }
        self.observation_space = spaces.Dict(obs_spaces)
        self._lock = threading.RLock()
        self._stopped: str | None = None
        self._measured: dict[str, float] | None = None
        self._outcome: bool | None = None
        self._truncate = False
        self._steps = 0
        self._closed = False

    # -- the Env contract -----------------------------------------------------------------------------

    def reset(
        self, *, seed: int | None = None, options: dict[str, Any] | None = None
    ) -> tuple[dict[str, np.ndarray], dict[str, Any]]:
        """Connect if needed, reset a simulated scene (``robot.reset_scene(seed)``, the twin only), then
        drive to the home pose at the safety layer's pace and hold it for ``reset_settle_steps``."""
        super().reset(seed=seed)
        self._raise_if_stopped()
        self.watchdog.disarm()
        with self._lock:
            if not self.robot.is_connected:
                self.robot.connect()
            reset_scene = getattr(self.robot, "reset_scene", None)
            if callable(reset_scene):
                reset_scene(seed)
            raw = self.robot.get_observation()
        obs = self._convert(raw)
        self.safety.reset(self._measured or {})
        if self.cfg.observe_targets:  # the safety layer forgot the last episode's command
            obs[TARGETS_KEY] = self.last_sent()
        self.rate.restart()  # time spent between episodes is not an overrun
        home = {k: v for k, v in self.cfg.home.items() if k in self.action_keys}
        if home:
            target = dict(self.safety.last_command or {}) | home
            limit = 10 * int(self.cfg.control_hz) + 1
            for _ in range(limit):
                if self._commanded(target):
                    break
                obs = self._act(self.safety.filter(target, measured=self._measured).command)
            else:
                raise RobotError(
                    f"reset: the safety layer did not let the arm reach the home pose {home} in {limit} "
                    "steps (home outside the joint limits or the workspace?)"
                )
            for _ in range(self.cfg.reset_settle_steps):
                obs = self._act(self.safety.filter(target, measured=self._measured).command)
        self._steps = 0
        self._outcome = None
        self._truncate = False
        self._clips_at_start = dict(self.safety.clip_counts)  # the walk home clips by design: not counted
        self.rate.restart()
        self.watchdog.start()  # armed by the first step: the caller may take its time before it
        success, progress = self._task_status()
        return obs, {"success": success, "progress": progress}

    def step(self, action: np.ndarray) -> tuple[dict[str, np.ndarray], float, bool, bool, dict[str, Any]]:
        """Send one safe command, wait for the control deadline, observe.

        Raises:
            ActionError: wrong shape, NaN or inf (nothing new is sent; the arm holds its last command).
            RobotError: the robot was stopped (watchdog, emergency stop, an earlier error) or not reset.
        """
        self._raise_if_stopped()
        if self._measured is None:
            raise RobotError("LeRobotEnv.step called before reset")
        arr = np.asarray(action, dtype=np.float64)
        if arr.shape != (len(self.action_keys),):
            raise ActionError(
                f"action has shape {arr.shape}; expected ({len(self.action_keys)},) {self.action_keys}"
            )
        if not np.all(np.isfinite(arr)):
            self.safety.filter(arr)  # logs the rejection; the command stays the last safe one
            raise ActionError(f"action has NaN or inf: {arr.tolist()}; holding the last safe command")
        safe = self.safety.filter(arr, measured=self._measured)
        if not self.watchdog.armed:
            self.watchdog.arm()
            self.rate.restart()
        obs = self._act(safe.command)
        self._steps += 1
        success, progress = self._task_status()
        terminated = self._outcome is not None or success
        truncated = not terminated and (self._truncate or self._steps >= self.max_episode_steps)
        if terminated or truncated:
            self.watchdog.disarm()
            if self._warn_clips:
                self._warn_episode_clips()
        info = {
            "success": success,
            "progress": progress,
            "safety": safe.clipped,
            "sent_action": np.array([safe.command[k] for k in self.action_keys], dtype=np.float32),
            "overruns": self.rate.overruns,
        }
        return obs, 1.0 if success else 0.0, terminated, truncated, info

    def close(self) -> None:
        """Stop the watchdog and key listener, hold (or torque off), disconnect. Safe to call twice."""
        if self._closed:
            return
        self._closed = True
        self.watchdog.disarm()
        self.watchdog.close()
        self.estop.close()
        try:
            with self._lock:
                if self.robot.is_connected:
                    if self.cfg.stop_mode == "hold" and self._measured is not None and self._stopped is None:
                        self._send_hold()
                    self.robot.disconnect()
        except Exception as exc:  # close runs on the error path too: never hide the error that got us here
            logger.error("closing the robot failed: %s: %s", type(exc).__name__, exc)
        finally:
            self.safety.close()

    def delta_targets(self, action: np.ndarray, max_delta: Sequence[float]) -> np.ndarray:
        """Absolute joint targets (action-key order) for a joint-delta action in [-1, 1]: the last command the
        safety layer let through plus ``action * max_delta``, within the joint limits. This is the twin's
        ``action_mode="delta"`` (``sim/so101/env.py``), except that it starts from what was really sent, so
        a joint the safety layer holds back does not wind up. With ``max_windup_deg`` the arm joints' targets
        also stay that close to the measured joints (a joint held back by contact does not wind up either).

        Raises:
            RobotError: called before ``reset``.
        """
        last = self.last_sent("delta_targets").astype(np.float64)
        step = np.clip(np.asarray(action, dtype=np.float64), -1.0, 1.0) * np.asarray(
            max_delta, dtype=np.float64
        )
        low = np.array([self.cfg.safety.joint_limits[k][0] for k in self.action_keys], dtype=np.float64)
        high = np.array([self.cfg.safety.joint_limits[k][1] for k in self.action_keys], dtype=np.float64)
        targets = last + step
        if self.cfg.max_windup_deg > 0 and self._measured is not None:
            measured = np.array([self._measured[k] for k in self.action_keys], dtype=np.float64)
            arm = np.array([k != "gripper.pos" for k in self.action_keys])
            targets = bound_windup(targets, measured, self.cfg.max_windup_deg, arm)
        return np.clip(targets, low, high).astype(np.float32)

    def last_sent(self, caller: str = "last_sent") -> np.ndarray:
        """The last command the safety layer let through (the measured pose right after ``reset``), in
        action-key order: the base a joint-delta action moves from.

        Raises:
            RobotError: called before ``reset``.
        """
        base = self.safety.last_command or self._measured
        if base is None:
            raise RobotError(f"LeRobotEnv.{caller} called before reset")
        return np.array([base[k] for k in self.action_keys], dtype=np.float32)

    @property
    def max_episode_steps(self) -> int:
        """Steps before an episode is truncated (``cfg.max_episode_steps``, else ``DEFAULT_EPISODE_STEPS``)."""
        return self.cfg.max_episode_steps or DEFAULT_EPISODE_STEPS

    # -- operator signals ------------------------------------------------------------------------------

    def mark_outcome(self, success: bool) -> None:
        """End the current episode at the next step, as a success or a failure (human keys call this)."""
        self._outcome = bool(success)

    def truncate_now(self) -> None:
        """End the current episode at the next step as a truncation (an operator reset: not terminal)."""
        self._truncate = True

    def emergency_stop(self, reason: str = "emergency stop") -> None:
        """Stop the robot now (thread-safe); every later step raises `RobotError`."""
        self.estop.trigger(reason)

    @property
    def stopped(self) -> str | None:
        """Why the robot was stopped, None while it runs."""
        return self._stopped

    @property
    def measured(self) -> dict[str, float] | None:
        """The last measured joint positions by action key."""
        return None if self._measured is None else dict(self._measured)

    def metrics(self) -> dict[str, Any]:
        """Loop timing and safety counters, for run reports."""
        return self.rate.metrics() | {
            "safety_steps": self.safety.steps,
            "safety_clips": dict(self.safety.clip_counts),
            "stopped": self._stopped,
        }

    # -- internals -------------------------------------------------------------------------------------

    def _warn_episode_clips(self) -> None:
        """One warning per episode with the safety clips by reason (each clip is in the clip log)."""
        clips = {
            reason: n - self._clips_at_start.get(reason, 0)
            for reason, n in self.safety.clip_counts.items()
            if n > self._clips_at_start.get(reason, 0)
        }
        if clips:
            detail = ", ".join(f"{reason} {n}" for reason, n in sorted(clips.items()))
            where = f"; each one is in {self._clip_log}" if self._clip_log else ""
            logger.warning(
                "episode of %d steps: %d safety clips (%s)%s", self._steps, sum(clips.values()), detail, where
            )

    def _act(self, command: Mapping[str, float]) -> dict[str, np.ndarray]:
        try:
            with self._lock:
                self._raise_if_stopped()
                self.robot.send_action(dict(command))
            self.watchdog.ticked()
            self.rate.wait()
            with self._lock:
                self._raise_if_stopped()
                raw = self.robot.get_observation()
                self._raise_if_stopped()  # a stop during a slow read discards what it returned
            self.watchdog.observed()
            return self._convert(raw)
        except RobotError:
            raise
        except Exception as exc:
            self._stop(f"{type(exc).__name__}: {exc}")
            raise

    def _task_status(self) -> tuple[bool, float]:
        if self._outcome is not None:
            return self._outcome, 1.0 if self._outcome else 0.0
        status = getattr(self.robot, "task_status", None)  # simulated robots only (privileged)
        if callable(status) and self._privileged_status:
            success, progress = status()
            return bool(success), float(min(max(progress, 0.0), 1.0))
        return False, 0.0

    def _commanded(self, target: Mapping[str, float]) -> bool:
        last = self.safety.last_command or {}
        return all(abs(last[k] - v) < 1e-6 for k, v in target.items())

    def _convert(self, raw: Mapping[str, Any]) -> dict[str, np.ndarray]:
        try:
            joints = {k: float(raw[k]) for k in self.action_keys}
        except KeyError as missing:
            raise RobotError(f"robot observation lacks {missing}; got {sorted(raw)}") from None
        if not all(np.isfinite(v) for v in joints.values()):
            self._stop(f"robot reported non-finite joint positions {joints}")
            raise RobotError(f"robot reported non-finite joint positions {joints}")
        self._measured = joints
        obs: dict[str, np.ndarray] = {
            "state": np.array([joints[k] for k in self.action_keys], dtype=np.float32),
        }
        obs |= {k: np.array([v], dtype=np.float32) for k, v in joints.items()}
        for cam in self.cameras:
            obs[f"pixels/{cam}"] = self._frames[cam](raw.get(cam))
        if self.cfg.observe_targets:
            obs[TARGETS_KEY] = self.last_sent()
        return obs

    def _raise_if_stopped(self) -> None:
        if self._stopped is not None:
            raise RobotError(f"robot stopped: {self._stopped}")

    def _stop(self, reason: str) -> None:
        # Called from the watchdog thread, the e-stop, or the loop on an error. Latch first: no further
        # command goes out. Then the stop action, if the bus is free within one period (a thread stuck
        # in a serial read keeps the lock; position control then holds the last goal anyway).
        if self._stopped is not None:
            return
        self._stopped = reason
        logger.error("stopping the robot: %s", reason)
        if not self._lock.acquire(timeout=self.rate.period_s):
            return
        try:
            if not self.robot.is_connected:
                return
            if self.cfg.stop_mode == "torque_off":
                self.robot.disconnect()
            elif self._measured is not None:
                self._send_hold()
        except Exception as exc:  # the stop itself must never raise into the watchdog thread
            logger.error("stop action failed: %s", exc)
        finally:
            self._lock.release()

    def _send_hold(self) -> None:
        assert self._measured is not None
        self.robot.send_action(dict(self._measured))
