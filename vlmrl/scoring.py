"""The link between the replay buffer and the VLM scoring worker during training.

New clips of committed episodes go to the asynchronous ``ScoringWorker``; its scores come back (on the
worker thread) into the buffer as clip scores (priorities) and, when an auxiliary reward is configured,
as per-transition aux rewards. Nothing here blocks the training loop unless ``sync`` is set (then each
submit waits for its scores, which makes runs exactly reproducible).
"""

from __future__ import annotations

import threading
from collections.abc import Sequence

import numpy as np

from buffer import ReplayBuffer
from vlm import AuxRewardConfig, Clip, ClipRequest, Scorer, ScoringWorker, WorkerConfig


def aux_reward_updates(
    requests: Sequence[ClipRequest],
    scores: np.ndarray,
    episode_start_rows: Sequence[int],
    previous_scores: Sequence[float],
    cfg: AuxRewardConfig,
) -> tuple[np.ndarray, np.ndarray]:
    """Per-transition aux rewards for scored clips (weight applied by the buffer, not here).

    Each clip's reward lands on the transition that reaches its last frame. ``scaled``: the score
    (optionally binarised). ``shaping``: gamma * Phi_k - Phi_{k-1} with Phi the clip scores of the same
    episode in order (0 before the first clip), the potential-based form of Ng et al. (1999).

    Returns:
        (global transition indices int64[M], values float32[M]); clips whose last frame is the episode's
        first observation are skipped (no transition reaches it).
    """
    indices, values = [], []
    for request, score, start_row, previous in zip(requests, scores, episode_start_rows, previous_scores):
        last_step = request.start + (request.length - 1) * request.stride
        if last_step == 0:
            continue
        value = float(score)
        prev = float(previous)
        if cfg.threshold is not None:
            value, prev = float(value >= cfg.threshold), float(prev >= cfg.threshold)
        if cfg.kind == "shaping":
            value = cfg.gamma * value - prev
        indices.append(start_row + last_step - 1)
        values.append(cfg.weight * value)
    return np.asarray(indices, np.int64), np.asarray(values, np.float32)


class ScoringLink:
    """Feeds the buffer's new clips to a scoring worker and writes the scores back.

    Args:
        buffer: the replay buffer (its clip camera decides which frames are scored).
        scorer: any ``vlm.Scorer``; closed by ``close()``.
        prompt: the question asked about every clip.
        worker_cfg: batching/backlog/retry settings of the worker.
        aux_reward: how scores become aux rewards; None stores scores only.
        sync: wait for each submitted batch of clips to be scored (deterministic, slower).
    """

    def __init__(
        self,
        buffer: ReplayBuffer,
        scorer: Scorer,
        prompt: str,
        worker_cfg: WorkerConfig,
        aux_reward: AuxRewardConfig | None,
        sync: bool = False,
    ) -> None:
        self.buffer = buffer
        self.scorer = scorer
        self.scorer_id = scorer.scorer_id
        self.aux_reward = aux_reward
        self.sync = sync
        self._lock = threading.Lock()
        self._scores: list[float] = []
        self._last_score: dict[tuple[int, int], float] = {}  # (episode, clip start) -> score
        self.worker = ScoringWorker(scorer, prompt, self._load, self._on_scored, worker_cfg)

    def _load(self, request: ClipRequest) -> Clip:
        frames, info = self.buffer.read_clip(request)  # type: ignore[arg-type]
        return Clip(frames, info)

    def _on_scored(self, requests: Sequence[ClipRequest], scores: np.ndarray) -> None:
        scores = np.clip(np.asarray(scores, np.float32), 0.0, 1.0)
        self.buffer.set_scores([r.clip_id for r in requests], scores, self.scorer_id)
        with self._lock:
            self._scores.extend(float(s) for s in scores)
            previous = []
            for request, score in zip(requests, scores):
                span = request.length * request.stride
                previous.append(self._last_score.get((request.episode, request.start - span), 0.0))
                self._last_score[(request.episode, request.start)] = float(score)
        if self.aux_reward is not None:
            starts = [request.clip_id - request.start for request in requests]
            indices, values = aux_reward_updates(requests, scores, starts, previous, self.aux_reward)
            if len(indices):
                self.buffer.set_aux_reward(indices, values, self.scorer_id)

    def submit_new_clips(self) -> int:
        """Queue the clips of episodes committed since the last call; returns how many."""
        requests = [ClipRequest.from_ref(ref) for ref in self.buffer.new_clips()]
        if requests:
            self.worker.submit(requests)
            if self.sync:
                self.worker.drain(timeout_s=600.0)
        return len(requests)

    def score_stats(self) -> dict[str, float]:
        """Clip-score statistics so far (mean, quartiles, count) plus the worker's backlog counters."""
        with self._lock:
            scores = np.asarray(self._scores, np.float64)
        metrics = self.worker.metrics()
        stats = {
            "scored": float(scores.size),
            "backlog": metrics["backlog"],
            "dropped": metrics["dropped"],
            "failures": metrics["failures"],
        }
        if scores.size:
            recent = scores[-256:]
            stats.update(
                score_mean=float(recent.mean()),
                score_p10=float(np.percentile(recent, 10)),
                score_p90=float(np.percentile(recent, 90)),
            )
        return stats

    def close(self, drain_timeout_s: float = 30.0) -> None:
        """Let the worker finish what is queued (up to the timeout), then stop it and close the scorer."""
        self.worker.drain(drain_timeout_s)
        self.worker.close()
        self.scorer.close()
