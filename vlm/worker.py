"""The asynchronous scoring worker: new clips in, scores out through a callback, training never waits.

One background thread takes clips from a bounded backlog, loads their frames, scores them in batches and
hands the scores to ``on_scored`` (which writes them into the replay buffer). When the backlog is full the
oldest unscored clip is dropped and counted (new clips are closer to what the policy does now). Backend
failures put the batch back, back off with jitter, and after ``breaker_failures`` consecutive failures
open a circuit breaker that sends one trial batch per cooldown until the backend answers again; then
the backlog drains.
"""

from __future__ import annotations

import logging
import random
import threading
import time
from collections import deque
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from vlm.clip import Clip
from vlm.config import WorkerConfig
from vlm.errors import VLMError
from vlm.prompts import prompt_hash
from vlm.scorer import Scorer

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class ClipRequest:
    """Where a clip lives in the replay buffer: ``length`` frames of ``camera`` in ``episode`` from
    step ``start``, every ``stride`` steps."""

    clip_id: int
    episode: int
    start: int
    length: int
    stride: int = 1
    camera: str = "front"

    @property
    def last_step(self) -> int:
        """Episode step of the clip's last frame (the state a score judges)."""
        return self.start + (self.length - 1) * self.stride

    @classmethod
    def from_ref(cls, ref: Any) -> ClipRequest:
        """Copies any object with the same attribute names (e.g. the buffer's ``ClipRef``)."""
        return cls(
            clip_id=int(ref.clip_id),
            episode=int(ref.episode),
            start=int(ref.start),
            length=int(ref.length),
            stride=int(ref.stride),
            camera=str(ref.camera),
        )


