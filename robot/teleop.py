"""Operator input: keyboard joint jogging, a LeRobot leader arm, and the episode keys (success, failure...).

Keyboards are read with pynput where a display exists; every class also takes key events
programmatically (`press`/`release`), which is how tests and other front ends drive them.
"""

from __future__ import annotations

import logging
import os
import threading
from collections.abc import Mapping, Sequence
from typing import Any, Protocol

from robot.arms import SO101, arm_for, leader_modules
from robot.errors import RobotError

logger = logging.getLogger("robot.teleop")

JOG_KEY_PAIRS: tuple[tuple[str, str], ...] = (
    ("q", "a"),
    ("w", "s"),
    ("e", "d"),
    ("r", "f"),
    ("t", "g"),
    ("y", "h"),
)
"""(increase, decrease) keys for the first, second, ... joint of any arm (`KeyboardJog`)."""

JOG_KEYS: dict[str, tuple[str, str]] = dict(zip(SO101.keys, JOG_KEY_PAIRS))
"""(increase, decrease) key per SO-101 joint for `KeyboardJog`."""

OPERATOR_KEYS: dict[str, str] = {
    "right": "success",
    "left": "failure",
    "up": "rerecord",
    "space": "intervene",
}
"""pynput key name -> operator event (escape is the emergency stop, handled by the env)."""


class Teleop(Protocol):
    """Something that proposes absolute joint targets (LeRobot units) from the measured joints."""

    def action(self, measured: Mapping[str, float]) -> dict[str, float]:
        """Joint targets by action key; blocks no longer than one control period."""
        ...

    def close(self) -> None:
        """Release devices and listeners."""
        ...


def _has_display() -> bool:
    return os.name != "posix" or bool(os.environ.get("DISPLAY") or os.environ.get("WAYLAND_DISPLAY"))


def _listen(on_press: Any, on_release: Any) -> Any:
    """A started pynput listener, or None without a display or backend."""
    if not _has_display():
        return None
    try:
        from pynput import keyboard
    except Exception as exc:  # pynput raises assorted errors when it finds no backend
        logger.warning("keyboard unavailable (%s)", exc)
        return None

    def name(key: Any) -> str:
        return getattr(key, "char", None) or getattr(key, "name", "") or ""

    listener = keyboard.Listener(
        on_press=lambda k: on_press(name(k)), on_release=lambda k: on_release(name(k))
    )
    listener.start()
    return listener


class KeyboardJog:
    """Jog joints with held keys (`JOG_KEY_PAIRS`, by joint order): each control step moves a held joint
    by ``step``.

    Args:
        keys: action keys in order.
        step: change per control step while a key is held, per action key (LeRobot units).
        listen: read the real keyboard through pynput when a display exists.
    """

    def __init__(self, keys: Sequence[str], step: Mapping[str, float], listen: bool = True) -> None:
        self.keys = tuple(keys)
        self.step = dict(step)
        self._held: set[str] = set()
        self._target: dict[str, float] | None = None
        self._lock = threading.Lock()
        self._listener = _listen(self.press, self.release) if listen else None

    def press(self, key: str) -> None:
        """A key went down."""
        with self._lock:
            self._held.add(key)

    def release(self, key: str) -> None:
        """A key went up."""
        with self._lock:
            self._held.discard(key)

    def action(self, measured: Mapping[str, float]) -> dict[str, float]:
        """The jogged target: starts at the measured pose, then moves with the held keys."""
        with self._lock:
            if self._target is None:
                self._target = {k: float(measured[k]) for k in self.keys}
            for key, (up, down) in zip(self.keys, JOG_KEY_PAIRS):
                direction = (up in self._held) - (down in self._held)
                self._target[key] += direction * self.step.get(key, 0.0)
            return dict(self._target)

    def sync(self, measured: Mapping[str, float]) -> None:
        """Restart jogging from the measured pose (after a reset or a clipped command)."""
        with self._lock:
            self._target = {k: float(measured[k]) for k in self.keys}

    def close(self) -> None:
        """Stop listening to the keyboard."""
        if self._listener is not None:
            self._listener.stop()
            self._listener = None


def leader_type_for(robot_type: str) -> str:
    """The LeRobot leader type matching a follower robot type (``so101_follower`` -> ``so101_leader``).

    Raises:
        RobotError: the robot type is no arm of ``robot.arms.ARMS`` or has no leader arm.
    """
    arm = arm_for(robot_type)
    if arm is None or arm.leader_type is None:
        raise RobotError(
            f"robot type {robot_type!r} has no known leader arm; give the leader type "
            f"(one of {sorted(leader_modules())})"
        )
    return arm.leader_type


class LeaderArm:
    """A LeRobot leader arm (any ``leader_type`` of ``robot.arms.ARMS``) as a `Teleop`.

    Raises:
        RobotError: an unknown type or a missing port.
    """

    MODULES = leader_modules()

    def __init__(
        self, type: str, port: str | None, id: str | None = None, calibration_dir: str | None = None
    ) -> None:
        import importlib
        from pathlib import Path

        from lerobot.teleoperators import TeleoperatorConfig, make_teleoperator_from_config

        if type not in self.MODULES:
            raise RobotError(f"leader type {type!r} unknown; expected one of {sorted(self.MODULES)}")
        if port is None:
            raise RobotError(f"leader type {type} needs --leader-port (e.g. /dev/ttyACM1)")
        importlib.import_module(self.MODULES[type])
        directory = Path(calibration_dir) if calibration_dir else None
        config = TeleoperatorConfig.get_choice_class(type)(port=port, id=id, calibration_dir=directory)
        self.device = make_teleoperator_from_config(config)
        self.device.connect()

    def action(self, measured: Mapping[str, float]) -> dict[str, float]:
        """The leader's joint positions as targets for the follower (LeRobot units)."""
        return {k: float(v) for k, v in self.device.get_action().items()}

    def close(self) -> None:
        """Disconnect the leader arm."""
        if self.device.is_connected:
            self.device.disconnect()


class OperatorKeys:
    """Episode events from the keyboard (`OPERATOR_KEYS`) or `press`: success, failure, rerecord,
    intervene (a toggle). `poll` returns the events since the last poll."""

    def __init__(self, listen: bool = True) -> None:
        self._events: list[str] = []
        self._lock = threading.Lock()
        self.intervening = False
        """Toggled by the intervene key: the operator, not the policy, is driving."""
        self._listener = _listen(self.press, lambda key: None) if listen else None

    def press(self, key: str) -> None:
        """A key went down (a pynput key name such as "right", or an event name)."""
        event = OPERATOR_KEYS.get(key, key if key in OPERATOR_KEYS.values() else None)
        if event is None:
            return
        with self._lock:
            if event == "intervene":
                self.intervening = not self.intervening
            self._events.append(event)

    def poll(self) -> list[str]:
        """Events since the last call, oldest first."""
        with self._lock:
            events, self._events = self._events, []
        return events

    def close(self) -> None:
        """Stop listening to the keyboard."""
        if self._listener is not None:
            self._listener.stop()
            self._listener = None
