"""Fast local I/O of one sharded zarr v3 frame array: cached shard indexes, one pread per frame.

zarr-python spends ~1 ms per inner chunk on selection logic, so random 256-frame gathers through it run at
1.5-2 batches/s (ARCHITECTURE, zarr 3 facts; zarr-python issue #3829). This reader caches each shard's
index, keeps descriptors open and reads one frame's bytes with `os.preadv` straight into the batch.
"""

from __future__ import annotations

import os
import threading
from collections import OrderedDict
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import numpy as np

from buffer.errors import BufferError
from buffer.storage.chunk_file import atomic_write
from buffer.storage.frame_cache import FrameCache
from buffer.storage.shard_format import (
    ABSENT,
    DEFAULT_JPEG_QUALITY,
    ChunkCodec,
    FrameCodec,
    assemble_shard,
    decode_index,
    encode_index,
    index_nbytes,
    shard_key,
)

_ADMIT_EVERY = 8


def _max_open_files() -> int:
    """Descriptors one frame array may keep open: an eighth of the process's soft limit."""
    import resource

    soft, _ = resource.getrlimit(resource.RLIMIT_NOFILE)
    return max(32, (soft if soft != resource.RLIM_INFINITY else 65536) // 8)


class _Shard:
    """A shard's index as plain lists for fast scalar access (offset -1: absent chunk, the uint64
    2^64-1 read as int64), and its descriptor while open (None: closed, or no file yet)."""

    __slots__ = ("exists", "fd", "lengths", "offsets")

    def __init__(self, exists: bool, offsets: list[int], lengths: list[int], fd: int | None):
        self.exists, self.offsets, self.lengths, self.fd = exists, offsets, lengths, fd


class FrameFile:
    """Reads and writes frames of one sharded array under a local zarr group directory.

    Every shard's index stays cached (16 bytes per frame); descriptors are capped (`_max_fds`, oldest
    closed first) so a store of thousands of shards neither runs out of them nor reopens every read.
    """

    def __init__(
        self,
        root: Path,
        array_path: str,
        frame_shape: tuple[int, ...],
        frames_per_shard: int,
        codec: FrameCodec,
        cache: FrameCache,
        fsync: bool = False,
        read_threads: int = 0,
        quality: int = DEFAULT_JPEG_QUALITY,
    ):
        self.root, self.array_path = root, array_path
        self.frame_shape = frame_shape
        self.frames_per_shard = frames_per_shard
        self.codec = ChunkCodec(codec, frame_shape, quality)
        self.cache = cache
        self.fsync = fsync
        self._shards: dict[int, _Shard] = {}
        self._open_fds: OrderedDict[int, None] = OrderedDict()  # shards with an open descriptor
        self._max_fds = _max_open_files()
        self._admit_every = _ADMIT_EVERY
        self._io_lock = threading.Lock()  # guards the shard tables and the cache; held per batch read
        self._pool = (
            ThreadPoolExecutor(read_threads, thread_name_prefix="frame-read") if read_threads > 1 else None
        )

    def _path(self, shard: int) -> Path:
        return self.root / shard_key(self.array_path, shard, len(self.frame_shape) + 1)

    def _open_fd(self, shard: int) -> int:
        fd = os.open(self._path(shard), os.O_RDONLY)
        # Random single-frame reads: read-ahead would fetch megabytes nobody asked for.
        os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_RANDOM)
        self._open_fds[shard] = None
        return fd

    def _trim_fds(self) -> None:
        """Close the oldest descriptors beyond the cap (after a batch, whose reads may still use them)."""
        while len(self._open_fds) > self._max_fds:
            oldest, _ = self._open_fds.popitem(last=False)
            entry = self._shards.get(oldest)
            if entry is not None and entry.fd is not None:
                os.close(entry.fd)
                entry.fd = None

    def _load_shard(self, shard: int) -> _Shard:
        n = self.frames_per_shard
        if not self._path(shard).exists():
            return _Shard(False, [], [], None)
        fd = self._open_fd(shard)
        try:
            index = decode_index(os.pread(fd, index_nbytes(n), 0), n)
        except ValueError as exc:
            os.close(fd)
            del self._open_fds[shard]
            raise BufferError(
                f"{self.array_path}: shard file {self._path(shard)} is corrupt ({exc})"
            ) from None
        return _Shard(True, index[:, 0].astype(np.int64).tolist(), index[:, 1].astype(np.int64).tolist(), fd)

    def _shard_for(self, position: int, describe: Callable[[int], str]) -> _Shard:
        shard = position // self.frames_per_shard
        try:
            entry = self._shards[shard] = self._load_shard(shard)
        except BufferError as exc:
            raise BufferError(f"{exc}; needed for {describe(position)}") from None
        return entry

    def _forget(self, shard: int) -> None:
        entry = self._shards.pop(shard, None)
        if entry is not None and entry.fd is not None:
            os.close(entry.fd)
        self._open_fds.pop(shard, None)

    def read(
        self,
        positions: np.ndarray,
        describe: Callable[[int], str],
        committed: Callable[[int], bool] | None = None,
    ) -> np.ndarray:
        """Frames at ring positions (any shape) -> positions.shape + frame_shape.

        A position never written reads as the fill value (zeros) unless `committed(position)` says it
        holds a committed row: then its frame must exist, and a missing one is an error, not black pixels.

        Raises:
            BufferError: a frame fails its checksum, or a committed frame is missing; `describe(position)`
                names its episode.
        """
        flat = np.asarray(positions, np.int64).reshape(-1)
        out = np.empty((len(flat), *self.frame_shape), np.uint8)
        rows = out.reshape(len(flat), -1)
        n = self.frames_per_shard
        with self._io_lock:
            miss = np.flatnonzero(self.cache.get_into(flat, out))
            jobs: list[tuple[int, int, int, int, int]] = []  # (row in batch, position, fd, offset, nbytes)
            for i, p in zip(miss.tolist(), flat[miss].tolist()):
                shard = self._shards.get(p // n) or self._shard_for(p, describe)
                j = p % n
                offset = shard.offsets[j] if shard.exists else -1
                if offset < 0:  # never written: the array's fill value
                    if committed is not None and committed(p):
                        why = "has no frame for it" if shard.exists else "does not exist"
                        raise BufferError(
                            f"{self.array_path}: {describe(p)} is missing (shard file {self._path(p // n)} {why})"
                        )
                    rows[i] = 0
                    continue
                fd = shard.fd
                if fd is None:
                    fd = shard.fd = self._open_fd(p // n)
                jobs.append((i, p, fd, offset, shard.lengths[j]))
            threads = self._pool._max_workers if self._pool is not None else 1
            if threads > 1 and len(jobs) >= 4 * threads:
                # Cold pages: several reads in flight let the disk work on them in parallel.
                parts = [jobs[k::threads] for k in range(threads)]
                list(self._pool.map(lambda part: self._read_jobs(part, rows, describe), parts))  # type: ignore[union-attr]
            else:
                self._read_jobs(jobs, rows, describe)
            self._trim_fds()
            # Admit one miss in _ADMIT_EVERY: under near-uniform sampling the hit rate is budget/size
            # whichever frames are cached, so copying every miss into the cache only costs time.
            admit = miss[:: self._admit_every]
            self.cache.put(flat[admit], out[admit])
        return out.reshape(*np.shape(positions), *self.frame_shape)

    def _read_jobs(self, jobs: list[tuple[int, int, int, int, int]], rows: np.ndarray, describe) -> None:
        raw = self.codec.is_raw
        crc = bytearray(4)
        for i, p, fd, offset, nbytes in jobs:
            try:
                if raw:  # straight into the batch: no intermediate bytes, no copy
                    got = os.preadv(fd, [rows[i], crc], offset)
                    self.codec.check_raw(rows[i], crc, got)
                else:
                    self.codec.decode_into(os.pread(fd, nbytes, offset), rows[i])
            except ValueError as exc:
                raise BufferError(f"{self.array_path}: {describe(p)} is corrupt ({exc})") from None

    def check(self, positions: np.ndarray) -> list[tuple[np.ndarray, str]]:
        """Which of these ring positions (each should hold a written frame) cannot be read, without
        reading the frames: (positions, problem) per shard whose file is missing, has a corrupt index,
        has no entry for some of them or entries past its end. Frame bytes are checked on read."""
        n = self.frames_per_shard
        positions = np.unique(np.asarray(positions, np.int64))
        problems: list[tuple[np.ndarray, str]] = []
        shards = positions // n
        for mine in np.split(positions, np.flatnonzero(np.diff(shards)) + 1) if len(positions) else []:
            shard = int(mine[0]) // n
            path = f"{self.root}/{shard_key(self.array_path, shard, len(self.frame_shape) + 1)}"  # no pathlib: hot
            try:
                fd = os.open(path, os.O_RDONLY)
            except FileNotFoundError:
                problems.append((mine, f"shard file {path} is missing"))
                continue
            try:
                index = decode_index(os.pread(fd, index_nbytes(n), 0), n)
                size = os.fstat(fd).st_size
            except ValueError as exc:
                problems.append((mine, f"shard file {path} is corrupt ({exc})"))
                continue
            finally:
                os.close(fd)
            entries = index[mine - shard * n]
            absent = entries[:, 0] == ABSENT
            if absent.any():
                problems.append((mine[absent], f"shard file {path} has no frame for them"))
            present = entries[~absent]
            past = present[:, 0] + present[:, 1] > np.uint64(size)
            if past.any():
                problems.append((mine[~absent][past], f"shard file {path} is truncated ({size} bytes)"))
        return problems

    def write(self, start: int, frames: np.ndarray) -> None:
        """Write frames at ring positions [start, start + len(frames)).

        A new shard is written whole (temporary file + rename). An existing one gets the new frames
        appended and then its index rewritten in place (one page, see MAX_FRAMES_PER_SHARD): until that
        write the old index, which never points at the appended bytes, stays valid. Once dead bytes
        outweigh live ones the shard is compacted (rewritten whole, temporary file + rename).
        """
        n = self.frames_per_shard
        stop = start + len(frames)
        for shard in range(start // n, (stop - 1) // n + 1):
            lo, hi = max(start, shard * n), min(stop, (shard + 1) * n)
            new = dict(
                zip(range(lo - shard * n, hi - shard * n), self._encode(frames[lo - start : hi - start]))
            )
            self._write_shard(shard, new)
            with self._io_lock:
                self._forget(shard)
                self.cache.invalidate(range(lo, hi))

    def _encode(self, frames: np.ndarray) -> list[bytes]:
        """Chunk bytes of each frame; JPEG encoding (~70 us a frame, GIL released) spreads over the
        read threads so a lossy store inserts about as fast as a lossless one on several cores."""
        if self._pool is not None and self.codec.is_lossy and len(frames) > 1:
            return list(self._pool.map(self.codec.encode, frames))
        return [self.codec.encode(f) for f in frames]

    def _write_shard(self, shard: int, new: dict[int, bytes]) -> None:
        n = self.frames_per_shard
        path = self._path(shard)
        try:
            fd = os.open(path, os.O_RDWR)
        except FileNotFoundError:
            atomic_write(path, assemble_shard([new.get(j) for j in range(n)]), self.fsync)
            return
        try:
            try:
                index = decode_index(os.pread(fd, index_nbytes(n), 0), n)
            except ValueError as exc:
                raise BufferError(f"{self.array_path}: shard file {path} is corrupt ({exc})") from None
            size = os.fstat(fd).st_size
            present = index[:, 0] != ABSENT
            kept = [j for j in np.flatnonzero(present).tolist() if j not in new]
            live = int(index[kept, 1].sum()) + sum(len(c) for c in new.values())
            if size + sum(len(c) for c in new.values()) > 2 * (live + index_nbytes(n)):
                chunks: list[bytes | None] = [None] * n
                for j in kept:
                    chunks[j] = os.pread(fd, int(index[j, 1]), int(index[j, 0]))
                for j, c in new.items():
                    chunks[j] = c
                atomic_write(path, assemble_shard(chunks), self.fsync)
                return
            offset = size
            for j, c in sorted(new.items()):
                index[j] = (offset, len(c))
                offset += len(c)
            os.pwrite(fd, b"".join(c for _, c in sorted(new.items())), size)
            if self.fsync:
                os.fsync(fd)
            os.pwrite(fd, encode_index(index), 0)
            if self.fsync:
                os.fsync(fd)
        finally:
            os.close(fd)

    def close(self) -> None:
        """Close every open shard."""
        with self._io_lock:
            for shard in list(self._shards):
                self._forget(shard)
        if self._pool is not None:
            self._pool.shutdown()
            self._pool = None
