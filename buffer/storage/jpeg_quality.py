"""The JPEG quality setting of lossy frame arrays, checked in one place for the store, its factory and the codec
(``buffer.storage.jpeg_codec``), without importing zarr."""

from __future__ import annotations

import numpy as np

from buffer.errors import BufferError


def check_quality(quality: object) -> int:
    """``quality`` as an int in 1..100, or a one-line BufferError."""
    if isinstance(quality, bool) or not isinstance(quality, int | np.integer) or not 1 <= quality <= 100:
        raise BufferError(f"frame_quality must be an integer JPEG quality in 1..100, got {quality!r}")
    return int(quality)
