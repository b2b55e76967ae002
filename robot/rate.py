"""Fixed-rate timing for control loops: sleep to each deadline, count the ones that were missed."""

from __future__ import annotations

import time
from collections.abc import Callable


class RateKeeper:
    """Paces a loop at ``hz``; a late iteration counts as an overrun and the schedule restarts from now.

    Restarting (instead of catching up with back-to-back steps) keeps the commanded motion smooth on a
    real arm after a hiccup.

    Args:
        hz: loop rate.
        clock: monotonic clock in seconds.
        sleep: sleep function (tests pass a simulated one).
    """

    def __init__(
        self,
        hz: float,
        clock: Callable[[], float] = time.monotonic,
        sleep: Callable[[float], None] = time.sleep,
    ) -> None:
        if not hz > 0:
            raise ValueError(f"control rate {hz} Hz must be positive")
        self.period_s = 1.0 / hz
        self._clock = clock
        self._sleep = sleep
        self._deadline: float | None = None
        self.ticks = 0
        """Iterations paced so far."""
        self.overruns = 0
        """Iterations that reached their deadline late."""
        self.max_lateness_s = 0.0
        """Largest lateness seen, in seconds."""

    def restart(self) -> None:
        """Begin a new schedule one period from now (after a pause such as a reset)."""
        self._deadline = self._clock() + self.period_s

    def wait(self) -> float:
        """Sleep until the next deadline; returns how late this iteration was (0.0 when on time)."""
        if self._deadline is None:
            self.restart()
        assert self._deadline is not None
        self.ticks += 1
        now = self._clock()
        if now <= self._deadline:
            self._sleep(self._deadline - now)
            self._deadline += self.period_s
            return 0.0
        late = now - self._deadline
        self.overruns += 1
        self.max_lateness_s = max(self.max_lateness_s, late)
        self._deadline = now + self.period_s
        return late

    def metrics(self) -> dict[str, float]:
        """Ticks, overruns and the worst lateness, for run reports."""
        return {"ticks": self.ticks, "overruns": self.overruns, "max_lateness_s": self.max_lateness_s}
