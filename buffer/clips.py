"""Clips handed to the scorer: L frames of one camera inside one episode, every `stride` steps.

The clip rule (the one rule for which steps a clip's score covers; docs/ARCHITECTURE.md "Clips"):

An episode of n transitions has observations 0..n (row n is the final observation). Clips are laid
back to back from step 0 every ``span = length * stride`` steps, one per start s < n
(``plan_episode_clips``). A clip starting at s has the frames s, s + stride, ... up to ``length`` of
them, fewer at the episode's end (never past observation n). Then:

- its score **judges the observation at its last frame**, ``clip_last_step``
  (= s + (frames - 1) * stride): an aux reward puts the score's potential there;
- its score **covers the steps** ``[s, min(s + span, n))`` (``clip_span``): from its first frame up to
  the next clip's first frame, the last clip up to the episode's end. Every transition is covered by
  exactly one clip. The replay priority of those transitions is the clip's score
  (``covered_transitions``), a report's score curve shows it on those steps (``scores_per_step``), and
  a calibration label asks whether success was reached by the end of the span (observation
  ``min(s + span, n)``).
"""

from __future__ import annotations

from collections.abc import Sequence
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


def plan_episode_clips(n_rows: int, length: int, stride: int) -> list[tuple[int, int]]:
    """(start step, frames) of each clip of an episode with ``n_rows`` observations (the clip rule)."""
    span = length * stride
    return [(s, min(length, -(-(n_rows - s) // stride))) for s in range(0, n_rows - 1, span)]


def plan_clips(
    episode: int, start_row: int, end_row: int, length: int, stride: int, camera: str
) -> list[ClipRef]:
    """Back-to-back clips over an episode's rows [start_row, end_row) (last row: final observation).

    Each clip spans length * stride steps; the last one is shorter when the episode does not fill it.
    """
    return [
        ClipRef(start_row + s, episode, s, frames, stride, camera)
        for s, frames in plan_episode_clips(end_row - start_row, length, stride)
    ]


def clip_last_step(start: int, frames: int, stride: int) -> int:
    """Episode step of a clip's last frame: the observation its score judges."""
    return start + (frames - 1) * stride


def clip_span(start: int, length: int, stride: int, n_steps: int) -> tuple[int, int]:
    """[first, stop) steps a clip's score covers: from its first frame to the next clip's first frame,
    cut at ``n_steps`` (the episode's transitions, or its observations for per-frame curves)."""
    return start, min(start + length * stride, n_steps)


def scores_per_step(
    n_steps: int, starts: Sequence[int], length: int, stride: int, scores: Sequence[float]
) -> np.ndarray:
    """float32 [n_steps]: each step carries the score of the clip whose span covers it (NaN where none
    does)."""
    out = np.full(n_steps, np.nan, np.float32)
    for start, score in zip(starts, scores):
        first, stop = clip_span(int(start), length, stride, n_steps)
        out[first:stop] = score
    return out


def clip_rows(ref: ClipRef, episode_start_row: int) -> np.ndarray:
    """Global rows of a clip's frames."""
    return episode_start_row + ref.start + np.arange(ref.length, dtype=np.int64) * ref.stride


def covered_transitions(clip_start_row: int, episode_end_row: int, length: int, stride: int) -> np.ndarray:
    """Global rows of the transitions a clip's score covers (``clip_span`` over the episode's
    transitions, which end one row before ``episode_end_row``)."""
    first, stop = clip_span(clip_start_row, length, stride, episode_end_row - 1)
    return np.arange(first, stop, dtype=np.int64)
