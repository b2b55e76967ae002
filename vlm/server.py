"""The HTTP face of a local scorer: the OpenAI chat-completions subset with logprobs, plus /v1/score.

Routes: ``GET /health``, ``GET /v1/models``, ``POST /v1/chat/completions`` (the images of the last user
message are the clip's frames, its text the prompt; the answer is one token, "yes" or "no", with
``logprobs``/``top_logprobs`` carrying log P(yes) and log P(no)), and ``POST /v1/score`` (a batch of
clips with optional privileged info). Errors use OpenAI's ``{"error": {"message", "type", "code"}}``
shape with a one-line message; malformed bodies get 4xx, never 500. Bodies must be sent as
``application/json`` (415 otherwise); a client that disconnects mid-upload is dropped without a traceback.

The served model's answer distribution is over the two answer tokens only: asked for ``top_logprobs=k``
it lists "yes" and "no", then up to ``k - 2`` other spellings of the answers ("Yes", " no", ...) with the
logprob of probability zero (``ServerConfig.zero_logprob``). ``usage.prompt_tokens`` counts the prompt's
words plus one per image (the scorers do not expose their tokenizer's count). ``ServerConfig`` can make
it act as vLLM does: one image per prompt (``max_images=1``), a ``top_logprobs`` cap, -9999.0 or -inf for
probability zero.
"""

from __future__ import annotations

import asyncio
import hmac
import json
import math
import os
import time
import uuid
from typing import Any

import numpy as np
from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse, Response
from starlette.requests import ClientDisconnect

from vlm.batcher import MicroBatcher
from vlm.clip import Clip
from vlm.config import ServerConfig
from vlm.errors import VLMError
from vlm.images import decode_data_url
from vlm.prompts import prompt_hash
from vlm.scorer import Scorer

_ERROR_TYPES = {400: "invalid_request_error", 401: "authentication_error", 404: "not_found_error"}
_ERROR_TYPES |= {413: "invalid_request_error", 415: "invalid_request_error", 422: "invalid_request_error"}
_MIN_PROB = 1e-12
_ZERO_MASS_TOKENS = ("Yes", "No", " yes", " no", " Yes", " No", "YES", "NO")
"""Alternatives listed after yes/no when more top_logprobs are asked for: answers the model gives no mass."""


class HTTPProblem(Exception):
    """A request the server refuses: HTTP status plus one line for the client."""

    def __init__(self, status: int, message: str) -> None:
        super().__init__(message)
        self.status = status
        self.message = message


def resolve_api_key(cfg: ServerConfig) -> str:
    """The configured key, else $VLMRL_API_KEY, else empty (no authentication)."""
    return cfg.api_key or os.environ.get("VLMRL_API_KEY", "")


def _need(body: dict[str, Any], key: str, kind: type | tuple[type, ...], where: str = "body") -> Any:
    if key not in body:
        raise HTTPProblem(400, f"{where} needs {key!r}")
    value = body[key]
    if not isinstance(value, kind) or (isinstance(value, bool) and kind is not bool):
        names = kind.__name__ if isinstance(kind, type) else " or ".join(k.__name__ for k in kind)
        raise HTTPProblem(400, f"{where}[{key!r}] must be {names}, got {type(value).__name__}")
    return value


