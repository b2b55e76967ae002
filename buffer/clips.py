"""Clips handed to the scorer: L frames of one camera inside one episode, every `stride` steps."""

from __future__ import annotations

from typing import NamedTuple

import numpy as np


class ClipRef(NamedTuple):
    """Where a clip lies. `clip_id` is the global row of its first frame (unique for a buffer's clip
    settings, and stable across reopening a store)."""

    clip_id: int
    episode: int
    start: int
    """First step of the clip, counted from the episode start."""
    length: int
    """Frames in the clip."""
    stride: int
    """Steps between consecutive frames."""
    camera: str
    """Observation key of the frames, e.g. `pixels/front`."""


def plan_clips(
    episode: int, start_row: int, end_row: int, length: int, stride: int, camera: str
) -> list[ClipRef]:
    """Back-to-back clips over an episode's rows [start_row, end_row) (last row: final observation).

    Each clip spans length * stride steps; the last one is shorter when the episode does not fill it.
    """
    span = length * stride
    n_rows = end_row - start_row
    clips = []
    for offset in range(0, n_rows - 1, span):
        frames = min(length, -(-(n_rows - offset) // stride))
        clips.append(ClipRef(start_row + offset, episode, offset, frames, stride, camera))
    return clips


def clip_rows(ref: ClipRef, episode_start_row: int) -> np.ndarray:
    """Global rows of a clip's frames."""
    return episode_start_row + ref.start + np.arange(ref.length, dtype=np.int64) * ref.stride


def covered_transitions(clip_start_row: int, episode_end_row: int, length: int, stride: int) -> np.ndarray:
    """Global rows of the transitions a clip's score applies to: from its first frame up to the next
    clip (or the episode's last transition)."""
    stop = min(clip_start_row + length * stride, episode_end_row - 1)
    return np.arange(clip_start_row, stop, dtype=np.int64)
