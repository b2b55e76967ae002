"""The openai backend against real `vlmrl serve` processes, and the server's handling of bad requests."""

import threading
import time
from pathlib import Path

import httpx
import numpy as np
import pytest

from vlm import ClipRequest, HFConfig, OpenAIConfig, ScoringWorker, VLMError, WorkerConfig, make_scorer
from vlm.images import encode_data_url

PROMPT = "Did the robot lift the cube? Answer yes or no."
pytestmark = pytest.mark.slow


def _client(server, **kw):
    return OpenAIConfig(base_url=server.url, api_key="sekret", num_frames=3, **kw)


def test_served_scores_match_the_local_model(hf_server, vlm_dirs, clips):
    local = make_scorer(HFConfig(model=vlm_dirs["idefics3"], num_frames=3)).score(clips, PROMPT)
    chat = make_scorer(_client(hf_server, image_format="png"))
    batch = make_scorer(_client(hf_server, image_format="png", endpoint="score"))
    assert chat.model_id == "hf-idefics3" and chat.scorer_id == "openai-hf-idefics3"
    np.testing.assert_allclose(chat.score(clips, PROMPT), local, atol=1e-5)
    np.testing.assert_allclose(batch.score(clips, PROMPT), local, atol=1e-5)
    jpeg = make_scorer(_client(hf_server, max_concurrency=2)).score(clips, PROMPT)
    assert jpeg.shape == (3,) and np.all((jpeg > 0) & (jpeg < 1))
    chat.close()
    batch.close()


def test_wrong_or_missing_key_is_refused(hf_server):
    with pytest.raises(VLMError, match="rejected the API key"):
        make_scorer(OpenAIConfig(base_url=hf_server.url, api_key="wrong"))
    reply = httpx.post(f"{hf_server.url}/chat/completions", json={})
    assert reply.status_code == 401 and reply.json()["error"]["type"] == "authentication_error"
    assert httpx.get(f"http://127.0.0.1:{hf_server.port}/health").json()["scorer_id"] == "hf-idefics3"


def _frame_url(side=16):
    return encode_data_url(np.zeros((side, side, 3), np.uint8), "png")


def _chat(parts, **extra):
    return {"messages": [{"role": "user", "content": parts}], "logprobs": True, "top_logprobs": 2, **extra}


TEXT = {"type": "text", "text": "Done? Answer yes or no."}

BAD_REQUESTS = [
    ("chat/completions", b"{not json", 400, "not valid JSON"),
    ("chat/completions", b"[1, 2]", 400, "JSON object"),
    ("chat/completions", {"messages": "hi"}, 400, "must be list"),
    ("chat/completions", {"messages": [{"role": "user", "content": "no images"}]}, 400, "no images"),
    ("chat/completions", _chat([TEXT]), 400, "no images"),
    (
        "chat/completions",
        _chat([{"type": "image_url", "image_url": {"url": "http://x/y.png"}}, TEXT]),
        400,
        "data URLs",
    ),
    (
        "chat/completions",
        _chat([{"type": "image_url", "image_url": {"url": "data:image/png;base64,@@@"}}, TEXT]),
        400,
        "base64",
    ),
    (
        "chat/completions",
        _chat([{"type": "image_url", "image_url": {"url": "data:image/png;base64,aGVsbG8="}}, TEXT]),
        400,
        "readable",
    ),
    ("chat/completions", _chat([{"type": "audio"}, TEXT]), 400, "unsupported content part"),
    (
        "chat/completions",
        _chat([{"type": "image_url", "image_url": {"url": "BIG"}}, TEXT]),
        400,
        "at most 2048 px",
    ),
    (
        "chat/completions",
        _chat([{"type": "image_url", "image_url": {"url": "OK"}}] * 7 + [TEXT]),
        413,
        "At most 6 image(s)",
    ),
    (
        "chat/completions",
        _chat([{"type": "image_url", "image_url": {"url": "OK"}}, TEXT], model="gpt-9"),
        404,
        "not served",
    ),
    (
        "chat/completions",
        _chat([{"type": "image_url", "image_url": {"url": "OK"}}, TEXT], stream=True),
        400,
        "streaming",
    ),
    (
        "chat/completions",
        _chat([{"type": "image_url", "image_url": {"url": "OK"}}, TEXT], top_logprobs=99),
        400,
        "max allowed: 20",
    ),
    ("chat/completions", b"x" * 2_000_001, 413, "limit"),
    ("score", {"clips": []}, 400, "needs 'prompt'"),
    ("score", {"prompt": "q", "clips": []}, 400, "empty"),
    ("score", {"prompt": "q", "clips": [{"frames": ["OK", "SMALL"]}]}, 400, "share one size"),
    (
        "score",
        {"prompt": "q", "clips": [{"frames": ["OK"], "info": {"progress": [1, 2]}}]},
        400,
        "one entry per frame",
    ),
    ("nope", {}, 404, "no route"),
]


