"""The emergency stop: a programmatic trigger that always works, plus a keyboard key where a display exists."""

from __future__ import annotations

import logging
import os
import threading
from collections.abc import Callable
from typing import Any

logger = logging.getLogger("robot.estop")


class EmergencyStop:
    """Latches once triggered; every control step checks it before sending anything.

    Args:
        on_stop: called once with the reason when triggered (from the triggering thread).
    """

    def __init__(self, on_stop: Callable[[str], None] | None = None) -> None:
        self._on_stop = on_stop
        self._event = threading.Event()
        self._lock = threading.Lock()
        self.reason: str | None = None
        """Why it was triggered, None while it has not been."""
        self._listener: Any = None

    @property
    def triggered(self) -> bool:
        """True once `trigger` ran (stays true: an emergency stop latches)."""
        return self._event.is_set()

    def trigger(self, reason: str = "emergency stop") -> None:
        """Stop now (thread-safe; later calls do nothing)."""
        with self._lock:
            if self._event.is_set():
                return
            self.reason = reason
            self._event.set()
        logger.error("EMERGENCY STOP: %s", reason)
        if self._on_stop is not None:
            self._on_stop(reason)

    def listen_keyboard(self, key: str = "esc") -> bool:
        """Trigger on ``key`` (a pynput ``Key`` name or a character); returns False when no keyboard exists.

        pynput needs a display (X11/Wayland) or a Windows/macOS session; headless, only `trigger` works.
        """
        if self._listener is not None:
            return True
        if os.name == "posix" and not (os.environ.get("DISPLAY") or os.environ.get("WAYLAND_DISPLAY")):
            logger.info("no display: the emergency-stop key is off; use EmergencyStop.trigger")
            return False
        try:
            from pynput import keyboard
        except Exception as exc:  # pynput raises assorted errors when it finds no backend
            logger.warning("emergency-stop key unavailable (%s); use EmergencyStop.trigger", exc)
            return False
        wanted = getattr(keyboard.Key, key, None) or keyboard.KeyCode.from_char(key)

        def on_press(pressed: Any) -> None:
            if pressed == wanted:
                self.trigger(f"key {key!r} pressed")

        self._listener = keyboard.Listener(on_press=on_press)
        self._listener.start()
        logger.info("emergency stop armed on key %r", key)
        return True

    def close(self) -> None:
        """Stop listening to the keyboard."""
        if self._listener is not None:
            self._listener.stop()
            self._listener = None
