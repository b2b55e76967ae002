"""The Storage protocol: where a replay buffer's rows live."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Protocol

import numpy as np

from buffer.episode import EpisodeTable
from buffer.errors import BufferError
from buffer.spec import ArraySpec


class Storage(Protocol):
    """Rows of whole episodes on one global row axis, held in a ring of `capacity` positions.

    Writing an episode is three calls so that a reader never sees half of one:
    `reserve` evicts the oldest episodes until the new rows fit (durably, before their rows are
    overwritten), `write` fills the rows (invisible), `commit` publishes the episode (metadata written
    last, atomically). One writer; reads of live rows may run concurrently on another thread.
    Mutable per-row columns (`scores/<id>`, `aux_reward/<id>`) are written with `write_column`.
    """

    capacity: int
    specs: dict[str, ArraySpec]

    def episodes(self) -> EpisodeTable:
        """The live committed episodes (an immutable snapshot)."""
        ...

    def reserve(self, num_rows: int) -> tuple[int, list[tuple[int, int]]]:
        """Make room for `num_rows` new rows: (their first global row, evicted episodes' row ranges)."""
        ...

    def write(self, start_row: int, arrays: Mapping[str, np.ndarray]) -> None:
        """Write rows [start_row, start_row + len) of every spec'd array (not visible until commit)."""
        ...

    def commit(self, end_row: int) -> None:
        """Publish the episode ending (exclusive) at global row `end_row`."""
        ...

    def read(self, name: str, rows: np.ndarray) -> np.ndarray:
        """Gather rows (global row ids, any shape) of array `name`: result shape rows.shape + row shape."""
        ...

    def write_column(self, name: str, rows: np.ndarray, values: np.ndarray) -> None:
        """Set float32 values of a mutable column (`scores/<id>`, `aux_reward/<id>`), creating it."""
        ...

    def columns(self) -> list[str]:
        """Names of the mutable columns that exist."""
        ...

    def close(self) -> None:
        """Flush and release files."""
        ...


def column_fill(name: str) -> float:
    """Fill of a mutable column: NaN (unscored) for scores, 0 for auxiliary rewards."""
    return float("nan") if name.startswith("scores/") else 0.0


def check_column_name(name: str) -> None:
    """Only `scores/<id>` and `aux_reward/<id>` are mutable columns."""
    prefix, _, scorer_id = name.partition("/")
    if prefix not in ("scores", "aux_reward") or not scorer_id or "/" in scorer_id:
        raise BufferError(f"column {name!r}: expected 'scores/<scorer_id>' or 'aux_reward/<scorer_id>'")
