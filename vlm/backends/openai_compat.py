"""The ``openai`` backend: any OpenAI-compatible server (vLLM, SGLang, Ollama, `vlmrl serve`).

Chat mode sends one ``/v1/chat/completions`` request per clip (frames as base64 image parts, then the
prompt), asks for a single token with ``logprobs`` and ``top_logprobs``, and turns the yes/no
alternatives into P(yes)/(P(yes)+P(no)) exactly as the local backend does from logits. Score mode posts
batches to ``vlmrl serve``'s ``/v1/score``. Timeouts, dropped connections, 429 and 5xx are retried with
jittered exponential backoff; other 4xx fail at once with the server's message.

What real servers do, and how it is met: vLLM caps ``top_logprobs`` (``--max-logprobs``, 20 by default)
and says the cap in its 400; the request is sent again with that cap, which is kept. vLLM accepts one
image per prompt unless started with ``--limit-mm-per-prompt``: its 400 ("At most 1 image(s) ...")
becomes one line saying to send clips tiled (``frames_as="tiled"``: the frames side by side in one image)
or to raise the server's limit. Tokens of probability zero come as -9999.0 (vLLM) or -Infinity; they are
dropped before P(yes) is formed, so a certain answer scores 0 or 1 instead of NaN.

Several replicas of one model (``replica_urls``, one vLLM per GPU) share the requests in turn, with
health checks (``vlm/backends/replicas.py``): a retry after a failed request goes to the next replica up.
"""

from __future__ import annotations

import dataclasses
import json
import logging
import math
import os
import random
import re
import threading
import time
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import numpy as np

from vlm.answer_tokens import answer_side, yes_probability_from_logprobs
from vlm.backends.replicas import Replica, Replicas
from vlm.clip import Clip, as_clips
from vlm.config import OpenAIConfig
from vlm.errors import VLMError
from vlm.images import encode_data_url
from vlm.scorer import make_scorer_id

_SCORE_BATCH = 16  # clips per /v1/score request
_ZERO_LOGPROB = -9999.0  # vLLM's stand-in for -inf
_IMAGE_LIMIT = re.compile(r"at most (\d+) image", re.IGNORECASE)
_LOGPROB_CAP = re.compile(r"logprobs.*max allowed:?\s*(\d+)", re.IGNORECASE)
logger = logging.getLogger("vlm.openai")


class _Refused(VLMError):
    """A 4xx other than 401/403/429: the server's message, kept for the caller to explain."""

    def __init__(self, message: str, server_message: str) -> None:
        super().__init__(message)
        self.server_message = server_message


def tile_frames(frames: np.ndarray) -> np.ndarray:
    """uint8 [H, W * n, 3]: a clip's frames side by side, oldest on the left."""
    return np.ascontiguousarray(np.concatenate(list(frames), axis=1))


def tiled_prompt(prompt: str, n_frames: int) -> str:
    """The prompt sent with a tiled clip: it says how the frames are laid out."""
    return f"{prompt} (The image shows {n_frames} frames side by side, oldest on the left.)"


def finite_alternatives(alternatives: list[tuple[str, float]]) -> list[tuple[str, float]]:
    """The alternatives that carry probability: -inf, NaN and vLLM's -9999.0 (zero mass) dropped."""
    return [(t, lp) for t, lp in alternatives if math.isfinite(lp) and lp > _ZERO_LOGPROB]


def resolve_key(cfg: OpenAIConfig) -> str:
    """The configured key, else the environment variable named by ``cfg.api_key_env``."""
    return cfg.api_key or (os.environ.get(cfg.api_key_env, "") if cfg.api_key_env else "")


def _error_message(response: Any) -> str:
    try:
        error = response.json().get("error")
        message = error.get("message") if isinstance(error, dict) else error
    except (ValueError, AttributeError):
        message = None
    text = str(message or response.text or response.reason_phrase).strip()
    return text.splitlines()[0][:200] if text else ""


