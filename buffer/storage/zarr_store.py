"""ZarrStorage: episodes in a zarr v3 group (local directory or fsspec URL), crash-safe commits.

Layout (any zarr v3 client reads it): one array per per-row name on a ring of `capacity` rows
(`state`, `action`, `reward`, `terminated`, `truncated`, `info/<key>`, `pixels/<cam>`), mutable columns
`scores/<scorer_id>` and `aux_reward/<scorer_id>`, and `episode_ends` (ring of global end rows: episode e
at slot e % len). Group attrs: `vlmrl_buffer` (schema version, capacity, specs, env spec) and `commit`
(the commit record: live episodes and the episode in flight).

Commit protocol: `reserve` writes the record with the evicted episodes dropped and the new rows marked
in flight (before those rows are overwritten); `write` fills the rows (chunk and shard files are each
replaced atomically, so rows of other episodes sharing a file are never damaged); `commit` writes the
episode's end and then the record (one atomic file replace). After a kill at any point, reopening
finds the last record: committed episodes intact, the episode in flight discarded with a warning.

Small arrays (state, action, reward, flags, info, scores) are held in RAM and mirrored to zarr on each
write; frames are read with `FrameFile` (pread of one inner chunk) through a byte-bounded cache.
"""

from __future__ import annotations

import fcntl
import json
import os
import threading
import warnings
from collections.abc import Mapping
from pathlib import Path
from typing import Any, Literal

import numpy as np
import zarr
from zarr.codecs import Crc32cCodec

from buffer.episode import EpisodeTable
from buffer.errors import BufferError
from buffer.spec import SCHEMA_VERSION, ArraySpec
from buffer.storage.chunk_file import atomic_write, chunk_key, write_chunks
from buffer.storage.frame_cache import FrameCache
from buffer.storage.frame_file import FrameFile
from buffer.storage.jpeg_quality import check_quality
from buffer.storage.metadata_schema import (
    SMALL_CHUNK_ROWS,
    CommitRecord,
    LocalReader,
    MetadataReader,
    StoreLayout,
    ZarrStoreReader,
    check_episode_ends,
    column_args,
    create_array,
    episode_ends_args,
    frame_args,
    small_args,
    validate_store,
)
from buffer.storage.protocol import check_column_name, column_fill
from buffer.storage.ring import RingIndex
from buffer.storage.shard_format import DEFAULT_JPEG_QUALITY, LOSSY_CODECS, MAX_FRAMES_PER_SHARD, FrameCodec


def local_root(path: str) -> Path | None:
    """The directory of a local store path (plain or ``file://``); None for other fsspec URLs."""
    if path.startswith("file://"):
        return Path(path[len("file://") :])
    return None if "://" in path else Path(path)


def _spec_json(specs: Mapping[str, ArraySpec]) -> dict[str, list]:
    return {n: [list(s.shape), s.dtype.str] for n, s in specs.items()}


