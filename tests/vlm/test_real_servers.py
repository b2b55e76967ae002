"""The openai client against `vlmrl serve` set to act as vLLM does (one image per prompt, a top_logprobs
cap, -inf / -9999.0 for probability zero), and the server's own HTTP manners (issue 15, item 7)."""

import base64
import io
import socket
import time

import httpx
import numpy as np
import pytest
import torch

from vlm import VLMError, make_scorer
from vlm.backends.learned import build_net, save_learned
from vlm.backends.openai_compat import tiled_prompt
from vlm.config import OpenAIConfig
from vlm.images import encode_data_url
from vlm.prompts import prompt_hash

PROMPT = "Did the robot lift the cube? Answer yes or no."
TILED = tiled_prompt(PROMPT, 3)


def certain_no(path, prompt):
    """A learned scorer whose answer is 'no' with probability 1 (its last bias is -1000)."""
    net = build_net(4, 4)
    with torch.no_grad():
        net[-1].bias.fill_(-1000.0)
    meta = dict(
        camera="front",
        image_hw=[16, 16],
        num_frames=4,
        width=4,
        prompt=prompt,
        prompt_hash=prompt_hash(prompt),
        labels="test",
    )
    save_learned(path, net, meta)
    return str(path)


@pytest.fixture(scope="module")
def vllm_like(server_process, tmp_path_factory):
    """One image per prompt, top_logprobs capped at 5, -Infinity for probability zero."""
    server_cls, free_port = server_process
    tmp = tmp_path_factory.mktemp("vllm-like")
    path = certain_no(tmp / "no.pt", TILED)
    port = free_port()
    argv = [
        "-m",
        "vlmrl",
        "serve",
        "--server.port",
        str(port),
        "--run-dir",
        str(tmp / "serve"),
        "--server.max-images",
        "1",
        "--server.max-top-logprobs",
        "5",
        "--server.zero-logprob",
        "-inf",
        "scorer:learned",
        "--scorer.path",
        path,
        "--scorer.resize",
    ]
    server = server_cls(argv, port, tmp)
    yield server
    server.stop()


def _clips(n=2, length=3):
    rng = np.random.default_rng(0)
    return [rng.integers(0, 256, (length, 16, 16, 3), dtype=np.uint8) for _ in range(n)]


def test_client_meets_a_vllm_like_server(vllm_like):
    frames = OpenAIConfig(base_url=vllm_like.url, num_frames=3, max_retries=0, image_format="png")
    with pytest.raises(
        VLMError, match=r"at most 1 image\(s\) per prompt.*--scorer.frames-as tiled.*--limit-mm-per-prompt"
    ) as err:
        make_scorer(frames).score(_clips(1), PROMPT)
    assert "\n" not in str(err.value)
    tiled = make_scorer(
        OpenAIConfig(base_url=vllm_like.url, num_frames=3, frames_as="tiled", top_logprobs=20)
    )
    scores = tiled.score(_clips(2), PROMPT)
    # P(yes) = 0 sent as -Infinity: a certain "no", not NaN; the cap of 5 was read from the 400 and kept.
    np.testing.assert_array_equal(scores, [0.0, 0.0])
    assert tiled._top_logprobs == 5
    health = httpx.get(f"http://127.0.0.1:{vllm_like.port}/health").json()
    assert health["clips_scored"] == 2  # one tiled image per clip
    tiled.close()


def _chat_body(url, top=5):
    parts = [{"type": "image_url", "image_url": {"url": url}}, {"type": "text", "text": TILED}]
    return {"messages": [{"role": "user", "content": parts}], "logprobs": True, "top_logprobs": top}


def test_top_logprobs_lists_as_many_as_asked_and_usage_counts_the_prompt(vllm_like):
    url = encode_data_url(np.zeros((16, 48, 3), np.uint8), "png")
    reply = httpx.post(f"{vllm_like.url}/chat/completions", json=_chat_body(url, top=5))
    assert reply.status_code == 200, reply.text
    data = reply.json()  # Python's json reads -Infinity
    top = data["choices"][0]["logprobs"]["content"][0]["top_logprobs"]
    assert len(top) == 5 and top[0]["token"] == "no" and top[0]["logprob"] == 0.0
    assert all(a["logprob"] == float("-inf") for a in top[1:])
    assert data["usage"]["prompt_tokens"] == len(TILED.split()) + 1
    assert data["usage"]["total_tokens"] == data["usage"]["prompt_tokens"] + 1
    over = httpx.post(f"{vllm_like.url}/chat/completions", json=_chat_body(url, top=6))
    assert over.status_code == 400 and "max allowed: 5" in over.json()["error"]["message"]


def test_gif_and_non_json_bodies_are_refused(vllm_like):
    from PIL import Image

    buf = io.BytesIO()
    Image.new("RGB", (16, 16)).save(buf, format="GIF")
    gif = "data:image/png;base64," + base64.b64encode(buf.getvalue()).decode()  # lying header too
    reply = httpx.post(f"{vllm_like.url}/chat/completions", json=_chat_body(gif))
    assert (
        reply.status_code == 400 and "GIF image; send PNG, JPEG or WebP" in reply.json()["error"]["message"]
    )
    import json

    body = json.dumps(_chat_body(encode_data_url(np.zeros((16, 48, 3), np.uint8), "png")))
    plain = httpx.post(
        f"{vllm_like.url}/chat/completions", content=body, headers={"Content-Type": "text/plain"}
    )
    assert plain.status_code == 415 and "application/json" in plain.json()["error"]["message"]


def test_client_disconnecting_mid_upload_leaves_no_traceback(vllm_like):
    with socket.create_connection(("127.0.0.1", vllm_like.port)) as sock:
        sock.sendall(
            b"POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
            b"Content-Length: 100000\r\n\r\n" + b'{"messages": [' + b" " * 5000
        )
        time.sleep(0.5)
    time.sleep(0.5)
    assert httpx.get(f"http://127.0.0.1:{vllm_like.port}/health").status_code == 200
    vllm_like.log.flush()
    with open(vllm_like.log.name, encoding="utf-8", errors="replace") as f:
        log = f.read()
    assert "Traceback" not in log and "Exception in ASGI application" not in log


def test_minus_9999_counts_as_zero(start_server, tmp_path):
    path = certain_no(tmp_path / "no.pt", PROMPT)
    server = start_server(
        [
            "-m",
            "vlmrl",
            "serve",
            "--server.port",
            "{port}",
            "--run-dir",
            str(tmp_path / "serve"),
            "--server.zero-logprob",
            "-9999",
            "scorer:learned",
            "--scorer.path",
            path,
        ]
    )
    client = make_scorer(OpenAIConfig(base_url=server.url, num_frames=3, image_format="png", top_logprobs=4))
    np.testing.assert_array_equal(client.score(_clips(2), PROMPT), [0.0, 0.0])
    client.close()
