"""A watchdog that stops the control loop on stale observations or an overrunning loop.

The control loop reports each fresh observation (`observed`) and each loop iteration (`ticked`). A
background thread calls `check` every ``poll_periods`` control periods; when either report is older than
``stale_after_periods`` periods it trips once: it records the reason and calls ``on_trip(reason)`` from
the watchdog thread. With the defaults (1.5 + 0.25 periods) the trip comes within two control periods of
the last report. `check` takes the time as an argument so tests can drive it with a simulated clock.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable

from robot.config import WatchdogConfig
from robot.errors import RobotError

logger = logging.getLogger("robot.watchdog")


class Watchdog:
    """Trips when the loop it guards goes quiet for too long.

    Args:
        cfg: thresholds in control periods.
        period_s: the control period (1 / control_hz).
        on_trip: called once, from the watchdog thread (or the caller of `check`), with the reason.
        clock: monotonic clock in seconds.

    Raises:
        RobotError: thresholds that cannot stop the loop within two periods, or a non-positive period.
    """

    def __init__(
        self,
        cfg: WatchdogConfig,
        period_s: float,
        on_trip: Callable[[str], None],
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        if not period_s > 0:
            raise RobotError(f"watchdog period_s = {period_s} must be positive")
        if not (cfg.poll_periods > 0 and cfg.stale_after_periods > 0):
            raise RobotError("watchdog.poll_periods and watchdog.stale_after_periods must be positive")
        if cfg.stale_after_periods + cfg.poll_periods > 2.0:
            raise RobotError(
                f"watchdog.stale_after_periods + poll_periods = {cfg.stale_after_periods + cfg.poll_periods}"
                " must be at most 2 so a stall stops the loop within two control periods"
            )
        self.period_s = period_s
        self.enabled = cfg.enabled
        self.stale_after_s = cfg.stale_after_periods * period_s
        self.poll_s = cfg.poll_periods * period_s
        self._on_trip = on_trip
        self._clock = clock
        self._lock = threading.Lock()
        self._armed = False
        self._last_observation = 0.0
        self._last_tick = 0.0
        self.tripped: str | None = None
        """The reason it tripped, None while it has not."""
        self.trip_time: float | None = None
        """Clock time of the trip."""
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def start(self) -> None:
        """Start the background thread (idempotent; nothing when disabled); it checks only while armed."""
        if self._thread is None and self.enabled:
            self._thread = threading.Thread(target=self._run, name="robot-watchdog", daemon=True)
            self._thread.start()

    def arm(self, now: float | None = None) -> None:
        """Begin guarding (after reset); both reports count as fresh now."""
        t = self._clock() if now is None else now
        with self._lock:
            self._last_observation = self._last_tick = t
            self._armed = True

    @property
    def armed(self) -> bool:
        """True while guarding."""
        return self._armed

    def disarm(self) -> None:
        """Stop guarding (between episodes, when the loop is legitimately idle)."""
        with self._lock:
            self._armed = False

    def observed(self, now: float | None = None) -> None:
        """Report a fresh observation."""
        with self._lock:
            self._last_observation = self._clock() if now is None else now

    def ticked(self, now: float | None = None) -> None:
        """Report one control-loop iteration."""
        with self._lock:
            self._last_tick = self._clock() if now is None else now

    def check(self, now: float | None = None) -> str | None:
        """Trip if a report is stale at time ``now``; returns the trip reason (None: healthy)."""
        t = self._clock() if now is None else now
        with self._lock:
            if self.tripped is not None or not self._armed or not self.enabled:
                return self.tripped
            obs_age, tick_age = t - self._last_observation, t - self._last_tick
            if obs_age > self.stale_after_s:
                reason = f"stale observation: none for {obs_age:.3f} s (limit {self.stale_after_s:.3f} s)"
            elif tick_age > self.stale_after_s:
                reason = (
                    f"control loop overran: no tick for {tick_age:.3f} s (limit {self.stale_after_s:.3f} s)"
                )
            else:
                return None
            self.tripped, self.trip_time = reason, t
        logger.error("watchdog tripped: %s", reason)
        self._on_trip(reason)
        return reason

    def close(self) -> None:
        """Stop the background thread."""
        self._stop.set()
        if self._thread is not None and self._thread is not threading.current_thread():
            self._thread.join(timeout=1.0)
        self._thread = None

    def _run(self) -> None:
        while not self._stop.wait(self.poll_s):
            self.check()