class ZarrStorage:
    """Rows in a zarr v3 group; see the module docstring for layout and commit protocol."""

    def __init__(
        self,
        group: zarr.Group,
        root: Path | None,
        layout: StoreLayout,
        frame_cache_bytes: int,
        fsync: bool,
        read_threads: int = 0,
        on_damage: Literal["raise", "record"] = "raise",
    ):
        """Open the store whose metadata ``validate_store`` checked (``layout``); use ``open_or_create``."""
        self.group, self.root = group, root
        self.layout = layout
        self.specs = dict(layout.specs)
        self.capacity = capacity = layout.capacity
        self.fsync = fsync
        self.location = str(root) if root is not None else str(group.store)
        self._ring = RingIndex(capacity)
        self._slots = capacity // 2 + 1
        self._lock_fd: int | None = None
        self._mirror_lock = threading.Lock()
        # The commit record is read before any array, so every episode it lists is complete in them.
        self._group_meta: dict[str, Any] | None = None
        if root is not None:
            self._group_meta = json.loads((root / "zarr.json").read_text())
            self._group_meta["attributes"]["commit"] = layout.commit.to_json()
        record = layout.commit
        self._last_record = record.to_json()
        # Damage found in committed rows: episode -> what is wrong, and the ring rows of small arrays
        # that could not be read (zeros in RAM, so reads of them must fail rather than return zeros).
        self._damage: dict[int, str] = {}
        self._bad_rows: dict[str, list[tuple[int, int]]] = {}
        first, num = record.first_episode, record.num_episodes
        slots = (np.arange(first, num) % self._slots).astype(np.int64)
        self._ends = self._load_episode_ends(slots)
        # The record against the data: a num_episodes beyond what was written, a first_row off ... fail here.
        self._ring.restore(first, record.first_row, check_episode_ends(layout, self._ends))
        self._small: dict[str, np.ndarray] = {}
        self._frames: dict[str, FrameFile] = {}
        frame_specs = [s for s in self.specs.values() if s.is_frame]
        for spec in self.specs.values():
            if spec.is_frame and root is not None:
                cache = FrameCache(frame_cache_bytes // max(1, len(frame_specs)), spec.shape)
                self._frames[spec.name] = FrameFile(
                    root,
                    spec.name,
                    spec.shape,
                    layout.frames_per_shard,
                    layout.frame_codec,
                    cache,
                    fsync,
                    read_threads,
                    layout.frame_quality or DEFAULT_JPEG_QUALITY,
                )
            elif not spec.is_frame:
                self._small[spec.name] = self._load(spec.name)
        self._columns = {name: self._load(name, every_chunk_written=False) for name in self._column_names()}
        self._check_frames()
        if self._damage and on_damage == "raise":
            self.close()
            raise BufferError(self.damage_summary())
        self._fast_chunks: dict[str, int] = {}
        for name in [*self._small, *self._columns, "episode_ends"]:
            self._enable_fast_chunks(name)
        self._discard_inflight(record)

    # ---- opening -------------------------------------------------------------------------------

    @classmethod
    def open_or_create(
        cls,
        path: str,
        specs: Mapping[str, ArraySpec],
        *,
        capacity: int,
        attrs: Mapping[str, Any] | None = None,
        frames_per_shard: int = 128,
        frame_codec: FrameCodec = "none",
        frame_quality: int = DEFAULT_JPEG_QUALITY,
        frame_cache_bytes: int = 256 * 2**20,
        fsync: bool = False,
        read_threads: int = 0,
        on_damage: Literal["raise", "record"] = "raise",
    ) -> ZarrStorage:
        """Reopen the buffer store at `path` (capacity and layout from the store) or create it.

        A new store's frames are encoded with `frame_codec` (`frame_quality`: JPEG quality of the lossy
        `jpeg`), both recorded in the store; a reopened store keeps its own codec and quality.

        Opening checks that every committed row is there (`_check_frames`, `_load`): a missing or
        unreadable chunk or shard file of committed rows is damage. `on_damage="raise"` refuses such a
        store; `"record"` opens it read-mostly: `damaged()` names the episodes, reading their damaged
        rows raises, and appending episodes is refused (it could overwrite the evidence).

        Raises:
            BufferError: the path holds something else, a store of a newer schema, other arrays, or
                (with on_damage="raise") damaged committed rows.
        """
        path = str(path)
        if not 1 <= frames_per_shard <= MAX_FRAMES_PER_SHARD:
            raise BufferError(
                f"frames_per_shard must be in 1..{MAX_FRAMES_PER_SHARD}, got {frames_per_shard}"
            )
        if frame_codec in LOSSY_CODECS:
            check_quality(frame_quality)
        root = local_root(path)
        if root is not None and (root / "zarr.json").is_file():
            validate_store(LocalReader(root))  # every metadata file, before zarr-python parses any of them
        try:
            group = zarr.open_group(path, mode="a", zarr_format=3)
        except Exception as exc:
            raise BufferError(
                f"{path}: cannot open as a zarr v3 group ({type(exc).__name__}: {exc})"
            ) from None
        reader: MetadataReader = LocalReader(root) if root is not None else ZarrStoreReader(group.store, path)
        layout = validate_store(reader)
        if layout is None:
            if len(list(group.keys())):
                raise BufferError(f"{path}: a zarr group that is not a vlmrl buffer store")
            cls._create(group, specs, capacity, attrs or {}, frames_per_shard, frame_codec, frame_quality)
            layout = validate_store(reader)
            assert layout is not None
        stored = {n: (s.shape, s.dtype) for n, s in layout.specs.items()}
        wanted = {n: (s.shape, s.dtype) for n, s in specs.items()}
        if stored != wanted:
            diff = sorted(set(stored.items()) ^ set(wanted.items()))
            raise BufferError(f"{path}: the store holds other arrays than this env declares: {diff}")
        return cls(group, root, layout, frame_cache_bytes, fsync, read_threads, on_damage)

    @staticmethod
    def _create(group, specs, capacity, attrs, frames_per_shard, frame_codec, frame_quality) -> None:
        frames_per_shard = min(frames_per_shard, capacity)
        for spec in specs.values():
            if spec.is_frame:
                args = frame_args(spec, capacity, frames_per_shard, frame_codec, frame_quality)
            else:
                args = small_args(spec, capacity)
            create_array(group, spec.name, args)
        create_array(group, "episode_ends", episode_ends_args(capacity))
        group.attrs["commit"] = CommitRecord(0, 0, 0, None).to_json()
        meta = {
            "schema_version": SCHEMA_VERSION,
            "capacity": capacity,
            "frames_per_shard": frames_per_shard,
            "frame_codec": frame_codec,
            "specs": _spec_json(specs),
            "env": dict(attrs),
            "layout": "rows on a ring: global row g at index g % capacity; episode e ends (exclusive) at "
            "episode_ends[e % len(episode_ends)]; live episodes and rows in attrs['commit']",
        }
        if frame_codec in LOSSY_CODECS:
            meta["frame_quality"] = frame_quality
        group.attrs["vlmrl_buffer"] = meta

    def _load(self, name: str, every_chunk_written: bool = True) -> np.ndarray:
        """Array `name` into RAM. A chunk that fails to decode, or (`every_chunk_written`: the rows of
        every committed episode were written) whose file is missing although it holds committed rows,
        is recorded as damage; its rows stay at the fill value and reading them raises."""
        array: Any = self.group[name]
        rows = int(array.chunks[0])
        out = None
        try:
            out = np.asarray(array[:])
        except Exception:
            out = np.full(array.shape, array.fill_value, array.dtype)
            for lo in range(0, int(array.shape[0]), rows):  # find the bad chunks, to name what they hold
                try:
                    out[lo : lo + rows] = array[lo : lo + rows]
                except Exception as exc:
                    hi = min(lo + rows, int(array.shape[0]))
                    self._note_damage(
                        name,
                        lo,
                        hi,
                        f"is corrupt at ring rows {lo}..{hi - 1}",
                        f"{type(exc).__name__}: {exc}",
                    )
        if every_chunk_written and self.root is not None:
            for lo in range(0, int(array.shape[0]), rows):
                hi = min(lo + rows, int(array.shape[0]))
                path = self.root / chunk_key(name, lo // rows, array.ndim)
                if self._live_episodes(np.arange(lo, hi)).size and not path.exists():
                    self._note_damage(
                        name, lo, hi, f"chunk file {path} is missing (ring rows {lo}..{hi - 1})"
                    )
        return out

    def _load_episode_ends(self, slots: np.ndarray) -> np.ndarray:
        """episode_ends into RAM; without it no episode can be located, so any damage is fatal."""
        array: Any = self.group["episode_ends"]
        try:
            ends = np.asarray(array[:])
        except Exception as exc:
            raise BufferError(
                f"{self.location}: array 'episode_ends' is corrupt ({type(exc).__name__}: {exc}); "
                "no episode can be located"
            ) from None
        if self.root is not None and len(slots):
            rows = int(array.chunks[0])
            for c in np.unique(slots // rows).tolist():
                path = self.root / chunk_key("episode_ends", c, 1)
                if not path.exists():
                    raise BufferError(
                        f"{self.location}: chunk file {path} of 'episode_ends' is missing; the committed "
                        "episodes it bounds cannot be located"
                    )
        return ends

    def _live_episodes(self, positions: np.ndarray) -> np.ndarray:
        """Episode id of each ring position that holds a committed row (positions without one dropped)."""
        t = self._ring.table
        offset = (np.asarray(positions, np.int64) - t.first_row) % self.capacity
        row = t.first_row + offset[offset < t.next_row - t.first_row]
        return t.first + np.searchsorted(t.ends, row, side="right")

    def _note_damage(self, name: str, lo: int, hi: int | None, problem: str, detail: str = "") -> None:
        """Record damage of array `name` at ring rows [lo, hi) (hi None: `lo` is an array of positions)."""
        positions = np.arange(lo, hi) if hi is not None else np.asarray(lo, np.int64)
        episodes = np.unique(self._live_episodes(positions))
        if hi is not None:
            self._bad_rows.setdefault(name, []).append((lo, hi))
        if not episodes.size:
            return
        what = f"array {name!r} {problem}"
        span = f"episode {episodes[0]}" if len(episodes) == 1 else f"episodes {episodes[0]}..{episodes[-1]}"
        for e in episodes.tolist():
            self._damage.setdefault(int(e), f"{what} ({span})" + (f" ({detail})" if detail else ""))

    def _check_frames(self) -> None:
        """Every committed row's frame must be in its shard: files present, indexes intact, entries set."""
        t = self._ring.table
        n_live = t.next_row - t.first_row
        if not self._frames or not n_live:
            return
        positions = (t.first_row + np.arange(n_live)) % self.capacity
        for name, frames in self._frames.items():
            for bad, problem in frames.check(positions):
                self._note_damage(name, bad, None, problem)  # type: ignore[arg-type]

    def damaged(self) -> dict[int, str]:
        """Committed episodes found damaged (when opened, and by reads since): episode -> first problem."""
        return dict(self._damage)

    def damage_summary(self) -> str:
        """One line naming the damaged episodes and the first problem."""
        episodes = sorted(self._damage)
        listed = ", ".join(map(str, episodes[:20])) + (", ..." if len(episodes) > 20 else "")
        return (
            f"{self.location}: {len(episodes)} committed episode(s) are damaged [{listed}]: "
            f"{self._damage[episodes[0]]}"
        )

    def _column_names(self) -> list[str]:
        names = []
        for prefix in ("scores", "aux_reward"):
            if prefix in self.group:
                names += [f"{prefix}/{k}" for k in self.group[prefix]]  # type: ignore[union-attr]
        return names

    def _discard_inflight(self, record: CommitRecord) -> None:
        num = record.num_episodes
        if record.inflight and self._acquire_writer_lock():  # else: a live writer's, not partial
            start, rows = record.inflight
            warnings.warn(
                f"{self.location}: discarded episode {num} (rows {start}..{start + rows - 1}), which was "
                "being written when the writer stopped; committed episodes are intact",
                stacklevel=3,
            )
            self._write_record(None)

    def _write_record(self, inflight: tuple[int, int] | None) -> None:
        """The commit point: one atomic replace of the group's zarr.json."""
        t = self._ring.table
        record = {
            "first_episode": t.first,
            "first_row": t.first_row,
            "num_episodes": t.first + t.count,
            "inflight": list(inflight) if inflight else None,
        }
        self._last_record = record
        if self._group_meta is None:
            self.group.attrs["commit"] = record
            return
        self._group_meta["attributes"]["commit"] = record
        assert self.root is not None
        atomic_write(self.root / "zarr.json", json.dumps(self._group_meta).encode(), self.fsync)

    def _mirror(self, name: str, ram: np.ndarray, lo: int, hi: int) -> None:
        """Make RAM rows [lo, hi) of a small array durable (own chunk writer when local)."""
        chunk_rows = self._fast_chunks.get(name)
        # Writer and scorer threads can touch the same column chunk: the lock makes the last write
        # carry the latest RAM contents.
        with self._mirror_lock:
            if chunk_rows is not None and self.root is not None:
                write_chunks(self.root, name, ram, lo, hi, chunk_rows, self.fsync)
            else:
                self.group[name][lo:hi] = ram[lo:hi]  # type: ignore[index]

    def _enable_fast_chunks(self, name: str) -> None:
        """Use the own chunk writer for `name` if it is local and encoded as [bytes, crc32c]."""
        if self.root is None:
            return
        array: Any = self.group[name]
        if (
            len(array.compressors) == 1
            and isinstance(array.compressors[0], Crc32cCodec)
            and not array.filters
        ):
            self._fast_chunks[name] = int(array.chunks[0])

    # ---- Storage protocol ----------------------------------------------------------------------

    def episodes(self) -> EpisodeTable:
        return self._ring.table

    def _acquire_writer_lock(self) -> bool:
        """Take the store's writer lock (an flock, released by the kernel if the process dies)."""
        if self.root is None or self._lock_fd is not None:
            return True
        fd = os.open(self.root / ".writer.lock", os.O_RDWR | os.O_CREAT, 0o644)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            os.close(fd)
            return False
        if self.root is not None and self._group_meta is not None:
            on_disk = json.loads((self.root / "zarr.json").read_text())["attributes"]["commit"]
            if on_disk != self._last_record:
                os.close(fd)
                raise BufferError(
                    f"{self.location}: another writer committed to this store after it was opened here; "
                    "reopen it before writing"
                )
        self._lock_fd = fd
        return True

    def _require_writer(self, column: str | None = None) -> None:
        """Take the writer lock. Episodes cannot be appended to a damaged store, nor a column written
        whose own chunks are damaged; other columns (scores of the intact episodes) can."""
        if column is not None and self._bad_rows.get(column):
            raise BufferError(
                f"{self.location}: refusing to write column {column!r}: chunks of it could not be read "
                f"(ring rows {self._bad_rows[column]}), and rewriting them would replace what is left"
            )
        if column is None and self._damage:
            raise BufferError(
                f"{self.location}: refusing to write into a store with damaged committed episodes "
                f"{sorted(self._damage)[:20]} (new rows could overwrite what is left of them); "
                "copy the intact episodes into a new store"
            )
        if not self._acquire_writer_lock():
            raise BufferError(
                f"{self.location}: another process is writing to this store (one writer at a time)"
            )

    def reserve(self, num_rows: int) -> tuple[int, list[tuple[int, int]]]:
        self._require_writer()
        start, evicted = self._ring.reserve(num_rows)
        self._write_record((start, num_rows))
        return start, evicted

    def write(self, start_row: int, arrays: Mapping[str, np.ndarray]) -> None:
        self._require_writer()
        n = len(next(iter(arrays.values())))
        for name, values in arrays.items():
            if name not in self.specs:
                raise BufferError(f"write: unknown array {name!r}")
            for pos, lo, hi in self._ring.segments(start_row, n):
                if name in self._frames:
                    self._frames[name].write(pos, values[lo:hi])
                elif name in self._small:
                    self._small[name][pos : pos + hi - lo] = values[lo:hi]
                    self._mirror(name, self._small[name], pos, pos + hi - lo)
                else:  # frames of a store opened through fsspec
                    self.group[name][pos : pos + hi - lo] = values[lo:hi]  # type: ignore[index]
        for name, col in list(self._columns.items()):  # the scorer thread may add one
            for pos, lo, hi in self._ring.segments(start_row, n):
                col[pos : pos + hi - lo] = column_fill(name)
                self._mirror(name, col, pos, pos + hi - lo)

    def commit(self, end_row: int) -> None:
        self._ring.commit(end_row)
        t = self._ring.table
        slot = (t.first + t.count - 1) % self._slots
        self._ends[slot] = end_row
        self._mirror("episode_ends", self._ends, slot, slot + 1)
        self._write_record(None)

    def read(self, name: str, rows: np.ndarray) -> np.ndarray:
        rows = np.asarray(rows, np.int64)
        pos = rows % self.capacity
        if name in self._frames:
            return self._frames[name].read(pos, lambda p: self._describe(rows, pos, p), self._is_committed)
        if self._bad_rows.get(name):
            self._check_not_damaged(name, rows, pos)
        source = self._small.get(name)
        if source is None:
            source = self._columns.get(name)
        if source is not None:
            return source[pos]
        if name in self.specs:  # frames of a store opened through fsspec: zarr-python's (slow) reads
            flat = pos.reshape(-1)
            uniq, inverse = np.unique(flat, return_inverse=True)
            data = np.asarray(self.group[name].get_orthogonal_selection(uniq))  # type: ignore[union-attr]
            return data[inverse].reshape(*pos.shape, *self.specs[name].shape)
        raise BufferError(f"read: no array {name!r} in {self.location}")

    def _is_committed(self, position: int) -> bool:
        t = self._ring.table
        return (position - t.first_row) % self.capacity < t.next_row - t.first_row

    def _check_not_damaged(self, name: str, rows: np.ndarray, pos: np.ndarray) -> None:
        """Raise if any of these rows of small array `name` lies in a chunk that could not be read."""
        flat = pos.reshape(-1)
        for lo, hi in self._bad_rows[name]:
            hit = np.flatnonzero((flat >= lo) & (flat < hi))
            if hit.size:
                p = int(flat[hit[0]])
                raise BufferError(
                    f"{self.location}: array {name!r}: {self._describe(rows, pos, p)} is damaged "
                    f"(its chunk, ring rows {lo}..{hi - 1}, could not be read when the store was opened)"
                )

    def _describe(self, rows: np.ndarray, pos: np.ndarray, p: int) -> str:
        row = int(rows.reshape(-1)[np.flatnonzero(pos.reshape(-1) == p)[0]])
        t = self._ring.table
        episode = t.first + int(np.searchsorted(t.ends, row, side="right"))
        return f"row {row} (episode {episode}, step {row - t.bounds(episode)[0] if episode < t.first + t.count else '?'})"

    def write_column(self, name: str, rows: np.ndarray, values: np.ndarray) -> None:
        check_column_name(name)
        self._require_writer(column=name)
        if name not in self._columns:
            create_array(self.group, name, column_args(name, self.capacity))
            self._columns[name] = np.full(self.capacity, column_fill(name), np.float32)
            self._enable_fast_chunks(name)
        pos = np.asarray(rows, np.int64) % self.capacity
        col = self._columns[name]
        col[pos] = values
        # Mirror the touched chunks whole: one atomic chunk write each instead of a scattered selection.
        chunk = min(SMALL_CHUNK_ROWS, self.capacity)
        for c in np.unique(pos // chunk).tolist():
            self._mirror(name, col, c * chunk, min(self.capacity, (c + 1) * chunk))

    def columns(self) -> list[str]:
        return sorted(self._columns)

    def close(self) -> None:
        for frames in self._frames.values():
            frames.close()
        if self._lock_fd is not None:
            os.close(self._lock_fd)  # releases the writer lock
            self._lock_fd = None

    def frame_stats(self) -> dict[str, int]:
        """Frame cache hits/misses and bytes held, summed over cameras."""
        caches = [f.cache for f in self._frames.values()]
        return {
            "cache_hits": sum(c.hits for c in caches),
            "cache_misses": sum(c.misses for c in caches),
            "cache_bytes": sum(c.nbytes for c in caches),
        }
