"""Every submitted clip is accounted for (issue #36, item 7: "clips dropped on retry overflow not counted"
survived tests/vlm/test_worker.py): submitted = scored + dropped + failed to load, also when a failed batch
goes back into a backlog that filled up while it was in flight."""

from __future__ import annotations

import random
import threading
import time

import numpy as np

from tests.vlm.test_worker import FAST, Flaky, Recorder, _load, _requests
from vlm import OracleConfig, ScoringWorker, WorkerConfig, make_scorer


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


class Timed:
    """Scores like the oracle after sleeping `sleep_s`; records each batch's size, prompt and dtype seen."""

    scorer_id = model_id = "timed"

    def __init__(self, fail_first: int = 0, sleep_s: float = 0.0, dtype=np.float64) -> None:
        self.fail_first, self.sleep_s, self.dtype = fail_first, sleep_s, dtype
        self.sizes: list[int] = []
        self.prompts: list[str] = []
        self.busy_s = 0.0
        self.inner = make_scorer(OracleConfig())

    def score(self, clips, prompt):
        t0 = time.monotonic()
        self.prompts.append(prompt)
        if len(self.prompts) <= self.fail_first:
            raise TimeoutError("backend slow")
        self.sizes.append(len(clips))
        time.sleep(self.sleep_s)
        out = np.asarray(self.inner.score(clips, prompt), self.dtype)
        self.busy_s += time.monotonic() - t0
        return out

    def close(self) -> None:
        pass


def wait_until(condition, timeout_s: float = 30.0) -> None:
    deadline = time.monotonic() + timeout_s
    while not condition():
        assert time.monotonic() < deadline, "the worker did not get there"
        time.sleep(0.002)


def test_metrics_are_consistent_with_what_the_scorer_and_the_clock_saw() -> None:
    scorer = Timed(sleep_s=0.02)
    seen: list[np.dtype] = []
    started = time.monotonic()
    worker = ScoringWorker(
        scorer, "is it done?", _load, lambda r, s: seen.append(s.dtype), WorkerConfig(batch_size=2, **FAST)
    )
    created = time.monotonic()
    worker.submit(_requests(6))
    assert worker.drain(30)
    before = time.monotonic()
    m = worker.metrics()
    after = time.monotonic()
    worker.close()
    assert scorer.prompts == ["is it done?"] * 3 and seen == [np.float32] * 3  # the prompt in, float32 out
    keys = {f"{name}_p{q}" for name in ("batch_latency_ms", "clip_latency_ms") for q in (50, 90, 99)}
    assert keys <= set(m) and {"busy_fraction", "clips_per_s"} <= set(m)
    # The worker's clock runs between its construction and the metrics call: rates lie within what an
    # outside clock allows, whatever the machine's load.
    assert m["scored"] / (after - started) <= m["clips_per_s"] <= m["scored"] / (before - created)
    assert scorer.busy_s / (after - started) <= m["busy_fraction"] <= 1.0
    assert 20.0 <= m["batch_latency_ms_p50"] <= m["batch_latency_ms_p90"] <= m["batch_latency_ms_p99"]
    assert m["batch_latency_ms_p50"] <= m["clip_latency_ms_p50"] <= m["clip_latency_ms_p99"]
    assert m["clip_latency_ms_p99"] <= 1e3 * (before - started)  # no clip waited longer than the test ran


def test_a_partial_batch_waits_for_more_clips_then_goes_without_a_drain() -> None:
    scorer = Timed()
    cfg = WorkerConfig(batch_size=4, batch_wait_s=0.9, backoff_s=0.001)
    with ScoringWorker(scorer, "q", _load, Recorder(), cfg) as worker:
        worker.submit(_requests(1))
        time.sleep(0.1)  # the worker is now waiting for more (a worker that did not wait sends a batch of 1)
        worker.submit(_requests(3, start_id=10))  # within the batch wait: one batch of four
        wait_until(lambda: worker.metrics()["scored"] == 4)
        worker.submit(_requests(2, start_id=20))  # never a fuller batch: it goes when the wait is over
        wait_until(lambda: worker.metrics()["scored"] == 6)
    assert scorer.sizes == [4, 2]


def test_drain_within_a_second_sees_the_backlog_scored() -> None:
    with ScoringWorker(Timed(), "q", _load, Recorder(), WorkerConfig(batch_size=2, **FAST)) as worker:
        worker.submit(_requests(5))
        assert worker.drain(0.5)
        assert worker.metrics()["scored"] == 5


