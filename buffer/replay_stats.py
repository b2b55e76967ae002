"""What the sampler replays against what the buffer holds: the diagnostics of VLM-guided replay (issue #35).

Each stored transition carries, from the moment its episode is committed (computed from the episode's own
``info/success`` and ``info/progress``, no frame is read):

- ``progress``: the privileged task progress at the last frame of the clip whose span covers it (the clip
  rule, ``buffer.clips``): the score the noise-free oracle scorer gives that clip with its defaults
  (signal progress, reduce last). Every run has this reference, scorer or not.
- ``clip_success``: success is reached at some observation of that clip's span ``[s, min(s + span, n)]``
  (the observation the calibration label reads is the span's last one).
- ``near_success``: progress reaches ``NEAR_PROGRESS`` somewhere in that span (the registered
  "near-successful" clip, results/vlm-replay/README.md).
- ``episode_success``: success is reached anywhere in the episode.
- ``score``: the clip score the sampler was given (``scores/<id>`` of the priority scorer), once it arrives.
- its storage clock: the transitions stored before it (global row minus episode id), so its **age** is the
  transitions stored since, i.e. env steps (demonstrations and prior data count as stored steps).

A value the store cannot give (no ``info/success`` column, no scorer) is NaN and its figures are left out.

Each sampled batch keeps its rows and a snapshot of the buffer's sums at that moment (a few numbers). After
``every`` batches, ``summary`` compares the replayed rows' means with the buffer's means averaged over the
same batches, so uniform replay matches the buffer up to sampling error while the buffer grows.
"""

from __future__ import annotations

from collections import deque
from typing import Any

import numpy as np

from buffer.clips import plan_episode_clips

COLUMNS = ("score", "progress", "clip_success", "near_success", "episode_success")
"""Per-transition values, in the column order of ``ReplayStats.values``."""
SCORE, PROGRESS = 0, 1
NEAR_PROGRESS = 0.8
"""Progress that makes a clip near-successful (pre-registered in results/vlm-replay/README.md)."""
_N = len(COLUMNS)
RANK_SAMPLE, MEDIAN_SAMPLE = 5_000, 32_000
"""At most so many transitions are ranked for ``replay/score_progress_rank_corr`` (standard error ~0.014)
and enter ``replay/age_median``: a window's summary stays a few milliseconds."""
# A batch's snapshot of the buffer: clock, live transitions, sum of their clocks, per column sum and count known.
_CLOCK, _LIVE, _STORED_AT, _SUMS = 0, 1, 2, 3


def episode_values(info: dict[str, np.ndarray], n_transitions: int, length: int, stride: int) -> np.ndarray:
    """float32 [n_transitions, 5] in ``COLUMNS`` order (score NaN) for one episode.

    Args:
        info: per-observation arrays [n_transitions + 1]; ``success`` and ``progress`` are read when present.
        length, stride: the buffer's clip geometry.
    """
    n = n_transitions
    out = np.full((n, _N), np.nan, np.float32)
    success = info.get("success")
    progress = info.get("progress")
    reached = None if success is None else np.asarray(success, np.float32).reshape(-1) > 0.5
    prog = None if progress is None else np.asarray(progress, np.float32).reshape(-1)
    span = length * stride
    for start, frames in plan_episode_clips(n + 1, length, stride):
        # the clip covers transitions [start, stop); its span's observations are [start, stop]
        stop = min(start + span, n)
        if prog is not None:
            out[start:stop, PROGRESS] = prog[start + (frames - 1) * stride]
            out[start:stop, 3] = float(prog[start : stop + 1].max() >= NEAR_PROGRESS)
        if reached is not None:
            out[start:stop, 2] = float(reached[start : stop + 1].any())
    if reached is not None:
        out[:, 4] = float(reached.any())
    return out


