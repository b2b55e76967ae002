"""Micro-batching of concurrent score requests onto one scorer (the server's model is one resource)."""

from __future__ import annotations

import queue
import threading
from concurrent.futures import Future

import numpy as np

from vlm.clip import Clip
from vlm.scorer import Scorer


class MicroBatcher:
    """Collects (clips, prompt) requests from many threads and scores them together.

    After the first queued request, waits up to ``wait_s`` for more with the same prompt, up to
    ``max_batch`` clips per scorer call. If a combined call fails, each request is retried alone so one
    bad request cannot fail its neighbours.
    """

    def __init__(self, scorer: Scorer, max_batch: int, wait_s: float) -> None:
        self.scorer = scorer
        self.max_batch = max(1, max_batch)
        self.wait_s = wait_s
        self._queue: queue.Queue[tuple[list[Clip], str, Future[np.ndarray]] | None] = queue.Queue()
        self.calls = 0
        """Scorer calls made so far."""
        self.clips = 0
        """Clips scored so far."""
        self._thread = threading.Thread(target=self._run, name="vlm-micro-batcher", daemon=True)
        self._thread.start()

    def submit(self, clips: list[Clip], prompt: str) -> Future[np.ndarray]:
        """Queues clips; the future resolves to their float32 scores or the scorer's exception."""
        future: Future[np.ndarray] = Future()
        self._queue.put((clips, prompt, future))
        return future

    def close(self) -> None:
        """Stops the thread after the batch in flight."""
        self._queue.put(None)
        self._thread.join(10)

    def _run(self) -> None:
        pending: list[tuple[list[Clip], str, Future[np.ndarray]] | None] = []
        while True:
            item = pending.pop(0) if pending else self._queue.get()
            if item is None:
                return
            group, size = [item], len(item[0])
            while size < self.max_batch:
                try:
                    nxt = self._queue.get(timeout=self.wait_s)
                except queue.Empty:
                    break
                if nxt is None:
                    pending.append(nxt)
                    break
                if nxt[1] != item[1] or size + len(nxt[0]) > self.max_batch:
                    pending.append(nxt)
                    break
                group.append(nxt)
                size += len(nxt[0])
            self._score(group)

    def _score(self, group: list[tuple[list[Clip], str, Future[np.ndarray]]]) -> None:
        clips = [clip for request, _, _ in group for clip in request]
        self.calls += 1
        try:
            scores = np.asarray(self.scorer.score(clips, group[0][1]), np.float32)
        except Exception as exc:
            if len(group) == 1:
                group[0][2].set_exception(exc)
                return
            for single in group:
                self._score([single])
            return
        self.clips += len(clips)
        start = 0
        for request, _, future in group:
            future.set_result(scores[start : start + len(request)])
            start += len(request)
