"""Turn SIGINT and SIGTERM into KeyboardInterrupt so `with` blocks stop the robot cleanly."""

from __future__ import annotations

import signal
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from types import FrameType


def _interrupt(signum: int, frame: FrameType | None) -> None:
    raise KeyboardInterrupt(f"signal {signal.Signals(signum).name}")


@contextmanager
def interrupt_on_signals() -> Iterator[None]:
    """Inside the block, SIGINT and SIGTERM raise KeyboardInterrupt in the main thread.

    Libraries sometimes replace the SIGINT handler, and SIGTERM kills without unwinding by default; both
    would skip the robot's clean disconnect. Outside the main thread this does nothing (Python only lets
    the main thread set handlers).
    """
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    previous = {sig: signal.signal(sig, _interrupt) for sig in (signal.SIGINT, signal.SIGTERM)}
    try:
        yield
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)
