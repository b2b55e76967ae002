"""The rich progress bar of `vlmrl train`: steps, steps/s, last evaluation success, scorer backlog."""

from __future__ import annotations

import time
from types import TracebackType

from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeRemainingColumn


class TrainProgress:
    """A context manager around ``rich.progress.Progress``; does nothing when disabled."""

    def __init__(self, total_steps: int, start_step: int, enabled: bool = True) -> None:
        self.enabled = enabled
        self.console = Console(stderr=True)
        self._last_step, self._last_time = start_step, time.monotonic()
        self._rate = 0.0
        self._progress = Progress(
            TextColumn("[bold]train"),
            BarColumn(),
            MofNCompleteColumn(),
            TextColumn("{task.fields[rate]} steps/s"),
            TextColumn("success {task.fields[success]}"),
            TextColumn("scorer backlog {task.fields[backlog]}"),
            TimeRemainingColumn(),
            console=self.console,
            disable=not enabled,
        )
        self._task = self._progress.add_task(
            "train", total=total_steps, completed=start_step, rate="-", success="-", backlog="-"
        )

    def __enter__(self) -> TrainProgress:
        self._progress.__enter__()
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self._progress.__exit__(exc_type, exc, tb)

    def update(self, step: int, fields: dict[str, str]) -> None:
        """Move to ``step``; steps/s is smoothed over recent episodes."""
        now = time.monotonic()
        if now > self._last_time:
            rate = (step - self._last_step) / (now - self._last_time)
            self._rate = rate if self._rate == 0.0 else 0.8 * self._rate + 0.2 * rate
        self._last_step, self._last_time = step, now
        fields = {**fields, "rate": f"{self._rate:.0f}"}
        self._progress.update(self._task, completed=step, **fields)  # type: ignore[arg-type]

    def note(self, message: str) -> None:
        """Print a line above the bar."""
        if self.enabled:
            self._progress.console.print(message)
