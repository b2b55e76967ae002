"""Write rollouts for people: mp4 videos (imageio-ffmpeg) and PNG frame strips."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from sim.errors import SimError


def _as_frames(frames: Sequence[np.ndarray] | np.ndarray) -> np.ndarray:
    array = np.asarray(frames)
    if array.ndim != 4 or array.shape[-1] != 3 or array.dtype != np.uint8 or len(array) == 0:
        raise SimError(
            f"frames must be a non-empty uint8[T, H, W, 3] sequence, got {array.dtype}{list(array.shape)}"
        )
    return array


def write_video(frames: Sequence[np.ndarray] | np.ndarray, path: str | Path, fps: float = 20.0) -> Path:
    """Encode frames (uint8[T, H, W, 3], row 0 at the top) as an H.264 mp4 at ``fps``; returns the path.

    Odd frame sizes are padded to even ones (yuv420p needs them).
    """
    import imageio.v2 as imageio

    array = _as_frames(frames)
    pad_h, pad_w = array.shape[1] % 2, array.shape[2] % 2
    if pad_h or pad_w:
        array = np.pad(array, ((0, 0), (0, pad_h), (0, pad_w), (0, 0)), mode="edge")
    out = Path(path)
    out.parent.mkdir(parents=True, exist_ok=True)
    writer: Any
    with imageio.get_writer(out, fps=fps, codec="libx264", quality=7, macro_block_size=1) as writer:
        for frame in array:
            writer.append_data(frame)
    return out


def write_frame_strip(frames: Sequence[np.ndarray] | np.ndarray, path: str | Path, n: int = 8) -> Path:
    """Save ``n`` evenly spaced frames side by side as one PNG (first and last included); returns the path."""
    import imageio.v2 as imageio

    array = _as_frames(frames)
    if n <= 0:
        raise SimError(f"frame strip needs n >= 1 frames, got {n}")
    picks = np.unique(np.linspace(0, len(array) - 1, num=min(n, len(array))).round().astype(int))
    strip = np.concatenate(list(array[picks]), axis=1)
    out = Path(path)
    out.parent.mkdir(parents=True, exist_ok=True)
    imageio.imwrite(out, strip)
    return out