@pytest.mark.parametrize(
    "path,body,status,reason", BAD_REQUESTS, ids=[f"{s}-{r}" for _, _, s, r in BAD_REQUESTS]
)
def test_malformed_requests_get_a_4xx_with_one_line(hf_server, path, body, status, reason):
    urls = {"OK": _frame_url(), "SMALL": _frame_url(8), "BIG": _frame_url(2100)}

    def fill(value):
        if isinstance(value, dict):
            return {k: fill(v) for k, v in value.items()}
        if isinstance(value, list):
            return [fill(v) for v in value]
        return urls.get(value, value) if isinstance(value, str) else value

    headers = {"Authorization": "Bearer sekret"}
    if isinstance(body, bytes):
        headers["Content-Type"] = "application/json"
        reply = httpx.post(f"{hf_server.url}/{path}", content=body, headers=headers)
    else:
        reply = httpx.post(f"{hf_server.url}/{path}", json=fill(body), headers=headers)
    assert reply.status_code == status, reply.text
    message = reply.json()["error"]["message"]
    assert reason in message and "\n" not in message


def test_concurrent_requests_share_micro_batches(hf_server, clip_factory):
    # Six threads at once; every answer must be the score of its own clip.
    scorer = make_scorer(_client(hf_server, image_format="png", max_concurrency=6))
    clips = clip_factory(n=6, seed=5)
    together = scorer.score(clips, PROMPT)
    alone = np.array([scorer.score([c], PROMPT)[0] for c in clips])
    np.testing.assert_allclose(together, alone, atol=1e-5)


def test_worker_survives_a_server_killed_mid_run_and_drains_after_restart(
    start_server, oracle_argv, clip_factory
):
    server = start_server(oracle_argv())
    cfg = OpenAIConfig(base_url=server.url, endpoint="score", max_retries=0, timeout_s=5)
    scorer = make_scorer(cfg)
    assert scorer.scorer_id == "openai-oracle"  # the oracle stays labelled through the server
    clips = dict(enumerate(clip_factory(n=12, seed=1)))
    received, lock = {}, threading.Lock()

    def on_scored(requests, scores):
        with lock:
            received.update({r.clip_id: float(s) for r, s in zip(requests, scores)})

    wcfg = WorkerConfig(
        batch_size=4, batch_wait_s=0, backoff_s=0.01, breaker_failures=2, breaker_cooldown_s=0.3
    )
    worker = ScoringWorker(scorer, PROMPT, lambda r: clips[r.clip_id], on_scored, wcfg)
    requests = [ClipRequest(clip_id=i, episode=0, start=i, length=5) for i in clips]
    worker.submit(requests[:4])
    assert worker.drain(30)
    server.kill()
    with pytest.raises(VLMError, match="connection failed"):
        scorer.score([clips[0]], PROMPT)
    worker.submit(requests[4:])
    deadline = time.monotonic() + 30
    while worker.metrics()["breaker_open"] == 0 and time.monotonic() < deadline:
        time.sleep(0.05)
    assert worker.metrics()["breaker_open"] == 1 and worker.metrics()["backlog"] > 0
    start_server(oracle_argv(), port=server.port)
    try:
        assert worker.drain(60), worker.metrics()
    finally:
        worker.close()
    assert sorted(received) == list(clips)
    np.testing.assert_allclose(
        [received[i] for i in clips], [c.info["progress"][-1] for c in clips.values()], rtol=1e-6
    )
    assert worker.metrics()["failures"] >= 2 and worker.metrics()["dropped"] == 0


def test_slow_server_times_out_with_a_clear_error(start_server, oracle_argv, clip_factory):
    server = start_server(oracle_argv("--scorer.latency-s", "1"))
    scorer = make_scorer(
        OpenAIConfig(base_url=server.url, endpoint="score", timeout_s=0.2, max_retries=1, backoff_s=0.01)
    )
    with pytest.raises(VLMError, match=r"failed after 2 attempts: no answer within 0\.2 s"):
        scorer.score(clip_factory(n=1), PROMPT)
    # The oracle cannot answer chat requests: they carry no privileged info.
    chat = make_scorer(OpenAIConfig(base_url=server.url, timeout_s=10))
    with pytest.raises(VLMError, match=r"HTTP 422\): the oracle scorer needs clip info"):
        chat.score(clip_factory(n=1), PROMPT)


@pytest.mark.parametrize(
    "mode,reason",
    [("garbage", "invalid JSON"), ("nologprobs", "no logprobs"), ("noyesno", "neither yes nor no")],
)
def test_misbehaving_servers_give_one_line_errors(start_server, clip_factory, mode, reason):
    server = start_server([Path(__file__).with_name("fake_openai_server.py"), "{port}", mode])
    scorer = make_scorer(OpenAIConfig(base_url=server.url, max_retries=0))
    assert scorer.model_id == "fake-vlm"
    with pytest.raises(VLMError, match=reason) as info:
        scorer.score(clip_factory(n=2), PROMPT)
    assert "\n" not in str(info.value)


def test_unreachable_server_fails_fast(start_server):
    with pytest.raises(VLMError, match=r"cannot reach the VLM server .* start it"):
        make_scorer(OpenAIConfig(base_url=f"http://127.0.0.1:{start_server.free_port()}/v1"))