class ScoringService:
    """Request validation and scoring behind the routes; usable without HTTP (tests, other servers)."""

    def __init__(self, scorer: Scorer, cfg: ServerConfig) -> None:
        self.scorer = scorer
        self.cfg = cfg
        self.model_name = cfg.model_name or scorer.scorer_id
        self.batcher = MicroBatcher(scorer, cfg.max_batch, cfg.batch_wait_s)

    def _frames(self, urls: list[Any], where: str) -> np.ndarray:
        if not urls:
            raise HTTPProblem(400, f"{where} has no images")
        if len(urls) > self.cfg.max_images:
            raise HTTPProblem(
                413, f"{where} has {len(urls)} images; this server accepts at most {self.cfg.max_images}"
            )
        try:
            frames = [decode_data_url(u, self.cfg.max_image_side) for u in urls]
        except VLMError as exc:
            raise HTTPProblem(400, f"{where}: {exc}") from None
        if len({f.shape for f in frames}) > 1:
            raise HTTPProblem(400, f"{where}: the images of one clip must share one size")
        return np.stack(frames)

    def _check_model(self, body: dict[str, Any]) -> None:
        model = body.get("model")
        if model not in (None, "", self.model_name):
            raise HTTPProblem(
                404, f"model {model!r} is not served here; this server serves {self.model_name!r}"
            )

    async def _score(self, clips: list[Clip], prompt: str) -> np.ndarray:
        try:
            return await asyncio.wrap_future(self.batcher.submit(clips, prompt))
        except VLMError as exc:
            raise HTTPProblem(422, str(exc).splitlines()[0]) from None

    def parse_chat(self, body: dict[str, Any]) -> tuple[Clip, str, int]:
        """(clip, prompt, top_logprobs) from a chat-completions body."""
        self._check_model(body)
        if body.get("stream"):
            raise HTTPProblem(400, "streaming is not supported; send stream=false")
        if body.get("n", 1) != 1:
            raise HTTPProblem(400, "only n=1 is supported")
        messages = _need(body, "messages", list)
        users = [m for m in messages if isinstance(m, dict) and m.get("role") == "user"]
        if not users:
            raise HTTPProblem(400, "messages need a user message with images and a question")
        content = users[-1].get("content")
        if isinstance(content, str):
            raise HTTPProblem(400, "the user message has no images; send content parts with image_url")
        if not isinstance(content, list):
            raise HTTPProblem(400, "the user message content must be a list of parts")
        urls, texts = [], []
        for part in content:
            kind = part.get("type") if isinstance(part, dict) else None
            if kind == "text" and isinstance(part.get("text"), str):
                texts.append(part["text"])
            elif kind == "image_url":
                image = part.get("image_url")
                urls.append(image.get("url") if isinstance(image, dict) else image)
            else:
                raise HTTPProblem(
                    400, f"unsupported content part {str(part)[:60]!r}; use text or image_url parts"
                )
        prompt = "\n".join(texts).strip()
        if not prompt:
            raise HTTPProblem(400, "the user message has no text question")
        top = body.get("top_logprobs") or 0
        if not isinstance(top, int) or isinstance(top, bool) or top < 0:
            raise HTTPProblem(400, "top_logprobs must be a non-negative integer")
        if top > self.cfg.max_top_logprobs:  # vLLM's wording, so clients can read the cap from it
            raise HTTPProblem(
                400,
                f"Requested top_logprobs of {top}, which is greater than max allowed: {self.cfg.max_top_logprobs}",
            )
        if len(urls) > self.cfg.max_images:  # vLLM's wording (--limit-mm-per-prompt)
            raise HTTPProblem(
                400 if self.cfg.max_images == 1 else 413,
                f"At most {self.cfg.max_images} image(s) may be provided in one request; this one has {len(urls)}",
            )
        return Clip(self._frames(urls, "the user message")), prompt, top

    def _logprob(self, p: float) -> float:
        if p <= 0.0 and self.cfg.zero_logprob is not None:
            return float(self.cfg.zero_logprob)
        return math.log(min(max(p, _MIN_PROB), 1.0))

    async def chat(self, body: dict[str, Any]) -> dict[str, Any]:
        """Answers a chat completion with one yes/no token and its logprobs."""
        clip, prompt, top = self.parse_chat(body)
        p_yes = float(np.clip((await self._score([clip], prompt))[0], 0.0, 1.0))
        if self.cfg.zero_logprob is None:
            p_yes = min(max(p_yes, _MIN_PROB), 1 - _MIN_PROB)
        answer = "yes" if p_yes >= 0.5 else "no"
        n_prompt = len(prompt.split()) + clip.length
        alternatives: list[dict[str, Any]] = sorted(
            [
                {"token": "yes", "logprob": self._logprob(p_yes)},
                {"token": "no", "logprob": self._logprob(1 - p_yes)},
            ],
            key=lambda a: -a["logprob"],
        )
        alternatives += [{"token": t, "logprob": self._logprob(0.0)} for t in _ZERO_MASS_TOKENS]
        choice: dict[str, Any] = {
            "index": 0,
            "message": {"role": "assistant", "content": answer},
            "finish_reason": "length",
            "logprobs": None,
        }
        if body.get("logprobs"):
            chosen = alternatives[0]
            choice["logprobs"] = {
                "content": [
                    {
                        "token": answer,
                        "logprob": chosen["logprob"],
                        "bytes": list(answer.encode()),
                        "top_logprobs": [
                            {**a, "bytes": list(a["token"].encode())} for a in alternatives[:top]
                        ],
                    }
                ]
            }
        return {
            "id": f"chatcmpl-{uuid.uuid4().hex[:24]}",
            "object": "chat.completion",
            "created": int(time.time()),
            "model": self.model_name,
            "choices": [choice],
            "usage": {"prompt_tokens": n_prompt, "completion_tokens": 1, "total_tokens": n_prompt + 1},
        }

    async def score_batch(self, body: dict[str, Any]) -> dict[str, Any]:
        """Scores ``{"prompt": str, "clips": [{"frames": [data URL...], "info": {key: [float...]}}]}``."""
        self._check_model(body)
        prompt = _need(body, "prompt", str)
        raw_clips = _need(body, "clips", list)
        if not raw_clips:
            raise HTTPProblem(400, "body['clips'] is empty")
        if len(raw_clips) > self.cfg.max_clips:
            raise HTTPProblem(
                413, f"{len(raw_clips)} clips in one request; the limit is {self.cfg.max_clips}"
            )
        clips = []
        for i, raw in enumerate(raw_clips):
            if not isinstance(raw, dict):
                raise HTTPProblem(400, f"clips[{i}] must be an object with 'frames'")
            frames = self._frames(_need(raw, "frames", list, f"clips[{i}]"), f"clips[{i}]")
            info_raw = raw.get("info") or {}
            if not isinstance(info_raw, dict):
                raise HTTPProblem(400, f"clips[{i}]['info'] must be an object of per-frame arrays")
            try:
                info = {str(k): np.asarray(v, np.float64) for k, v in info_raw.items()}
                clips.append(Clip(frames, info))
            except (VLMError, ValueError, TypeError) as exc:
                raise HTTPProblem(400, f"clips[{i}]: {str(exc).splitlines()[0]}") from None
        scores = await self._score(clips, prompt)
        return {
            "object": "score",
            "model": self.model_name,
            "scorer_id": self.scorer.scorer_id,
            "prompt_hash": prompt_hash(prompt),
            "scores": [float(s) for s in scores],
        }

    def close(self) -> None:
        """Stops the batcher and closes the scorer."""
        self.batcher.close()
        self.scorer.close()


