"""Frames as image files for the page: read from the store on request, encoded once, kept in an LRU.

A miss reads a block of the episode's frames around the one asked for, cut at the frame shard's bounds
(``frames_per_shard``: one shard file, whose index the store's reader has cached), and encodes them all:
playing and scrubbing then mostly hit the cache, and a store of any size costs only what is looked at.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from typing import Literal

import numpy as np

from buffer.errors import BufferError
from vlmrl.view.source import EpisodeStore

FrameFormat = Literal["auto", "png", "jpeg"]

MEDIA_TYPES = {"png": "image/png", "jpeg": "image/jpeg"}


def encode(frame: np.ndarray, fmt: Literal["png", "jpeg"], quality: int = 90) -> bytes:
    """One uint8 HxWx3 RGB frame as PNG or JPEG bytes."""
    import cv2

    bgr = np.ascontiguousarray(frame[..., ::-1])
    if fmt == "png":
        ok, data = cv2.imencode(".png", bgr, [cv2.IMWRITE_PNG_COMPRESSION, 1])
    else:
        ok, data = cv2.imencode(".jpg", bgr, [cv2.IMWRITE_JPEG_QUALITY, quality])
    if not ok:
        raise BufferError(f"could not encode a {frame.shape} frame as {fmt}")
    return data.tobytes()


class FrameImages:
    """Encoded frames of one store, cached (least recently used first out, bounded in bytes).

    Args:
        store: the episodes.
        fmt: image format; ``auto``: PNG (lossless) up to 128x128 px, JPEG above.
        cache_bytes: most bytes of encoded frames kept.
        block: most frames read and encoded on a miss.
    """

    def __init__(
        self, store: EpisodeStore, fmt: FrameFormat = "auto", cache_bytes: int = 128 * 2**20, block: int = 16
    ):
        self.store = store
        self.fmt = fmt
        self.cache_bytes = cache_bytes
        self.block = max(1, block)
        self._cache: OrderedDict[tuple[str, int], bytes] = OrderedDict()
        self._nbytes = 0
        self._lock = threading.Lock()
        self.hits = self.misses = 0

    def format_of(self, camera: str) -> Literal["png", "jpeg"]:
        """The format a camera's frames are served in."""
        if self.fmt != "auto":
            return self.fmt
        h, w = self.store.frame_shape(camera)[:2]
        return "png" if h * w <= 128 * 128 else "jpeg"

    def get(self, camera: str, episode: int, step: int) -> tuple[bytes, str]:
        """(image bytes, media type) of a camera's frame at an episode's step.

        Raises:
            KeyError: no such camera, episode or step.
            BufferError: the frame cannot be read (damaged store).
        """
        if camera not in self.store.cameras:
            raise KeyError(f"no camera {camera!r} (have {self.store.cameras})")
        start, end = self.store.rows(episode)
        if not 0 <= step < end - start:
            raise KeyError(f"episode {episode} has steps 0..{end - start - 1}, not {step}")
        fmt = self.format_of(camera)
        row = start + step
        with self._lock:
            data = self._cache.get((camera, row))
            if data is not None:
                self._cache.move_to_end((camera, row))
                self.hits += 1
                return data, MEDIA_TYPES[fmt]
            self.misses += 1
        lo, hi = self._block(row, start, end)
        try:
            frames = self.store.read_frames(camera, np.arange(lo, hi))
        except BufferError:
            if hi - lo == 1:
                raise
            lo, hi = row, row + 1  # a damaged neighbour must not hide a readable frame
            frames = self.store.read_frames(camera, np.arange(lo, hi))
        encoded = [encode(f, fmt) for f in frames]
        with self._lock:
            for r, blob in zip(range(lo, hi), encoded):
                if (camera, r) not in self._cache:
                    self._cache[(camera, r)] = blob
                    self._nbytes += len(blob)
            while self._nbytes > self.cache_bytes and len(self._cache) > 1:
                _, old = self._cache.popitem(last=False)
                self._nbytes -= len(old)
        return encoded[row - lo], MEDIA_TYPES[fmt]

    def _block(self, row: int, start: int, end: int) -> tuple[int, int]:
        """Rows to read for a miss at ``row``: mostly ahead of it (playing goes forward), within the
        episode and the frame shard that holds it."""
        shard = self.store.frames_per_shard
        shard_start = row - (row % self.store.storage.capacity) % shard  # shards hold ring positions
        first = max(start, shard_start, row - self.block // 4)
        stop = min(end, shard_start + shard, first + self.block)
        return first, max(stop, row + 1)

    @property
    def nbytes(self) -> int:
        """Bytes of encoded frames held."""
        return self._nbytes