def _headers(cfg: OpenAIConfig) -> dict[str, str]:
    key = resolve_key(cfg)
    return {"Authorization": f"Bearer {key}"} if key else {}


def server_urls(cfg: OpenAIConfig) -> list[str]:
    """``base_url`` and the ``replica_urls`` after it."""
    return [cfg.base_url, *cfg.replica_urls]


def check_server(cfg: OpenAIConfig) -> list[str]:
    """Asks ``/models`` of the server (or of each replica until one answers); returns the served model
    names, or raises a one-line VLMError with a fix (naming every replica when none answers)."""
    urls = server_urls(cfg)
    if len(urls) == 1:
        return _check_url(cfg, cfg.base_url)
    problems = []
    for base_url in urls:
        try:
            return _check_url(cfg, base_url)
        except VLMError as exc:
            problems.append(str(exc))
    raise VLMError(f"none of the {len(urls)} VLM replicas answered: " + "; ".join(problems))


def _check_url(cfg: OpenAIConfig, base_url: str) -> list[str]:
    import httpx

    cfg = dataclasses.replace(cfg, base_url=base_url)  # the messages below name this server
    url = cfg.base_url.rstrip("/") + "/models"
    try:
        response = httpx.get(url, headers=_headers(cfg), timeout=min(cfg.timeout_s, 10.0))
    except httpx.TimeoutException:
        raise VLMError(
            f"the VLM server at {cfg.base_url} did not answer within {cfg.timeout_s:g} s"
        ) from None
    except httpx.HTTPError as exc:
        raise VLMError(
            f"cannot reach the VLM server at {cfg.base_url} ({type(exc).__name__}); start it (vlmrl serve, "
            "vllm serve, ollama serve) or fix --scorer.base-url"
        ) from None
    if response.status_code in (401, 403):
        raise VLMError(
            f"the VLM server at {cfg.base_url} rejected the API key (HTTP {response.status_code}); "
            f"set --scorer.api-key or ${cfg.api_key_env}"
        )
    if response.status_code == 404:
        raise VLMError(f"no /models under {cfg.base_url} (HTTP 404); the base URL must end in /v1")
    if response.status_code >= 400:
        raise VLMError(
            f"the VLM server answered HTTP {response.status_code} to GET {url}: {_error_message(response)}"
        )
    try:
        names = [str(m["id"]) for m in response.json()["data"]]
    except (ValueError, KeyError, TypeError):
        raise VLMError(
            f"GET {url} did not return an OpenAI model list; is it an OpenAI-compatible server?"
        ) from None
    if cfg.model and cfg.model not in names:
        raise VLMError(f"model {cfg.model!r} is not served at {cfg.base_url}; it serves {names}")
    if not names:
        raise VLMError(f"the VLM server at {cfg.base_url} serves no models")
    return names


