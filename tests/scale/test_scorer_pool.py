"""A pool of Ray scorer actors behind the Scorer protocol (vlm/scorer_pool.py), and an actor killed mid-run."""

from __future__ import annotations

import os
import signal
import threading
import time
from concurrent.futures import ThreadPoolExecutor

import numpy as np
import pytest

from tests.vlm.conftest import save_random_learned
from vlm import (
    Clip,
    ClipRequest,
    OracleConfig,
    Scorer,
    ScoringWorker,
    VLMError,
    WorkerConfig,
    check_reachable,
    make_scorer,
)
from vlm.config import LearnedConfig, ScorerRayConfig

PROMPT = "Did the robot reach the target? Answer yes or no."


def clip(progress: float) -> Clip:
    return Clip(np.zeros((2, 8, 8, 3), np.uint8), {"progress": np.array([0.0, progress], np.float32)})


def test_pool_spreads_clips_over_its_actors_and_scores_like_the_backend(ray_address: str) -> None:
    pool = make_scorer(OracleConfig(ray=ScorerRayConfig(actors=2, cpus_per_actor=0.1, max_in_flight=1)))
    try:
        assert isinstance(pool, Scorer) and pool.scorer_id == "oracle"
        progress = np.linspace(0.0, 1.0, 5, dtype=np.float32)
        scores = pool.score([clip(p) for p in progress], PROMPT)
        assert scores.dtype == np.float32 and np.array_equal(scores, progress)
        # Calls from several threads, one request in flight per actor: all answered, each its own clips.
        with ThreadPoolExecutor(4) as threads:
            results = list(threads.map(lambda p: pool.score([clip(p), clip(1 - p)], PROMPT), progress))
        assert all(np.array_equal(r, np.float32([p, 1 - p])) for r, p in zip(results, progress))
        assert pool.score([], PROMPT).shape == (0,)
        assert len(set(pool.actor_pids())) == 2
        with pytest.raises(VLMError, match=r"^the oracle scorer needs clip info\['progress'\]"):
            pool.score([Clip(np.zeros((1, 8, 8, 3), np.uint8))], PROMPT)
    finally:
        pool.close()


@pytest.mark.slow
def test_the_backends_own_errors_come_through_the_pool(ray_address: str, tmp_path) -> None:
    fitted = save_random_learned(tmp_path / "fitted.pt", PROMPT, image_hw=(24, 32), camera="front")
    pool = make_scorer(LearnedConfig(path=str(fitted), ray=ScorerRayConfig(actors=1, cpus_per_actor=0.1)))
    try:  # the learned backend's frame check reaches through the pool (train calls it before scoring)
        pool.check_source("front", (24, 32))
        with pytest.raises(
            VLMError, match="was fitted on camera 'front' at 24x32 px, these frames are camera 'wrist'"
        ):
            pool.check_source("wrist", (24, 32))
    finally:
        pool.close()
    missing = tmp_path / "student.pt"
    cfg = LearnedConfig(path=str(missing), ray=ScorerRayConfig(actors=1, cpus_per_actor=0.1))
    check_reachable(cfg)  # not here: the file may be on the actors' machine only
    with pytest.raises(VLMError, match=f"scorer actors could not start: .*{missing}"):
        make_scorer(cfg)


@pytest.mark.slow
def test_a_killed_scorer_actor_sends_its_clips_to_the_backlog_and_is_restarted(ray_address: str) -> None:
    # Slow actors (1 s a call) so the kill lands while a batch is in flight.
    pool = make_scorer(OracleConfig(latency_s=1.0, ray=ScorerRayConfig(actors=2, cpus_per_actor=0.1)))
    progress = {i: (i % 10) / 10 for i in range(16)}
    scored: dict[int, float] = {}

    def on_scored(requests, scores) -> None:
        for request, score in zip(requests, scores):
            assert request.clip_id not in scored, "a clip was scored twice"
            scored[request.clip_id] = float(score)

    cfg = WorkerConfig(batch_size=8, batch_wait_s=0.0, backoff_s=0.05, max_backoff_s=0.2)
    worker = ScoringWorker(pool, PROMPT, lambda r: clip(progress[r.clip_id]), on_scored, cfg)
    try:
        victim = pool.actor_pids()[0]
        worker.submit(ClipRequest(clip_id=i, episode=i // 4, start=0, length=2) for i in progress)
        deadline = time.monotonic() + 30
        while worker.metrics()["in_flight"] == 0 and time.monotonic() < deadline:
            time.sleep(0.01)
        threading.Timer(0.2, os.kill, (victim, signal.SIGKILL)).start()  # mid-call
        assert worker.drain(timeout_s=60), worker.metrics()
        metrics = worker.metrics()
        assert scored == pytest.approx(progress)  # every clip scored once, none lost
        assert metrics["failures"] >= 1 and pool.restarts >= 1
        assert metrics["dropped"] == metrics["callback_failures"] == metrics["load_failures"] == 0
        pids = pool.actor_pids()
        assert victim not in pids and len(set(pids)) == 2
    finally:
        worker.close()
        pool.close()


def test_vlmrl_train_takes_the_pool_as_a_scorer_option() -> None:
    # The pool is a Scorer that make_scorer returns (tested above), so the verbs need only the option.
    import tyro

    from vlmrl.pipelines import train

    argv = ["scorer:oracle", "--scorer.ray.actors", "2", "--scorer.ray.gpus-per-actor", "0.5"]
    cfg = tyro.cli(train.Config, args=argv)
    assert cfg.scorer.ray == ScorerRayConfig(actors=2, gpus_per_actor=0.5)


def test_a_scorer_without_actors_does_not_import_ray() -> None:
    import subprocess
    import sys

    code = "import sys; from vlm import OracleConfig, make_scorer; make_scorer(OracleConfig()).close(); "
    code += "assert 'ray' not in sys.modules, 'ray imported'"
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr[-2000:]
