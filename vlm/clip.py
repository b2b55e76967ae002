"""A clip: L consecutive frames of one camera, plus the per-step privileged info stored beside them."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

import numpy as np

from vlm.errors import VLMError


@dataclass(frozen=True)
class Clip:
    """Frames a scorer judges, oldest first.

    Attributes:
        frames: uint8 array [L, H, W, 3], RGB, row 0 at the top.
        info: per-step arrays of length L (e.g. ``"progress"`` in [0, 1], ``"success"``), the privileged
            signals a simulator exposes; only the oracle scorer reads them.
    """

    frames: np.ndarray
    info: Mapping[str, np.ndarray] = field(default_factory=dict)

    def __post_init__(self) -> None:
        frames = self.frames
        if not isinstance(frames, np.ndarray):
            raise VLMError(f"clip frames must be a numpy array, got {type(frames).__name__}")
        if frames.ndim != 4 or frames.shape[-1] != 3 or frames.shape[0] < 1:
            raise VLMError(f"clip frames must have shape [L, H, W, 3] with L >= 1, got {frames.shape}")
        if frames.dtype != np.uint8:
            raise VLMError(f"clip frames must be uint8, got {frames.dtype}")
        for key, values in self.info.items():
            if np.shape(values)[:1] != (frames.shape[0],):
                raise VLMError(
                    f"clip info[{key!r}] must have one entry per frame ({frames.shape[0]}), "
                    f"got shape {np.shape(values)}"
                )

    @property
    def length(self) -> int:
        """Number of frames L."""
        return int(self.frames.shape[0])

    def subsample(self, num_frames: int) -> Clip:
        """Returns a clip of at most ``num_frames`` evenly spaced frames, always keeping the last one."""
        idx = subsample_indices(self.length, num_frames)
        if len(idx) == self.length:
            return self
        return Clip(self.frames[idx], {k: np.asarray(v)[idx] for k, v in self.info.items()})


def subsample_indices(length: int, num_frames: int) -> np.ndarray:
    """Evenly spaced indices into ``range(length)``: at most ``num_frames`` of them, the last included.

    The last frame is what goal and success questions are about, so it is always kept.
    """
    if num_frames < 1:
        raise VLMError(f"num_frames must be >= 1, got {num_frames}")
    if num_frames >= length:
        return np.arange(length)
    return np.unique(np.round(np.linspace(length - 1, 0, num_frames)).astype(np.int64))


def as_clip(item: Clip | np.ndarray) -> Clip:
    """Wraps a bare uint8 [L, H, W, 3] array (or a single [H, W, 3] frame) as a Clip without info."""
    if isinstance(item, Clip):
        return item
    arr = np.asarray(item)
    if arr.ndim == 3:
        arr = arr[None]
    return Clip(arr)


def as_clips(items: Sequence[Clip | np.ndarray]) -> list[Clip]:
    """Validates and wraps a batch of clips (see ``as_clip``)."""
    return [as_clip(item) for item in items]
