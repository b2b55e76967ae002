"""Every submitted clip is accounted for (issue #36, item 7: "clips dropped on retry overflow not counted"
survived tests/vlm/test_worker.py): submitted = scored + dropped + failed to load, also when a failed batch
goes back into a backlog that filled up while it was in flight."""

from __future__ import annotations

import threading
import time

from tests.vlm.test_worker import FAST, Flaky, Recorder, _load, _requests
from vlm import ScoringWorker, WorkerConfig


def test_a_failed_batch_returning_to_a_full_backlog_counts_the_clips_it_pushes_out() -> None:
    gate = threading.Event()

    class FailsOnceWhenReleased(Flaky):
        """The first call waits for the gate and fails; later calls score like the oracle."""

        def score(self, clips, prompt):
            if self.calls == 0:
                gate.wait(30)
            return super().score(clips, prompt)

    rec = Recorder()
    cfg = WorkerConfig(batch_size=2, max_backlog=4, **FAST)
    worker = ScoringWorker(FailsOnceWhenReleased(n_failures=1), "q", _load, rec, cfg)
    try:
        worker.submit(_requests(2))  # clips 0 and 1 go into flight; the scorer waits
        deadline = time.monotonic() + 30
        while worker.metrics()["in_flight"] < 2:
            assert time.monotonic() < deadline
            time.sleep(0.001)
        assert worker.submit(_requests(4, start_id=100)) == 0  # the backlog is full, nothing dropped yet
        gate.set()  # the batch fails and returns in front of the 4 queued clips: 2 too many
        assert worker.drain(30)
        metrics = worker.metrics()
    finally:
        worker.close()
    assert sorted(rec.ids) == [100, 101, 102, 103]  # the oldest (the retried batch) went first
    assert metrics["failures"] == 1 and metrics["dropped"] == 2
    assert metrics["submitted"] == metrics["scored"] + metrics["dropped"] + metrics["load_failures"] == 6
