"""Durable local writes of zarr v3 chunk files (codecs [bytes(little), crc32c]) and of whole files.

zarr-python costs milliseconds per write call; an episode commit touches ~15 small arrays, so the
store writes the few chunks it changed itself: the chunk's bytes plus their crc32c, to a temporary
file renamed over the old one (a crash leaves the old chunk or the new one, never half of either).
"""

from __future__ import annotations

import os
import threading
from pathlib import Path

import google_crc32c
import numpy as np


def atomic_write(path: Path, data: bytes, fsync: bool = False) -> None:
    """Replace `path` with `data` atomically (temporary file + rename in the same directory)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f"{path.name}.{os.getpid()}-{threading.get_ident()}.tmp")
    with open(tmp, "wb") as f:
        f.write(data)
        if fsync:
            f.flush()
            os.fsync(f.fileno())
    os.replace(tmp, path)
    if fsync:  # the rename itself lives in the directory
        fd = os.open(path.parent, os.O_RDONLY)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)


def chunk_key(name: str, chunk: int, ndim: int) -> str:
    """Key of chunk `chunk` along axis 0 (default v3 chunk keys, "/" separator)."""
    return "/".join([name, "c", str(chunk), *("0" * (ndim - 1))])


def write_chunks(
    root: Path, name: str, ram: np.ndarray, lo: int, hi: int, chunk_rows: int, fsync: bool
) -> None:
    """Write every chunk of array `name` overlapping rows [lo, hi) from its full in-RAM copy `ram`."""
    for c in range(lo // chunk_rows, (hi - 1) // chunk_rows + 1):
        block = ram[c * chunk_rows : (c + 1) * chunk_rows]
        if len(block) < chunk_rows:  # zarr stores edge chunks at full size
            pad = np.zeros((chunk_rows - len(block), *block.shape[1:]), block.dtype)
            block = np.concatenate([block, pad])
        data = np.ascontiguousarray(block, dtype=block.dtype.newbyteorder("<")).tobytes()
        atomic_write(
            root / chunk_key(name, c, ram.ndim), data + np.uint32(google_crc32c.value(data)).tobytes(), fsync
        )