class ScoringWorker:
    """Scores submitted clips on a background thread (see the module docstring for the policies).

    Args:
        scorer: any ``Scorer``; the worker does not close it.
        prompt: the yes/no question asked about every clip.
        load_clip: reads a request's frames (and info) from storage; runs on the worker thread. An
            exception drops that clip (counted as ``load_failures``).
        on_scored: receives each scored batch and its float32 scores, on the worker thread. An exception
            is logged and counted (``callback_failures``); the batch is not rescored.
        cfg: batching, backlog and retry settings.
    """

    def __init__(
        self,
        scorer: Scorer,
        prompt: str,
        load_clip: Callable[[ClipRequest], Clip],
        on_scored: Callable[[Sequence[ClipRequest], np.ndarray], None],
        cfg: WorkerConfig | None = None,
    ) -> None:
        self.cfg = cfg = cfg or WorkerConfig()
        if cfg.batch_size < 1 or cfg.max_backlog < 1 or cfg.breaker_failures < 1:
            raise VLMError("worker batch_size, max_backlog and breaker_failures must all be >= 1")
        self.scorer = scorer
        self.prompt = prompt
        self.prompt_hash = prompt_hash(prompt)
        self.scorer_id = scorer.scorer_id
        self._load_clip = load_clip
        self._on_scored = on_scored
        self._backlog: deque[tuple[ClipRequest, float]] = deque()
        self._cond = threading.Condition()
        self._closed = False
        self._draining = 0  # callers inside drain()
        self._in_flight = 0
        self._counts = dict.fromkeys(
            ("submitted", "scored", "dropped", "failures", "load_failures", "callback_failures"), 0
        )
        self._consecutive_failures = 0
        self._batch_latency_s: deque[float] = deque(maxlen=cfg.latency_window)
        self._clip_latency_s: deque[float] = deque(maxlen=cfg.latency_window)
        self._busy_s = 0.0
        self._started_at = time.monotonic()
        self._last_error = ""
        self._thread = threading.Thread(target=self._run, name="vlm-scoring-worker", daemon=True)
        self._thread.start()

    # -- producer side (training thread) ---------------------------------------------------------------

    def submit(self, requests: Iterable[ClipRequest]) -> int:
        """Queues clips for scoring without blocking; returns how many old clips were dropped to fit."""
        now = time.monotonic()
        dropped = 0
        with self._cond:
            if self._closed:
                raise VLMError("the scoring worker is closed; create a new one to score more clips")
            for request in requests:
                self._backlog.append((request, now))
                self._counts["submitted"] += 1
            while len(self._backlog) > self.cfg.max_backlog:
                self._backlog.popleft()
                dropped += 1
            self._counts["dropped"] += dropped
            self._cond.notify_all()
        return dropped

    def metrics(self) -> dict[str, float]:
        """Counters, backlog, throughput and latency percentiles (milliseconds), as plain floats."""
        with self._cond:
            out: dict[str, float] = {k: float(v) for k, v in self._counts.items()}
            out["backlog"] = float(len(self._backlog))
            out["in_flight"] = float(self._in_flight)
            out["consecutive_failures"] = float(self._consecutive_failures)
            out["breaker_open"] = float(self._consecutive_failures >= self.cfg.breaker_failures)
            batch_lat = np.array(self._batch_latency_s)
            clip_lat = np.array(self._clip_latency_s)
            busy_s = self._busy_s
        elapsed_s = max(time.monotonic() - self._started_at, 1e-9)
        out["clips_per_s"] = out["scored"] / elapsed_s
        out["busy_fraction"] = min(busy_s / elapsed_s, 1.0)
        for name, lat in (("batch_latency_ms", batch_lat), ("clip_latency_ms", clip_lat)):
            for q in (50, 90, 99):
                out[f"{name}_p{q}"] = float(np.percentile(lat, q) * 1e3) if lat.size else float("nan")
        return out

    @property
    def last_error(self) -> str:
        """The most recent scoring failure, one line (empty if none)."""
        return self._last_error

    def drain(self, timeout_s: float) -> bool:
        """Waits until every submitted clip is scored, dropped or failed to load; False on timeout.
        Meanwhile batches go out as they are, without waiting ``batch_wait_s`` for more clips."""
        deadline = time.monotonic() + timeout_s
        with self._cond:
            self._draining += 1  # nobody waits for a fuller batch while someone waits for the scores
            self._cond.notify_all()
            try:
                while self._backlog or self._in_flight:
                    remaining = deadline - time.monotonic()
                    if remaining <= 0 or not self._thread.is_alive():
                        return False
                    self._cond.wait(remaining)
            finally:
                self._draining -= 1
        return True

    def close(self, timeout_s: float = 30.0) -> None:
        """Stops the thread after the batch in flight; clips still queued stay unscored (drain first)."""
        with self._cond:
            self._closed = True
            self._cond.notify_all()
        self._thread.join(timeout_s)

    def __enter__(self) -> ScoringWorker:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- worker thread ---------------------------------------------------------------------------------

    def _next_batch(self) -> list[tuple[ClipRequest, float]] | None:
        with self._cond:
            while not self._backlog and not self._closed:
                self._cond.wait()
            if self._closed:
                return None
            deadline = time.monotonic() + self.cfg.batch_wait_s
            while len(self._backlog) < self.cfg.batch_size and not self._closed and not self._draining:
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    break
                self._cond.wait(remaining)
            n = min(self.cfg.batch_size, len(self._backlog))
            batch = [self._backlog.popleft() for _ in range(n)]
            self._in_flight = n
            return batch

    def _run(self) -> None:
        while (batch := self._next_batch()) is not None:
            retry = self._score(batch)
            ok = not retry
            with self._cond:
                self._in_flight = 0
                if retry:
                    self._backlog.extendleft(reversed(retry))
                    overflow = len(self._backlog) - self.cfg.max_backlog
                    for _ in range(max(overflow, 0)):
                        self._backlog.popleft()
                    self._counts["dropped"] += max(overflow, 0)
                self._cond.notify_all()
                if not ok:
                    self._cond.wait_for(lambda: self._closed, self._retry_delay_s())

    def _retry_delay_s(self) -> float:
        n = self._consecutive_failures
        if n >= self.cfg.breaker_failures:
            return self.cfg.breaker_cooldown_s
        delay = min(self.cfg.max_backoff_s, self.cfg.backoff_s * 2 ** (n - 1))
        return delay * random.uniform(0.5, 1.5)

    def _score(self, batch: list[tuple[ClipRequest, float]]) -> list[tuple[ClipRequest, float]]:
        """Loads and scores one batch; returns what to retry (the loaded clips) if the backend failed."""
        loaded: list[tuple[ClipRequest, float]] = []
        clips: list[Clip] = []
        for request, submitted_at in batch:
            try:
                clips.append(self._load_clip(request))
                loaded.append((request, submitted_at))
            except Exception as exc:
                log.warning("could not load clip %s: %s", request, exc)
                with self._cond:
                    self._counts["load_failures"] += 1
        if not clips:
            return []
        t0 = time.monotonic()
        try:
            scores = np.asarray(self.scorer.score(clips, self.prompt), np.float32)
            if scores.shape != (len(clips),):
                raise VLMError(f"scorer returned shape {scores.shape} for {len(clips)} clips")
        except Exception as exc:
            with self._cond:
                self._counts["failures"] += 1
                self._consecutive_failures += 1
                self._last_error = f"{type(exc).__name__}: {exc}".splitlines()[0]
                n = self._consecutive_failures
            log.warning("scoring failed (%d in a row): %s", n, self._last_error)
            return loaded
        t1 = time.monotonic()
        requests = [r for r, _ in loaded]
        try:
            self._on_scored(requests, scores)
        except Exception as exc:
            log.warning("on_scored failed for %d clips: %s", len(requests), exc)
            with self._cond:
                self._counts["callback_failures"] += 1
        with self._cond:
            self._consecutive_failures = 0
            self._counts["scored"] += len(requests)
            self._busy_s += t1 - t0
            self._batch_latency_s.append(t1 - t0)
            self._clip_latency_s.extend(t1 - s for _, s in loaded)
        return []
