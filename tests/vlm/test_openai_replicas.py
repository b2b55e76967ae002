"""`scorer:openai` over several replicas (``replica_urls``): spread, one killed mid-run, all down, recovery."""

from __future__ import annotations

import threading
from pathlib import Path

import numpy as np
import pytest

from vlm import OpenAIConfig, VLMError, make_scorer
from vlm.backends.replicas import Replicas

PROMPT = "Did the robot lift the cube? Answer yes or no."


@pytest.mark.slow
def test_requests_spread_over_two_servers_and_survive_one_killed_mid_run(
    start_server, oracle_argv, clip_factory
):
    argv = oracle_argv("--scorer.latency-s", "0.1")
    argv.insert(argv.index("scorer:oracle"), "--log-level=info")  # uvicorn's access log: who got what
    servers = [start_server(argv) for _ in range(2)]
    cfg = OpenAIConfig(
        base_url=servers[0].url,
        replica_urls=(servers[1].url,),
        endpoint="score",
        backoff_s=0.01,
        replica_retry_s=60.0,
    )
    scorer = make_scorer(cfg)
    clips = clip_factory(n=4, length=3)
    expected = [c.info["progress"][-1] for c in clips]
    try:
        for _ in range(4):  # one /v1/score request per call, in turn
            np.testing.assert_allclose(scorer.score(clips, PROMPT), expected, rtol=1e-6)
        assert [Path(s.log.name).read_text().count("POST /v1/score") for s in servers] == [2, 2]
        killer = threading.Timer(0.05, servers[0].kill)  # during the next call, which goes to it
        killer.start()
        for _ in range(4):
            np.testing.assert_allclose(scorer.score(clips, PROMPT), expected, rtol=1e-6)
        killer.join()
        down = scorer._replicas.replicas[0]
        assert down.down_until and "connection failed" in down.problem
        servers[1].kill()
        with pytest.raises(
            VLMError, match=r"^all 2 VLM replicas are down \(http://127\.0\.0\.1:\d+/v1: connection"
        ):
            scorer.score(clips, PROMPT)
    finally:
        scorer.close()


class FakeClient:
    def close(self) -> None:
        pass


def test_a_down_replica_is_health_checked_after_retry_s_and_rejoins(monkeypatch) -> None:
    now = [100.0]
    monkeypatch.setattr("vlm.backends.replicas.time.monotonic", lambda: now[0])
    health = {"a": False, "b": True}
    replicas = Replicas(["a", "b"], lambda url: FakeClient(), lambda r: health[r.url], retry_s=10.0)
    a, b = replicas.replicas
    replicas.mark_down(a, "connection failed (ConnectError)")
    assert [replicas.pick().url for _ in range(3)] == ["b", "b", "b"]
    now[0] += 10.0  # due: checked once, still failing, so down for another retry_s
    assert replicas.pick() is b and a.down_until == 110.0 + 10.0
    health["a"] = True
    now[0] += 10.0
    assert replicas.pick() is a and not a.down_until
    assert {replicas.pick().url for _ in range(2)} == {"a", "b"}
    replicas.mark_down(a, "HTTP 503")
    replicas.mark_down(b, "HTTP 503")
    with pytest.raises(VLMError, match="all 2 VLM replicas are down"):
        replicas.pick()


def test_one_server_is_never_marked_down() -> None:
    replicas = Replicas(["a"], lambda url: FakeClient(), lambda r: False, retry_s=10.0)
    replicas.mark_down(replicas.replicas[0], "HTTP 503")
    assert replicas.pick().url == "a"