def test_after_a_success_the_next_batch_goes_without_a_retry_delay() -> None:
    cfg = WorkerConfig(batch_size=2, batch_wait_s=0.0, backoff_s=60.0, max_backoff_s=60.0)
    with ScoringWorker(Timed(), "q", _load, Recorder(), cfg) as worker:
        worker.submit(_requests(6))
        assert worker.drain(20)  # three batches; a retry delay after a success would take a minute


def test_close_interrupts_a_retry_delay() -> None:
    cfg = WorkerConfig(batch_size=2, batch_wait_s=0.0, backoff_s=600.0, max_backoff_s=600.0)
    worker = ScoringWorker(Timed(fail_first=1), "q", _load, Recorder(), cfg)
    worker.submit(_requests(2))
    wait_until(lambda: worker.metrics()["failures"] == 1)
    worker.close(timeout_s=20)
    assert not worker._thread.is_alive()


def test_retry_delays_double_with_jitter_up_to_the_cap_then_the_breaker_cooldown() -> None:
    cfg = WorkerConfig(backoff_s=1.0, max_backoff_s=6.0, breaker_failures=5, breaker_cooldown_s=30.0)
    random.seed(0)  # the jitter's draws
    with ScoringWorker(Timed(), "q", _load, Recorder(), cfg) as worker:
        for failures, nominal in ((1, 1.0), (2, 2.0), (3, 4.0), (4, 6.0), (5, None)):
            worker._consecutive_failures = failures
            delays = np.array([worker._retry_delay_s() for _ in range(2000)])
            if nominal is None:
                assert np.all(delays == 30.0)
                continue
            assert np.all((0.5 * nominal <= delays) & (delays <= 1.5 * nominal)), failures
            assert delays.min() < 0.6 * nominal and delays.max() > 1.4 * nominal  # the whole +-50% is used
            assert abs(delays.mean() - nominal) < 0.05 * nominal


def test_drop_counts_add_up_over_several_overflows_and_retries() -> None:
    gate = threading.Event()
    scorer = Timed(fail_first=1)
    inner_score = scorer.score

    def score(clips, prompt):
        if not scorer.prompts:
            gate.wait(30)
        return inner_score(clips, prompt)

    scorer.score = score  # type: ignore[method-assign]
    cfg = WorkerConfig(batch_size=2, max_backlog=3, **FAST)
    with ScoringWorker(scorer, "q", _load, Recorder(), cfg) as worker:
        worker.submit(_requests(2))  # into flight; the scorer waits, then fails
        wait_until(lambda: worker.metrics()["in_flight"] == 2)
        assert worker.submit(_requests(4, start_id=100)) == 1  # 4 into a backlog of 3
        assert worker.submit(_requests(2, start_id=200)) == 2
        gate.set()  # the failed pair returns in front of a full backlog: 2 more dropped
        assert worker.drain(30)
        m = worker.metrics()
    assert m["dropped"] == 1 + 2 + 2 and m["scored"] == 3 and m["submitted"] == 8


def test_a_failure_that_does_not_overflow_drops_nothing_and_load_failures_add_up() -> None:
    def load(request):
        if request.clip_id % 2:
            raise KeyError(f"episode of clip {request.clip_id} evicted")
        return _load(request)

    with ScoringWorker(
        Timed(fail_first=1), "q", load, Recorder(), WorkerConfig(batch_size=4, **FAST)
    ) as worker:
        worker.submit(_requests(8))
        assert worker.drain(30)
        m = worker.metrics()
    assert m["dropped"] == 0 and m["load_failures"] == 4 and m["scored"] == 4 and m["failures"] == 1


def test_failures_are_logged_with_the_clip_and_the_error(caplog) -> None:
    def load(request):
        if request.clip_id == 1:
            raise KeyError("evicted")
        return _load(request)

    def on_scored(requests, scores):
        raise RuntimeError("buffer closed")

    cfg = WorkerConfig(batch_size=2, **FAST)
    with (
        caplog.at_level("WARNING", logger="vlm.worker"),
        ScoringWorker(Timed(1), "q", load, on_scored, cfg) as w,
    ):
        w.submit(_requests(2))
        assert w.drain(30)
        error = w.last_error
    messages = [record.getMessage() for record in caplog.records]
    assert error == "TimeoutError: backend slow"
    assert sum(m.startswith("could not load clip ClipRequest(clip_id=1,") for m in messages) == 1
    assert all(m.endswith(": 'evicted'") for m in messages if m.startswith("could not load"))
    assert "scoring failed (1 in a row): TimeoutError: backend slow" in messages
    assert "on_scored failed for 1 clips: buffer closed" in messages
