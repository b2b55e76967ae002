"""Ring bookkeeping shared by the storages: global rows -> ring positions, FIFO eviction of episodes."""

from __future__ import annotations

from collections.abc import Iterator

import numpy as np

from buffer.episode import EpisodeTable
from buffer.errors import BufferError


class RingIndex:
    """The live episode table of a ring of `capacity` rows; evicts whole episodes, oldest first."""

    def __init__(self, capacity: int):
        if capacity < 2:
            raise BufferError(f"capacity must be >= 2 rows, got {capacity}")
        self.capacity = capacity
        self.table = EpisodeTable(first=0, first_row=0, ends=np.zeros(0, np.int64))

    def reserve(self, num_rows: int) -> tuple[int, list[tuple[int, int]]]:
        """First global row for `num_rows` new rows and the [start, end) rows of episodes evicted for them."""
        if num_rows > self.capacity:
            raise BufferError(f"episode of {num_rows} rows does not fit a buffer of capacity {self.capacity}")
        t = self.table
        start = t.next_row
        first, first_row, ends = t.first, t.first_row, t.ends
        evicted = []
        n_drop = 0
        while start + num_rows - first_row > self.capacity and n_drop < len(ends):
            evicted.append((first_row, int(ends[n_drop])))
            first_row = int(ends[n_drop])
            n_drop += 1
        if n_drop == len(ends):
            first_row = start
        self.table = EpisodeTable(first=first + n_drop, first_row=first_row, ends=ends[n_drop:])
        return start, evicted

    def commit(self, end_row: int) -> None:
        """Append the episode ending at `end_row` to the table."""
        t = self.table
        if end_row <= t.next_row:
            raise BufferError(f"commit: episode end {end_row} is not after row {t.next_row}")
        self.table = EpisodeTable(t.first, t.first_row, np.append(t.ends, np.int64(end_row)))

    def restore(self, first: int, first_row: int, ends: np.ndarray) -> None:
        """Set the table (when reopening a store)."""
        self.table = EpisodeTable(first, first_row, np.asarray(ends, np.int64))

    def segments(self, start_row: int, num_rows: int) -> Iterator[tuple[int, int, int]]:
        """Contiguous pieces of rows [start_row, start_row + num_rows) as (ring position, lo, hi) offsets."""
        lo = 0
        while lo < num_rows:
            pos = (start_row + lo) % self.capacity
            hi = min(num_rows, lo + self.capacity - pos)
            yield pos, lo, hi
            lo = hi