class ReplayStats:
    """Per ring position values and the window of sampled batches (see the module doc).

    Not thread-safe on its own: the buffer calls it under its lock.

    Args:
        capacity: ring positions.
        every: batches per window (``BufferConfig.replay_stats_every``).
    """

    def __init__(self, capacity: int, every: int):
        self.every = every
        self.values = np.full((_N, capacity), np.nan, np.float32)  # a row per column: gathers stay contiguous
        self.stored_at = np.zeros(capacity, np.int64)
        self.live = np.zeros(capacity, bool)
        self.clock = 0
        """Transitions stored so far (evicted ones included)."""
        self._sums = np.zeros(3 + 2 * _N, np.float64)  # live count, sum of clocks, per column sum and count
        self._rows: deque[np.ndarray] = deque(maxlen=every)
        self._moments: deque[np.ndarray] = deque(maxlen=every)

    def _account(self, positions: np.ndarray, sign: float) -> None:
        values = self.values[:, positions]
        known = ~np.isnan(values)
        self._sums[0] += sign * len(positions)
        self._sums[1] += sign * float(self.stored_at[positions].sum())
        self._sums[2 : 2 + _N] += sign * np.where(known, values, 0.0).sum(axis=1)
        self._sums[2 + _N : 2 + 2 * _N] += sign * known.sum(axis=1)

    def add(self, positions: np.ndarray, values: np.ndarray, stored_at: np.ndarray) -> None:
        """Transitions of a committed episode: their values (``episode_values``) and storage clocks."""
        self.remove(positions)
        self.values[:, positions] = values.T
        self.stored_at[positions] = stored_at
        self.live[positions] = True
        self._account(positions, 1.0)

    def remove(self, positions: np.ndarray) -> None:
        """Evicted positions (those that are not live transitions are ignored)."""
        positions = positions[self.live[positions]]
        if len(positions):
            self._account(positions, -1.0)
            self.live[positions] = False
            self.values[:, positions] = np.nan

    def set_scores(self, positions: np.ndarray, scores: np.ndarray) -> None:
        """Clip scores of live positions."""
        positions, first = np.unique(np.asarray(positions, np.int64), return_index=True)
        scores = np.asarray(scores, np.float32)[first]
        live = self.live[positions]
        positions, scores = positions[live], scores[live]
        old = self.values[SCORE, positions]
        known = ~np.isnan(old)
        self._sums[2 + SCORE] += float(scores.sum() - old[known].sum())
        self._sums[2 + _N + SCORE] += float(len(scores) - known.sum())
        self.values[SCORE, positions] = scores

    def observe(self, rows: np.ndarray) -> None:
        """A sampled batch's global rows (``Batch.indices``)."""
        self._rows.append(rows)
        self._moments.append(np.concatenate([[self.clock], self._sums]))

    @property
    def ready(self) -> bool:
        """A full window of batches is waiting for ``summary``."""
        return self.every > 0 and len(self._rows) >= self.every

    def summary(self, row_of_pos: np.ndarray, first_row: int, prior_rows: int = 0) -> dict[str, float]:
        """The window's figures under ``replay/`` (``replay/<column>`` replayed mean, ``replay/buffer_<column>``
        the buffer's), then a new window starts. Rows evicted since they were sampled are left out.

        Args:
            row_of_pos: the buffer's global row at each ring position (-1: none).
            first_row: the oldest live global row (eviction is oldest first: older rows are gone).
            prior_rows: global rows [0, prior_rows) are demonstrations or prior data (0: none).
        """
        rows = np.concatenate(self._rows)
        batch_ends = np.cumsum([len(r) for r in self._rows])
        moments = np.stack(self._moments)
        self._rows.clear()
        self._moments.clear()
        kept = np.flatnonzero(rows >= first_row) if rows.min() < first_row else None
        if kept is not None:
            rows = rows[kept]
        out = {"replay/batches": float(len(moments)), "replay/rows": float(len(rows))}
        if not len(rows):
            return out
        pos = rows % len(row_of_pos)
        # replays per position (float: the sums below are BLAS dot products)
        times = np.bincount(pos, minlength=len(row_of_pos)).astype(np.float64)
        for i, name in enumerate(COLUMNS):
            known = ~np.isnan(self.values[i])
            counts = moments[:, _SUMS + _N + i]
            replayed = times[known]
            total = replayed.sum()
            if total > 0 and (counts > 0).any():
                out[f"replay/{name}"] = float(replayed @ self.values[i, known].astype(np.float64) / total)
                buffer_means = moments[counts > 0, _SUMS + i] / counts[counts > 0]
                out[f"replay/buffer_{name}"] = float(buffer_means.mean())

        def clocks(index: np.ndarray) -> np.ndarray:  # the storage clock when each sampled row was drawn
            original = index if kept is None else kept[index]
            return moments[np.searchsorted(batch_ends, original, side="right"), _CLOCK]

        clock_sum = (
            float(np.diff(batch_ends, prepend=0) @ moments[:, _CLOCK])
            if kept is None
            else float(clocks(np.arange(len(rows))).sum())
        )
        stored_at_sum = float(times @ self.stored_at.astype(np.float64))
        out["replay/age_mean"] = (clock_sum - stored_at_sum) / len(rows) - 1
        sample = np.arange(0, len(rows), max(1, len(rows) // MEDIAN_SAMPLE))  # evenly spaced replayed rows
        out["replay/age_median"] = float(np.median(clocks(sample) - 1 - self.stored_at[pos[sample]]))
        live = moments[:, _LIVE]
        out["replay/buffer_age_mean"] = float(
            (moments[:, _CLOCK] - 1 - moments[:, _STORED_AT] / np.maximum(live, 1)).mean()
        )
        if prior_rows > 0:
            out["replay/demo_share"] = float((rows < prior_rows).mean())
            prior_live = int(np.count_nonzero(self.live & (row_of_pos >= 0) & (row_of_pos < prior_rows)))
            out["replay/buffer_demo_share"] = float((prior_live / np.maximum(live, 1)).mean())
        distinct = np.flatnonzero(times)
        corr = rank_correlation(self.values[SCORE, distinct], self.values[PROGRESS, distinct])
        if corr is not None:
            out["replay/score_progress_rank_corr"] = corr
        return out

    def window_state(self) -> dict[str, Any]:
        """The batches of the window so far (for an exact resume)."""
        sizes = np.array([len(r) for r in self._rows], np.int64)
        rows = np.concatenate(self._rows) if self._rows else np.zeros(0, np.int64)
        moments = np.stack(self._moments) if self._moments else np.zeros((0, 1 + len(self._sums)))
        return {"sizes": sizes, "rows": rows, "moments": moments}

    def load_window_state(self, state: dict[str, Any] | None) -> None:
        """Restore ``window_state`` (None, as in a checkpoint from before these statistics: an empty window)."""
        self._rows.clear()
        self._moments.clear()
        if state is None:
            return
        bounds = np.cumsum(np.asarray(state["sizes"], np.int64))[:-1]
        for rows, moment in zip(np.split(np.asarray(state["rows"], np.int64), bounds), state["moments"]):
            self._rows.append(rows)
            self._moments.append(np.asarray(moment, np.float64))


def rank_correlation(scores: np.ndarray, progress: np.ndarray) -> float | None:
    """Spearman correlation of the scorer's scores and the oracle's progress where both are known (over
    the distinct replayed transitions: the student's agreement with the oracle); None when it is undefined.
    At most ``RANK_SAMPLE`` evenly spaced transitions are ranked, to keep a window's summary cheap."""
    both = np.flatnonzero(~np.isnan(scores) & ~np.isnan(progress))
    if len(both) > RANK_SAMPLE:
        both = both[np.linspace(0, len(both) - 1, RANK_SAMPLE).astype(np.int64)]
    s, p = scores[both], progress[both]
    if len(both) < 3 or np.ptp(s) == 0 or np.ptp(p) == 0:
        return None
    from scipy.stats import spearmanr  # only here: importing scipy takes ~0.5 s

    return float(spearmanr(s, p).statistic)