def create_app(scorer: Scorer, cfg: ServerConfig) -> FastAPI:
    """A FastAPI app serving ``scorer`` (see the module docstring); run it with uvicorn."""
    service = ScoringService(scorer, cfg)
    api_key = resolve_api_key(cfg)
    app = FastAPI(title="vlmrl scorer", docs_url=None, redoc_url=None, openapi_url=None)
    app.state.service = service

    def problem(status: int, message: str) -> JSONResponse:
        kind = _ERROR_TYPES.get(status, "server_error")
        return JSONResponse({"error": {"message": message, "type": kind, "code": status}}, status_code=status)

    @app.exception_handler(HTTPProblem)
    async def _problem(request: Request, exc: HTTPProblem) -> JSONResponse:
        return problem(exc.status, exc.message)

    @app.exception_handler(RequestValidationError)
    async def _invalid(request: Request, exc: RequestValidationError) -> JSONResponse:
        return problem(400, "malformed request")

    @app.exception_handler(404)
    async def _not_found(request: Request, exc: Exception) -> JSONResponse:
        return problem(404, f"no route {request.method} {request.url.path}")

    @app.exception_handler(405)
    async def _bad_method(request: Request, exc: Exception) -> JSONResponse:
        return problem(405, f"{request.method} is not allowed on {request.url.path}")

    @app.exception_handler(Exception)
    async def _crash(request: Request, exc: Exception) -> JSONResponse:
        first = str(exc).splitlines()[0] if str(exc) else ""
        return problem(500, f"scoring failed: {type(exc).__name__}: {first}")

    def authorize(request: Request) -> None:
        if not api_key:
            return
        header = request.headers.get("authorization", "")
        scheme, _, token = header.partition(" ")
        if scheme.lower() != "bearer" or not hmac.compare_digest(token.encode(), api_key.encode()):
            raise HTTPProblem(401, "missing or wrong API key: send Authorization: Bearer <key>")

    async def read_json(request: Request) -> dict[str, Any]:
        authorize(request)
        media = request.headers.get("content-type", "").split(";")[0].strip().lower()
        if media != "application/json" and not media.endswith("+json"):
            raise HTTPProblem(
                415, f"send the body as Content-Type: application/json, not {media or 'none'!r}"
            )
        declared = request.headers.get("content-length")
        if declared and declared.isdigit() and int(declared) > cfg.max_request_bytes:
            raise HTTPProblem(
                413, f"request body of {declared} bytes exceeds the {cfg.max_request_bytes}-byte limit"
            )
        try:
            raw = await request.body()
        except ClientDisconnect:  # nobody to answer; say so in one line instead of an ASGI traceback
            raise HTTPProblem(499, "client disconnected during the upload") from None
        if len(raw) > cfg.max_request_bytes:
            raise HTTPProblem(413, f"request body exceeds the {cfg.max_request_bytes}-byte limit")
        try:
            body = json.loads(raw)
        except (json.JSONDecodeError, UnicodeDecodeError) as exc:
            raise HTTPProblem(400, f"request body is not valid JSON: {str(exc).splitlines()[0]}") from None
        if not isinstance(body, dict):
            raise HTTPProblem(400, "request body must be a JSON object")
        return body

    @app.get("/health")
    async def health() -> dict[str, Any]:
        batcher = service.batcher
        return {
            "status": "ok",
            "model": service.model_name,
            "scorer_id": scorer.scorer_id,
            "scorer_calls": batcher.calls,
            "clips_scored": batcher.clips,
        }

    @app.get("/v1/models")
    async def models(request: Request) -> dict[str, Any]:
        authorize(request)
        entry = {"id": service.model_name, "object": "model", "created": 0, "owned_by": "vlmrl"}
        return {"object": "list", "data": [entry]}

    @app.post("/v1/chat/completions")
    async def chat(request: Request) -> Response:
        reply = await service.chat(await read_json(request))
        # json.dumps, not JSONResponse: zero_logprob=-inf must go out as -Infinity, as such servers send it
        return Response(json.dumps(reply), media_type="application/json")

    @app.post("/v1/score")
    async def score(request: Request) -> dict[str, Any]:
        return await service.score_batch(await read_json(request))

    @app.on_event("shutdown")
    def _shutdown() -> None:
        service.close()

    return app
