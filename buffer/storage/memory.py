"""MemoryStorage: every row in numpy rings in RAM; `save(dir)` / `load(dir)` for resuming."""

from __future__ import annotations

import json
import os
from collections.abc import Mapping
from pathlib import Path

import numpy as np

from buffer.episode import EpisodeTable
from buffer.errors import BufferError
from buffer.spec import SCHEMA_VERSION, ArraySpec
from buffer.storage.protocol import check_column_name, column_fill
from buffer.storage.ring import RingIndex


class MemoryStorage:
    """Numpy rings of `capacity` rows per array (frames allocated lazily by the OS, page by page)."""

    def __init__(self, specs: Mapping[str, ArraySpec], capacity: int, attrs: Mapping | None = None):
        self.capacity = int(capacity)
        self.specs = dict(specs)
        self.attrs = dict(attrs or {})
        self._ring = RingIndex(self.capacity)
        self._arrays = {n: np.zeros((self.capacity, *s.shape), s.dtype) for n, s in self.specs.items()}
        self._columns: dict[str, np.ndarray] = {}

    def episodes(self) -> EpisodeTable:
        return self._ring.table

    def reserve(self, num_rows: int) -> tuple[int, list[tuple[int, int]]]:
        return self._ring.reserve(num_rows)

    def write(self, start_row: int, arrays: Mapping[str, np.ndarray]) -> None:
        for name, values in arrays.items():
            if name not in self._arrays:
                raise BufferError(f"write: unknown array {name!r}")
            for pos, lo, hi in self._ring.segments(start_row, len(values)):
                self._arrays[name][pos : pos + hi - lo] = values[lo:hi]
        n = len(next(iter(arrays.values())))
        for name, col in list(self._columns.items()):  # the scorer thread may add one
            for pos, lo, hi in self._ring.segments(start_row, n):
                col[pos : pos + hi - lo] = column_fill(name)

    def commit(self, end_row: int) -> None:
        self._ring.commit(end_row)

    def read(self, name: str, rows: np.ndarray) -> np.ndarray:
        source = self._arrays.get(name)
        if source is None:
            source = self._columns.get(name)
        if source is None:
            raise BufferError(
                f"read: no array {name!r} (have {sorted(self._arrays) + sorted(self._columns)})"
            )
        return source[np.asarray(rows) % self.capacity]

    def write_column(self, name: str, rows: np.ndarray, values: np.ndarray) -> None:
        check_column_name(name)
        if name not in self._columns:
            self._columns[name] = np.full(self.capacity, column_fill(name), np.float32)
        self._columns[name][np.asarray(rows) % self.capacity] = values

    def columns(self) -> list[str]:
        return sorted(self._columns)

    def close(self) -> None:
        pass

    def save(self, directory: str | os.PathLike) -> None:
        """Write every array and the episode table to `directory` (npy files + meta.json)."""
        out = Path(directory)
        out.mkdir(parents=True, exist_ok=True)
        table = self._ring.table
        # Until the ring wraps, rows past the last committed one were never written: leave them out (a
        # 40k-row ring of 64 px frames is 490 MB however few steps a run has taken).
        used = self.capacity if table.next_row > self.capacity else table.next_row
        for name, arr in {**self._arrays, **self._columns}.items():
            np.save(out / (name.replace("/", "__") + ".npy"), arr[:used])
        meta = {
            "schema_version": SCHEMA_VERSION,
            "capacity": self.capacity,
            "specs": {n: [list(s.shape), s.dtype.str] for n, s in self.specs.items()},
            "columns": sorted(self._columns),
            "first_episode": table.first,
            "first_row": table.first_row,
            "episode_ends": table.ends.tolist(),
            "attrs": self.attrs,
        }
        tmp = out / "meta.json.tmp"
        tmp.write_text(json.dumps(meta))
        os.replace(tmp, out / "meta.json")

    @classmethod
    def load(cls, directory: str | os.PathLike) -> MemoryStorage:
        """Rebuild a MemoryStorage saved with `save`.

        Raises:
            BufferError: the directory holds no saved buffer, or one of a newer schema.
        """
        src = Path(directory)
        try:
            meta = json.loads((src / "meta.json").read_text())
        except (OSError, ValueError) as exc:
            raise BufferError(f"{src / 'meta.json'}: not a saved memory buffer ({exc})") from None
        if meta["schema_version"] > SCHEMA_VERSION:
            raise BufferError(
                f"{src}: written by buffer schema {meta['schema_version']}, this code reads <= {SCHEMA_VERSION}"
            )
        specs = {n: ArraySpec(n, tuple(shape), np.dtype(dt)) for n, (shape, dt) in meta["specs"].items()}
        storage = cls(specs, meta["capacity"], meta["attrs"])
        for name in [*specs, *meta["columns"]]:
            arr = np.load(src / (name.replace("/", "__") + ".npy"))
            if len(arr) < storage.capacity:  # saved before the ring wrapped: only the rows written
                fill = 0 if name in specs else column_fill(name)
                full = np.full((storage.capacity, *arr.shape[1:]), fill, arr.dtype)
                full[: len(arr)] = arr
                arr = full
            if name in specs:
                storage._arrays[name] = arr
            else:
                storage._columns[name] = arr
        storage._ring.restore(
            meta["first_episode"], meta["first_row"], np.asarray(meta["episode_ends"], np.int64)
        )
        return storage
