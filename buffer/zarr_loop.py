"""Quiet shutdown of zarr-python's I/O loop after a failed read.

zarr-python reads the chunks of one selection as concurrent tasks on its own event loop thread. When
one chunk fails to decode (a corrupt file), the read raises at once while the other chunks' tasks are
still running; at interpreter exit zarr stops its loop with them pending, and asyncio prints "Task was
destroyed but it is pending!" plus "Future exception was never retrieved" tracebacks under the one-line
error (issue 15). ``settle_pending_reads`` lets those tasks finish (they are reads; none is cancelled, so
a read another thread still waits on completes as usual), and ``settle_at_exit`` runs it before zarr's own
exit handler.
"""

from __future__ import annotations

import asyncio
import atexit
import sys
from concurrent.futures import TimeoutError as FutureTimeout

_installed = False


def settle_pending_reads(timeout_s: float = 10.0) -> int:
    """Wait (up to ``timeout_s``) for every task still running on zarr's I/O loop; returns how many
    there were. Does nothing when zarr has not started its loop."""
    sync = sys.modules.get("zarr.core.sync")
    loop = getattr(sync, "loop", [None])[0] if sync is not None else None
    if loop is None or loop.is_closed() or not loop.is_running():
        return 0

    async def settle() -> int:
        current = asyncio.current_task()
        pending = [t for t in asyncio.all_tasks() if t is not current and not t.done()]
        if pending:
            await asyncio.wait(pending, timeout=timeout_s)
            for task in pending:
                if task.done() and not task.cancelled():
                    task.exception()  # retrieved: the failure was already reported by the read that raised
        return len(pending)

    try:
        return asyncio.run_coroutine_threadsafe(settle(), loop).result(timeout_s + 1.0)
    except (FutureTimeout, RuntimeError):
        return 0


def settle_at_exit() -> None:
    """Run ``settle_pending_reads`` at interpreter exit, before zarr stops its loop (atexit handlers
    run last-registered first; zarr registers its own when ``zarr.core.sync`` is imported)."""
    global _installed
    if _installed:
        return
    import zarr.core.sync  # noqa: F401  (zarr's exit handler must be registered before ours)

    atexit.register(settle_pending_reads)
    _installed = True
