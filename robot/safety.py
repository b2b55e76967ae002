"""The safety layer between a policy and a robot: every command passes through `SafetyLayer.filter`.

Guarantees, for any proposed action (random, NaN, inf, 1e30...):

* each joint command moves at most ``max_step[key]`` from the previous command;
* each joint command stays inside ``joint_limits[key]`` once the previous command is inside them
  (a robot that starts outside its limits is walked back in at ``max_step``, never jumped);
* with a forward-kinematics function, the end effector never moves further outside the workspace box
  than it already is (so it never leaves a box it starts in): a move that would is shortened by bisection;
* given the measured joints, a command leads them by at most ``max_lead_steps`` max steps (a blocked
  joint is not wound up), approached at ``max_step`` like every other change;
* a non-finite proposal (or a failing FK) holds the previous command.

Every clip is logged (logger ``robot.safety`` at DEBUG and, when given, a JSON-lines file); `clip_counts`
counts them by reason (``LeRobotEnv`` warns once per episode with the counts, not once per clip).
"""

from __future__ import annotations

import json
import logging
import math
from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import IO, NamedTuple

import numpy as np

from robot.config import SafetyConfig
from robot.errors import RobotError

ForwardKinematics = Callable[[dict[str, float]], np.ndarray]
"""Joint commands by action key (LeRobot units) -> end-effector xyz in metres, robot base frame."""

logger = logging.getLogger("robot.safety")


class SafeCommand(NamedTuple):
    """What the safety layer let through for one proposal."""

    command: dict[str, float]
    """Joint commands by action key, inside every limit."""
    clipped: tuple[str, ...]
    """Reasons the proposal was changed (empty: sent as proposed)."""
    held: bool
    """True when the proposal was rejected and the previous command repeated."""


