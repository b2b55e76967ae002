"""Checking that committed episodes can be read whole, and choosing the intact ones to use.

A zarr store checks its structure when opened (every committed row's chunk and shard files present,
shard indexes intact: `ZarrStorage.damaged()`); the bytes themselves carry crc32c checksums that are
verified on every read. `check_episodes` reads every row of every array of the episodes, so it finds
both kinds; `intact_episodes` is what a consumer of recorded data (score, export, prior data for
training) calls to refuse damaged episodes, or skip them and say which.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

import numpy as np

from buffer.errors import BufferError
from buffer.storage.protocol import Storage


def known_damage(storage: Storage) -> dict[int, str]:
    """Episodes a storage found damaged when it was opened (episode -> problem); {} for storages without
    such a check (RAM)."""
    damaged = getattr(storage, "damaged", None)
    return dict(damaged()) if callable(damaged) else {}


def live_episodes(storage: Storage) -> list[int]:
    """Ids of the committed episodes, oldest first."""
    table = storage.episodes()
    return list(range(table.first, table.first + table.count))


def check_episodes(
    storage: Storage,
    episodes: Iterable[int] | None = None,
    names: Sequence[str] | None = None,
    rows_per_read: int = 256,
) -> dict[int, str]:
    """Read every row of `names` (default: every array) of `episodes` (default: all live ones).

    Returns:
        episode -> the first problem found (damage known from opening, a missing frame, a checksum
        mismatch); episodes without problems are absent.
    """
    damage = known_damage(storage)
    names = list(storage.specs) if names is None else list(names)
    table = storage.episodes()
    for e in live_episodes(storage) if episodes is None else list(episodes):
        if e in damage:
            continue
        start, end = table.bounds(e)
        try:
            for lo in range(start, end, rows_per_read):
                rows = np.arange(lo, min(end, lo + rows_per_read))
                for name in names:
                    storage.read(name, rows)
        except BufferError as exc:
            damage[e] = str(exc)
    return damage


def intact_episodes(
    storage: Storage,
    *,
    skip_corrupt: bool,
    episodes: Iterable[int] | None = None,
    names: Sequence[str] | None = None,
) -> tuple[list[int], dict[int, str]]:
    """(episodes to use, skipped episode -> problem) after `check_episodes`.

    Raises:
        BufferError: some episode is damaged and `skip_corrupt` is False (one line naming the first).
    """
    chosen = live_episodes(storage) if episodes is None else list(episodes)
    damage = check_episodes(storage, chosen, names)
    bad = {e: damage[e] for e in chosen if e in damage}
    if bad and not skip_corrupt:
        raise BufferError(describe_skipped(bad, verb="damaged") + "; --skip-corrupt skips them")
    return [e for e in chosen if e not in bad], bad


def describe_skipped(skipped: dict[int, str], verb: str = "skipped") -> str:
    """'N episode(s) <verb> [ids]: episode e: <problem>' on one line."""
    ids = sorted(skipped)
    listed = ", ".join(map(str, ids[:20])) + (", ..." if len(ids) > 20 else "")
    return f"{len(ids)} episode(s) {verb} [{listed}]: episode {ids[0]}: {skipped[ids[0]]}"
