"""Compiled CPU kernels (numba) for the hot byte-shuffling of pixel updates.

A SAC update on pixels spends a large share of its time turning the sampled uint8 frames into policy
images: subsampling, the DrQ random shift with replicate padding, the move to channels-first and the
float conversion. As torch ops that is an index-map gather plus two elementwise passes; here it is one
loop nest that reads each kept byte once and writes each float once. The values are the torch path's bit
for bit (same float32 operations in the same order), so a run does not change when the kernel is used.
numba is a dependency of robosuite and of this project; it compiles the kernel on first use (about a
second) and caches it next to this file.
"""

import numba
import numpy as np

_SCALE = np.float32(1.0 / 255.0)
_HALF = np.float32(0.5)


@numba.njit(cache=True, nogil=True, boundscheck=False)
def shifted_policy_images(frames: np.ndarray, shifts: np.ndarray, stride: int, out: np.ndarray) -> None:
    """``out[b, c, i, j] = frames[b, r * stride, q * stride, c] / 255 - 0.5`` with ``r = i + shifts[b, 0]``
    and ``q = j + shifts[b, 1]`` clamped to the policy image (replicate padding).

    Args:
        frames: uint8[B, H, W, C], C-contiguous.
        shifts: int64[B, 2], (dy, dx) per sample.
        stride: subsampling step of rows and columns.
        out: float32[B, C, h, w], C-contiguous, written in place; ``h``/``w`` are the policy image sides.
    """
    batch, _, _, channels = frames.shape
    height, width = out.shape[2], out.shape[3]
    for b in range(batch):
        dy = shifts[b, 0]
        dx = shifts[b, 1]
        for c in range(channels):
            for i in range(height):
                r = min(max(i + dy, 0), height - 1)
                row = frames[b, r * stride]
                dest = out[b, c, i]
                for j in range(width):
                    q = min(max(j + dx, 0), width - 1)
                    dest[j] = np.float32(row[q * stride, c]) * _SCALE - _HALF
