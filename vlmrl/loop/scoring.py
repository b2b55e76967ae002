"""The one path from clip scores to the replay buffer, for `vlmrl train`, `vlmrl finetune` and `vlmrl score`.

New clips of committed episodes go to the asynchronous ``ScoringWorker``; its scores come back (on the
worker thread) into the buffer as clip scores (priorities) and, when an auxiliary reward is configured,
as per-transition aux rewards (``write_aux_rewards``). Nothing here blocks the training loop unless
``sync`` is set (then each submit waits for its scores, which makes runs exactly reproducible) or
``wait_s`` is (each submit waits up to that long).

The aux reward has one weight: the pipeline's ``aux_reward_weight``, which the buffer applies when it
draws a batch (``BufferConfig.aux_reward_weight``). The stored ``aux_reward/<scorer id>`` column holds
``vlm.aux_rewards`` of the ``AuxRewardConfig`` as given (``aux_reward_for``), whose own ``weight`` new
runs keep at 1 (`vlmrl train` refuses another), so train and finetune add ``weight x aux`` to the reward.
Score calibration is the scorer's business (``vlm.apply_calibration`` wraps it), so calibrated scores
take this path like any other.
"""

from __future__ import annotations

import dataclasses
import threading
from collections.abc import Sequence
from typing import Any

import numpy as np

from buffer import BufferError, ReplayBuffer
from vlm import AuxRewardConfig, Clip, ClipRequest, Scorer, ScoringWorker, WorkerConfig
from vlm.aux_reward import aux_rewards


def aux_reward_for(aux_reward: AuxRewardConfig, weight: float, gamma: float) -> AuxRewardConfig | None:
    """The aux-reward config a ``ScoringLink`` writes with: None when ``weight`` (the pipeline's one
    aux-reward weight) is 0, else ``aux_reward`` with the buffer's discount (shaping must use the
    discount the learner bootstraps with)."""
    if weight <= 0:
        return None
    return dataclasses.replace(aux_reward, gamma=gamma)


def write_aux_rewards(
    buffer: ReplayBuffer,
    episode: int,
    last_steps: np.ndarray,
    scores: np.ndarray,
    aux_reward: AuxRewardConfig,
    scorer_id: str,
) -> np.ndarray:
    """Recompute one episode's aux rewards from all its clip scores so far (``vlm.aux_rewards``: they depend
    on neighbouring scores) and store them as ``aux_reward/<scorer_id>``; returns them (float32 [n steps]).

    Raises:
        BufferError: the episode is no longer in the buffer.
    """
    start_row, end_row = buffer.episode_rows(episode)
    n_steps = end_row - start_row - 1
    terminated = bool(buffer.storage.read("terminated", np.array([end_row - 2]))[0])
    rewards = aux_rewards(aux_reward, n_steps, np.minimum(last_steps, n_steps), scores, terminated)
    buffer.set_aux_reward(start_row + np.arange(n_steps, dtype=np.int64), rewards, scorer_id)
    return rewards


class ScoringLink:
    """Feeds the buffer's new clips to a scoring worker and writes the scores back.

    Args:
        buffer: the replay buffer (its clip camera decides which frames are scored).
        scorer: any ``vlm.Scorer``; closed by ``close()``.
        prompt: the question asked about every clip.
        worker_cfg: batching/backlog/retry settings of the worker.
        aux_reward: how scores become aux rewards (``aux_reward_for``); None stores scores only.
        sync: wait for each submitted batch of clips to be scored (deterministic, slower).
        wait_s: otherwise wait up to this long after each submit for its scores (0: not at all).
    """

    def __init__(
        self,
        buffer: ReplayBuffer,
        scorer: Scorer,
        prompt: str,
        worker_cfg: WorkerConfig,
        aux_reward: AuxRewardConfig | None,
        sync: bool = False,
        wait_s: float = 0.0,
    ) -> None:
        self.buffer = buffer
        self.scorer = scorer
        self.scorer_id = scorer.scorer_id
        self.aux_reward = aux_reward
        self.sync = sync
        self.wait_s = 600.0 if sync else wait_s
        self._lock = threading.Lock()
        self._scores: list[float] = []
        self._episode_scores: dict[int, dict[int, float]] = {}  # episode -> {clip last step: score}
        self.worker = ScoringWorker(scorer, prompt, self._load, self._on_scored, worker_cfg)

    def _load(self, request: ClipRequest) -> Clip:
        frames, info = self.buffer.read_clip(request)  # type: ignore[arg-type]
        return Clip(frames, info)

    def _on_scored(self, requests: Sequence[ClipRequest], scores: np.ndarray) -> None:
        scores = np.clip(np.asarray(scores, np.float32), 0.0, 1.0)
        self.buffer.set_scores([r.clip_id for r in requests], scores, self.scorer_id)
        with self._lock:
            self._scores.extend(float(s) for s in scores)
            for request, score in zip(requests, scores):
                self._episode_scores.setdefault(request.episode, {})[request.last_step] = float(score)
        if self.aux_reward is not None:
            for episode in sorted({r.episode for r in requests}):
                self._write_aux_rewards(episode)

    def _write_aux_rewards(self, episode: int) -> None:
        """Recompute one episode's aux rewards from all its clip scores so far (they depend on neighbours)."""
        assert self.aux_reward is not None
        with self._lock:
            by_step = dict(self._episode_scores.get(episode, {}))
        try:
            write_aux_rewards(
                self.buffer,
                episode,
                np.array(list(by_step), np.int64),
                np.array(list(by_step.values())),
                self.aux_reward,
                self.scorer_id,
            )
        except BufferError:  # evicted meanwhile: nothing to reward
            return

    def submit_new_clips(self) -> int:
        """Queue the clips of episodes committed since the last call; returns how many."""
        requests = [ClipRequest.from_ref(ref) for ref in self.buffer.new_clips()]
        if requests:
            self.worker.submit(requests)
            if self.wait_s > 0:
                self.worker.drain(timeout_s=self.wait_s)
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

    def state_dict(self) -> dict[str, Any]:
        """Scores received so far (for statistics and aux-reward recomputation); clips still queued are
        not included (a resumed run does not rescore them)."""
        with self._lock:
            return {
                "scores": list(self._scores),
                "episode_scores": {e: dict(s) for e, s in self._episode_scores.items()},
            }

    def load_state_dict(self, state: dict[str, Any]) -> None:
        """Restore ``state_dict()``."""
        with self._lock:
            self._scores = list(state["scores"])
            self._episode_scores = {int(e): dict(s) for e, s in state["episode_scores"].items()}

    def close(self, drain_timeout_s: float = 30.0) -> None:
        """Let the worker finish what is queued (up to the timeout), then stop it and close the scorer."""
        self.worker.drain(drain_timeout_s)
        self.worker.close()
        self.scorer.close()
