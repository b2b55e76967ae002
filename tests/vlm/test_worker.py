import threading
import time

import numpy as np
import pytest

from vlm import Clip, ClipRequest, OracleConfig, ScoringWorker, VLMError, WorkerConfig, make_scorer

FAST = dict(batch_wait_s=0.0, backoff_s=0.001, max_backoff_s=0.002, breaker_cooldown_s=0.01)


def _requests(n, start_id=0):
    return [ClipRequest(clip_id=start_id + i, episode=i // 4, start=i % 4, length=3) for i in range(n)]


def _load(request):
    # The oracle reads progress; encode the clip id in it so scores identify their clip.
    progress = np.full(request.length, request.clip_id / 1000.0, np.float32)
    return Clip(np.zeros((request.length, 4, 4, 3), np.uint8), {"progress": progress})


class Recorder:
    def __init__(self):
        self.ids, self.scores, self.lock = [], [], threading.Lock()

    def __call__(self, requests, scores):
        with self.lock:
            self.ids += [r.clip_id for r in requests]
            self.scores += list(scores)


class Flaky:
    """Fails the first `n_failures` calls, then scores like the oracle."""

    scorer_id = model_id = "flaky"

    def __init__(self, n_failures):
        self.n_failures, self.calls, self.inner = n_failures, 0, make_scorer(OracleConfig())

    def score(self, clips, prompt):
        self.calls += 1
        if self.calls <= self.n_failures:
            raise ConnectionError("backend down")
        return self.inner.score(clips, prompt)

    def close(self):
        pass


def test_worker_scores_every_clip_and_reports_metrics():
    rec = Recorder()
    with ScoringWorker(make_scorer(OracleConfig()), "q", _load, rec, WorkerConfig(batch_size=4, **FAST)) as w:
        assert w.submit(_requests(10)) == 0
        assert w.drain(30)
        m = w.metrics()
    assert sorted(rec.ids) == list(range(10))
    np.testing.assert_allclose(rec.scores, np.array(rec.ids) / 1000.0, rtol=1e-6)
    assert m["scored"] == 10 and m["submitted"] == 10 and m["backlog"] == 0 and m["failures"] == 0
    # The rates are reported (their values are measured in benchmarks/scoring.py, not asserted here).
    assert np.isfinite(m["clips_per_s"]) and np.isfinite(m["batch_latency_ms_p50"])
    assert w.scorer_id == "oracle" and len(w.prompt_hash) == 12


def test_full_backlog_drops_oldest_unscored_and_submit_never_blocks():
    gate = threading.Event()

    class Blocked(Flaky):
        def score(self, clips, prompt):
            gate.wait(30)
            return self.inner.score(clips, prompt)

    rec = Recorder()
    cfg = WorkerConfig(batch_size=2, max_backlog=5, **FAST)
    w = ScoringWorker(Blocked(0), "q", _load, rec, cfg)
    w.submit(_requests(2))  # taken into flight, scorer blocks on the gate
    deadline = time.monotonic() + 30
    while w.metrics()["in_flight"] < 2 and time.monotonic() < deadline:
        time.sleep(0.001)
    dropped = w.submit(_requests(8, start_id=100))  # returns although the scorer is stuck
    assert dropped == 3 and w.metrics()["backlog"] == 5
    gate.set()
    assert w.drain(30)
    w.close()
    assert sorted(rec.ids) == [0, 1, 103, 104, 105, 106, 107]
    assert w.metrics()["dropped"] == 3


def test_outage_opens_breaker_then_resumes_and_drains_backlog():
    rec = Recorder()
    flaky = Flaky(n_failures=6)
    cfg = WorkerConfig(batch_size=3, breaker_failures=3, **FAST)
    with ScoringWorker(flaky, "q", _load, rec, cfg) as w:
        w.submit(_requests(9))
        assert w.drain(30)
        m = w.metrics()
    assert sorted(rec.ids) == list(range(9))
    assert m["failures"] == 6 and m["consecutive_failures"] == 0 and m["breaker_open"] == 0
    assert "backend down" in w.last_error


def test_breaker_is_open_during_an_outage():
    rec = Recorder()
    cfg = WorkerConfig(batch_size=1, breaker_failures=2, backoff_s=0.001, breaker_cooldown_s=60)
    w = ScoringWorker(Flaky(n_failures=10**6), "q", _load, rec, cfg)
    w.submit(_requests(3))
    deadline = time.monotonic() + 30
    while not w.metrics()["breaker_open"] and time.monotonic() < deadline:
        time.sleep(0.01)
    assert not w.drain(0.2)
    m = w.metrics()
    w.close()
    assert m["breaker_open"] == 1 and m["failures"] == 2 and m["backlog"] == 3 and rec.ids == []


def test_load_and_callback_failures_are_counted_not_fatal():
    def load(request):
        if request.clip_id == 2:
            raise KeyError("episode not committed")
        return _load(request)

    calls = []

    def on_scored(requests, scores):
        calls.append(len(requests))
        raise RuntimeError("buffer closed")

    with ScoringWorker(
        make_scorer(OracleConfig()), "q", load, on_scored, WorkerConfig(batch_size=2, **FAST)
    ) as w:
        w.submit(_requests(4))
        assert w.drain(30)
        m = w.metrics()
    assert m["load_failures"] == 1 and m["scored"] == 3 and m["callback_failures"] == len(calls) >= 2
    with pytest.raises(VLMError, match="closed"):
        w.submit(_requests(1))


def test_clip_request_from_buffer_ref():
    class Ref:
        clip_id, episode, start, length, stride, camera = 7, 1, 4, 8, 2, "wrist"

    req = ClipRequest.from_ref(Ref())
    assert req == ClipRequest(clip_id=7, episode=1, start=4, length=8, stride=2, camera="wrist")
    assert req.last_step == 18


def test_drain_sends_a_partial_batch_without_waiting_for_more_clips():
    # batch_wait_s far beyond the drain timeout: drain can only succeed if the worker stops waiting
    # for a fuller batch once someone waits for the scores (sync scoring).
    rec = Recorder()
    cfg = WorkerConfig(batch_size=8, batch_wait_s=600.0, backoff_s=0.001)
    with ScoringWorker(make_scorer(OracleConfig()), "q", _load, rec, cfg) as w:
        w.submit(_requests(3))
        assert w.drain(60)
        assert sorted(rec.ids) == [0, 1, 2]
        w.submit(_requests(2, start_id=10))  # after a drain, partial batches wait again as configured
        time.sleep(0.2)
        assert w.metrics()["backlog"] == 2
        assert w.drain(60)
    assert sorted(rec.ids) == [0, 1, 2, 10, 11]