class OpenAIScorer:
    """Scores clips through an OpenAI-compatible server (see the module docstring)."""

    def __init__(self, cfg: OpenAIConfig) -> None:
        import httpx

        if cfg.num_frames < 1 or cfg.max_concurrency < 1 or cfg.max_retries < 0:
            raise VLMError("openai num_frames and max_concurrency must be >= 1, max_retries >= 0")
        self.cfg = cfg
        self.model_id = cfg.model or check_server(cfg)[0]
        self.scorer_id = make_scorer_id("openai", self.model_id)
        self._httpx = httpx
        self._replicas = Replicas(server_urls(cfg), self._make_client, self._healthy, cfg.replica_retry_s)
        self._pool = ThreadPoolExecutor(cfg.max_concurrency, thread_name_prefix="vlm-openai")
        self._closed = threading.Event()
        self._lock = threading.Lock()
        self._top_logprobs = cfg.top_logprobs

    # -- HTTP ------------------------------------------------------------------------------------------

    def _make_client(self, base_url: str) -> Any:
        limits = self._httpx.Limits(
            max_connections=self.cfg.max_concurrency, max_keepalive_connections=self.cfg.max_concurrency
        )
        return self._httpx.Client(
            base_url=base_url.rstrip("/") + "/",
            headers=_headers(self.cfg),
            timeout=self.cfg.timeout_s,
            limits=limits,
        )

    def _healthy(self, replica: Replica) -> bool:
        """The replicas' health check: ``GET /models`` answers 200 within a few seconds."""
        try:
            response = replica.client.get("models", timeout=min(self.cfg.timeout_s, 5.0))
        except self._httpx.HTTPError as exc:
            replica.problem = f"health check failed ({type(exc).__name__})"
            return False
        if response.status_code != 200:
            replica.problem = f"health check answered HTTP {response.status_code}"
        return response.status_code == 200

    def _post(self, path: str, body: dict[str, Any]) -> dict[str, Any]:
        """POSTs JSON with retries; returns the decoded object or raises a one-line VLMError."""
        httpx = self._httpx
        url = self.cfg.base_url.rstrip("/") + "/" + path
        problem = ""
        for attempt in range(self.cfg.max_retries + 1):
            if attempt:
                time.sleep(self.cfg.backoff_s * 2 ** (attempt - 1) * random.uniform(0.5, 1.5))
            if self._closed.is_set():
                raise VLMError("the openai scorer is closed")
            replica = self._replicas.pick()
            url = replica.url + "/" + path
            try:
                response = replica.client.post(path, json=body)
            except httpx.TimeoutException:
                problem = f"no answer within {self.cfg.timeout_s:g} s (timeout_s)"
                self._replicas.mark_down(replica, problem)
                continue
            except httpx.TransportError as exc:
                problem = f"connection failed ({type(exc).__name__})"
                self._replicas.mark_down(replica, problem)
                continue
            if response.status_code == 429:  # busy, not broken: the next attempt goes to the next replica
                problem = f"HTTP 429: {_error_message(response)}"
                continue
            if response.status_code >= 500:
                problem = f"HTTP {response.status_code}: {_error_message(response)}"
                self._replicas.mark_down(replica, problem)
                continue
            if response.status_code in (401, 403):
                raise VLMError(
                    f"{url} rejected the API key (HTTP {response.status_code}); set --scorer.api-key or "
                    f"${self.cfg.api_key_env}"
                )
            if response.status_code >= 400:
                message = _error_message(response)
                raise _Refused(f"{url} refused the request (HTTP {response.status_code}): {message}", message)
            try:
                decoded = response.json()
            except (json.JSONDecodeError, UnicodeDecodeError):
                raise VLMError(f"{url} answered with invalid JSON: {response.text[:60]!r}") from None
            if not isinstance(decoded, dict):
                raise VLMError(f"{url} answered with JSON that is not an object")
            return decoded
        raise VLMError(f"POST {url} failed after {self.cfg.max_retries + 1} attempts: {problem}")

    def _image_parts(self, clip: Clip, tiled: bool = False) -> list[str]:
        frames = clip.subsample(self.cfg.num_frames).frames  # a clip subsampled already is returned as is
        if tiled:
            frames = tile_frames(frames)[None]
        return [encode_data_url(f, self.cfg.image_format, self.cfg.jpeg_quality) for f in frames]

    def _chat_with_limits(self, body: dict[str, Any], n_images: int) -> dict[str, Any]:
        """POSTs a chat request; a top_logprobs cap in the server's 400 is taken and the request sent
        again; an image limit becomes a one-line VLMError saying how to fix it."""
        while True:
            sent = self._top_logprobs
            try:
                return self._post("chat/completions", {**body, "top_logprobs": sent})
            except _Refused as exc:
                cap = _LOGPROB_CAP.search(exc.server_message)
                if cap and 0 < int(cap.group(1)) < sent:
                    with self._lock:
                        if int(cap.group(1)) < self._top_logprobs:
                            logger.warning(
                                "%s caps top_logprobs at %s; asking for that many",
                                self.cfg.base_url,
                                cap.group(1),
                            )
                            self._top_logprobs = int(cap.group(1))
                    continue
                limit = _IMAGE_LIMIT.search(exc.server_message)
                if limit and n_images > int(limit.group(1)):
                    raise VLMError(
                        f"{self.cfg.base_url} accepts at most {limit.group(1)} image(s) per prompt and a clip "
                        f"is {n_images} frames: send each clip as one tiled image (--scorer.frames-as tiled) "
                        f"or start vLLM with --limit-mm-per-prompt '{{\"image\": {n_images}}}'"
                    ) from None
                raise

    # -- chat mode -------------------------------------------------------------------------------------

    def _score_chat(self, clip: Clip, prompt: str) -> float:
        tiled = self.cfg.frames_as == "tiled"
        urls = self._image_parts(clip, tiled)
        content: list[dict[str, Any]] = [{"type": "image_url", "image_url": {"url": url}} for url in urls]
        if tiled:
            prompt = tiled_prompt(prompt, min(clip.length, self.cfg.num_frames))
        content.append({"type": "text", "text": prompt})
        body = {
            "model": self.model_id,
            "messages": [{"role": "user", "content": content}],
            "max_tokens": 1,
            "temperature": 0.0,
            "logprobs": True,
        }
        reply = self._chat_with_limits(body, len(urls))
        try:
            first = reply["choices"][0]["logprobs"]["content"][0]
            listed = [(str(a["token"]), float(a["logprob"])) for a in first.get("top_logprobs") or []]
            top = finite_alternatives(listed)
            chosen = (str(first["token"]), float(first["logprob"]))
        except (KeyError, IndexError, TypeError, ValueError):
            raise VLMError(
                f"{self.cfg.base_url} returned no logprobs for the answer token; the server must support "
                "logprobs with top_logprobs (vLLM, SGLang and `vlmrl serve` do)"
            ) from None
        p_yes = yes_probability_from_logprobs(top or [chosen])
        if p_yes is None:
            seen = [t for t, _ in top] or [chosen[0]]
            side = answer_side(chosen[0])
            if side is None:
                raise VLMError(
                    f"neither yes nor no among the answer's top tokens {seen[:5]}; ask a yes/no question"
                )
            p_yes = 1.0 if side == "yes" else 0.0
        return p_yes

    # -- score mode ------------------------------------------------------------------------------------

    def _score_batch(self, clips: list[Clip], prompt: str) -> list[float]:
        sent = [c.subsample(self.cfg.num_frames) for c in clips]
        body = {
            "model": self.model_id,
            "prompt": prompt,
            "clips": [
                {
                    "frames": self._image_parts(c),
                    "info": {k: np.asarray(v, np.float64).tolist() for k, v in c.info.items()},
                }
                for c in sent
            ],
        }
        reply = self._post("score", body)
        scores = reply.get("scores")
        if not isinstance(scores, list) or len(scores) != len(clips):
            raise VLMError(
                f"{self.cfg.base_url}/score returned {str(scores)[:60]!r}, not {len(clips)} scores"
            )
        return [float(s) for s in scores]

    def score(self, clips: Sequence[Clip | np.ndarray], prompt: str) -> np.ndarray:
        """Returns float32 [N] in [0, 1]; up to ``max_concurrency`` requests in flight."""
        batch = as_clips(clips)
        if not batch:
            return np.zeros(0, np.float32)
        if self.cfg.endpoint == "score":
            chunks = [batch[i : i + _SCORE_BATCH] for i in range(0, len(batch), _SCORE_BATCH)]
            results = list(self._pool.map(lambda c: self._score_batch(c, prompt), chunks))
            values = [s for chunk in results for s in chunk]
        else:
            values = list(self._pool.map(lambda c: self._score_chat(c, prompt), batch))
        return np.clip(np.asarray(values, np.float32), 0.0, 1.0)

    def close(self) -> None:
        """Cancels queued requests and closes the connections."""
        self._closed.set()
        self._pool.shutdown(wait=True, cancel_futures=True)
        self._replicas.close()