class SafetyLayer:
    """Clips proposed joint commands to joint limits, a per-step change, and an end-effector workspace.

    Args:
        cfg: the limits.
        keys: action keys in order (e.g. ``SO101_JOINT_KEYS``); every key needs a limit and a max step.
        forward_kinematics: optional FK for the workspace check (the vlmrl pipeline passes
            ``sim.so101.kinematics.forward_kinematics``; robot/ cannot import sim/).
        clip_log: optional JSON-lines file every clip is appended to.

    Raises:
        RobotError: a key without a joint limit or max step, or limits that are empty.
    """

    def __init__(
        self,
        cfg: SafetyConfig,
        keys: Sequence[str],
        forward_kinematics: ForwardKinematics | None = None,
        clip_log: str | Path | None = None,
    ) -> None:
        self.cfg = cfg
        self.keys = tuple(keys)
        for key in self.keys:
            if key not in cfg.joint_limits:
                raise RobotError(f"safety.joint_limits has no entry for action key {key!r}")
            if key not in cfg.max_step:
                raise RobotError(f"safety.max_step has no entry for action key {key!r}")
            lo, hi = cfg.joint_limits[key]
            if not lo < hi:
                raise RobotError(
                    f"safety.joint_limits[{key!r}] = ({lo}, {hi}) is empty; expected lower < upper"
                )
            if not cfg.max_step[key] > 0:
                raise RobotError(f"safety.max_step[{key!r}] = {cfg.max_step[key]} must be positive")
        self._lo = np.array([cfg.joint_limits[k][0] for k in self.keys], dtype=np.float64)
        self._hi = np.array([cfg.joint_limits[k][1] for k in self.keys], dtype=np.float64)
        self._step = np.array([cfg.max_step[k] for k in self.keys], dtype=np.float64)
        self._box_lo = np.asarray(cfg.workspace_min_m, dtype=np.float64)
        self._box_hi = np.asarray(cfg.workspace_max_m, dtype=np.float64)
        if not np.all(self._box_lo < self._box_hi):
            raise RobotError(
                f"safety workspace box {cfg.workspace_min_m}..{cfg.workspace_max_m} is empty; expected min < max"
            )
        self._fk = forward_kinematics
        self._last: np.ndarray | None = None
        self.clip_counts: Counter[str] = Counter()
        """How often each reason clipped a command since construction."""
        self.steps = 0
        """Proposals filtered since construction."""
        self._log_file: IO[str] | None = open(clip_log, "a") if clip_log is not None else None  # noqa: SIM115

    @property
    def last_command(self) -> dict[str, float] | None:
        """The last command let through (or the measured pose after `reset`), None before `reset`."""
        return None if self._last is None else self._to_dict(self._last)

    def reset(self, measured: Mapping[str, float]) -> None:
        """Start from the robot's measured joint positions (the reference for the first step's change)."""
        q = self._to_array(measured, what="measured joint positions")
        if not np.all(np.isfinite(q)):
            raise RobotError(f"measured joint positions are not finite: {self._to_dict(q)}")
        self._last = q

    def filter(
        self, proposed: Mapping[str, float] | np.ndarray, measured: Mapping[str, float] | None = None
    ) -> SafeCommand:
        """Return the command to send for a proposal (dict by action key, or an array in key order).

        With ``measured`` (the joints read this step), a command may lead the measured position by at
        most ``max_lead_steps`` max steps, so a blocked or lagging joint is not wound up against what
        stops it (LeRobot's ``max_relative_target`` idea, applied before the per-step limit).

        Raises:
            RobotError: before `reset`, or a proposal with missing keys or the wrong length.
        """
        if self._last is None:
            raise RobotError("SafetyLayer.filter called before reset(measured joint positions)")
        self.steps += 1
        last = self._last
        try:
            q = self._to_array(proposed, what="action")
        except (TypeError, ValueError):
            q = np.full(len(self.keys), np.nan)
        if not np.all(np.isfinite(q)):
            return self._hold(last, "non_finite", proposed)
        reasons = []
        target = q
        if measured is not None:
            m = self._to_array(measured, what="measured joint positions")
            if np.all(np.isfinite(m)):
                lead = self.cfg.max_lead_steps * self._step
                target = np.clip(q, m - lead, m + lead)
                if np.any(np.abs(target - q) > self.cfg.clip_tolerance):
                    reasons.append("max_lead")
        limited = np.clip(target, self._lo, self._hi)
        if np.any(np.abs(limited - target) > self.cfg.clip_tolerance):
            reasons.append("joint_limit")
        target = limited
        command = np.clip(target, last - self._step, last + self._step)
        if np.any(np.abs(command - target) > self.cfg.clip_tolerance):
            reasons.append("max_step")
        if self._fk is not None:
            try:
                command, shortened = self._keep_in_workspace(last, command)
            except (FloatingPointError, ValueError, ArithmeticError) as exc:
                return self._hold(last, f"fk_failed: {exc}", proposed)
            if shortened:
                reasons.append("workspace")
        self._last = command
        result = SafeCommand(self._to_dict(command), tuple(reasons), held=False)
        if reasons:
            self._record(result, proposed)
        return result

    def close(self) -> None:
        """Close the clip log."""
        if self._log_file is not None:
            self._log_file.close()
            self._log_file = None

    # -- internals -------------------------------------------------------------------------------------

    def _tool_point(self, q: np.ndarray) -> np.ndarray:
        assert self._fk is not None
        xyz = np.asarray(self._fk(self._to_dict(q)), dtype=np.float64).reshape(-1)[:3]
        if xyz.shape != (3,) or not np.all(np.isfinite(xyz)):
            raise ValueError(f"forward kinematics returned {xyz!r}, expected 3 finite numbers")
        return xyz

    def _violation(self, q: np.ndarray) -> float:
        xyz = self._tool_point(q)
        outside = np.maximum(self._box_lo - xyz, 0.0) + np.maximum(xyz - self._box_hi, 0.0)
        return float(np.sum(outside))

    def _moves_tool_point(self, last: np.ndarray, command: np.ndarray) -> np.ndarray:
        """Per joint: does its own move from ``last`` to ``command`` move the tool point?"""
        here = self._tool_point(last)
        moves = np.zeros(len(self.keys), dtype=bool)
        for i in np.flatnonzero(command != last):
            probe = last.copy()
            probe[i] = command[i]
            moves[i] = not np.array_equal(self._tool_point(probe), here)
        return moves

    def _keep_in_workspace(self, last: np.ndarray, command: np.ndarray) -> tuple[np.ndarray, bool]:
        # Allowed: no further outside the box than the previous command. t = 0 (stay) always qualifies,
        # so bisect for the largest fraction of the move that does. Joints that do not move the tool
        # point (the gripper, wrist roll) keep their whole move: the box bounds where the tool goes, and
        # shortening them too kept the gripper from closing on a cube while the arm pressed down on it.
        allowed = self._violation(last) + 1e-9
        if self._violation(command) <= allowed:
            return command, False
        moves = self._moves_tool_point(last, command)
        base = np.where(moves, last, command)
        step = np.where(moves, command - last, 0.0)
        good, bad = 0.0, 1.0
        for _ in range(self.cfg.workspace_bisect_steps):
            mid = 0.5 * (good + bad)
            if self._violation(base + mid * step) <= allowed:
                good = mid
            else:
                bad = mid
        return base + good * step, True

    def _hold(self, last: np.ndarray, reason: str, proposed: object) -> SafeCommand:
        result = SafeCommand(self._to_dict(last), (reason,), held=True)
        self._record(result, proposed)
        return result

    def _record(self, result: SafeCommand, proposed: object) -> None:
        for reason in result.clipped:
            self.clip_counts[reason.split(":")[0]] += 1
        logger.debug("safety step %d: %s -> %s", self.steps, ",".join(result.clipped), _fmt(result.command))
        if self._log_file is not None:
            row = {
                "step": self.steps,
                "reasons": list(result.clipped),
                "held": result.held,
                "proposed": _jsonable(proposed, self.keys),
                "command": result.command,
            }
            self._log_file.write(json.dumps(row) + "\n")
            self._log_file.flush()

    def _to_array(self, values: Mapping[str, float] | np.ndarray, what: str) -> np.ndarray:
        if isinstance(values, Mapping):
            missing = [k for k in self.keys if k not in values]
            if missing:
                raise RobotError(f"{what} lacks keys {missing}; expected {list(self.keys)}")
            return np.array(
                [float(np.asarray(values[k]).reshape(-1)[0]) for k in self.keys], dtype=np.float64
            )
        arr = np.asarray(values, dtype=np.float64).reshape(-1)
        if arr.shape != (len(self.keys),):
            raise RobotError(f"{what} has {arr.size} values; expected {len(self.keys)} ({list(self.keys)})")
        return arr

    def _to_dict(self, q: np.ndarray) -> dict[str, float]:
        return {k: float(v) for k, v in zip(self.keys, q)}


def _fmt(command: Mapping[str, float]) -> str:
    return "{" + ", ".join(f"{k}: {v:.2f}" for k, v in command.items()) + "}"


def _jsonable(proposed: object, keys: Sequence[str]) -> object:
    def num(v: object) -> object:
        try:
            f = float(np.asarray(v).reshape(-1)[0])  # type: ignore[arg-type]
        except (TypeError, ValueError, IndexError):
            return repr(v)
        return f if math.isfinite(f) else repr(f)

    if isinstance(proposed, Mapping):
        return {str(k): num(v) for k, v in proposed.items()}
    try:
        return [num(v) for v in np.asarray(proposed, dtype=np.float64).reshape(-1)]
    except (TypeError, ValueError):
        return repr(proposed)
