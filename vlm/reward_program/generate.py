"""Ask an OpenAI-compatible (V)LM to split a task into sub-tasks and write one checker each (VLM-CaR).

Uses the ``scorer:openai`` client settings (``OpenAIConfig``: base URL, model, key) and plain
``/v1/chat/completions`` text generation. Optional first and goal frames go as image parts. What comes
back is untrusted text: ``program.parse_answer`` and the allow-list decide what, if anything, is kept.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from vlm.backends.openai_compat import _error_message, _headers, check_server
from vlm.config import OpenAIConfig
from vlm.errors import VLMError
from vlm.images import encode_data_url
from vlm.reward_program.program import ANSWER_FORMAT
from vlm.reward_program.view import view_api_text

SYSTEM = (
    "You write reward programs for a robot-learning system. You decompose a manipulation task into a few "
    "sub-tasks that must be completed in order and write, for each, a Python function that decides from "
    "the observation whether it is complete."
)


def build_prompt(task_description: str, feedback: str = "", with_frames: bool = False) -> str:
    """The user prompt: task, view API, answer format, and (on a retry) why the last answer failed."""
    parts = [
        f"Task: {task_description.strip()}",
        "The robot is a 6-joint SO-101 arm with a parallel gripper over a table; z points up, metres.",
        view_api_text(),
        ANSWER_FORMAT,
    ]
    if with_frames:
        parts.insert(
            1, "The first image shows the scene at the start of an episode, the second a goal state."
        )
    if feedback:
        parts.append(f"Your previous answer was rejected: {feedback}\nWrite a corrected answer.")
    return "\n\n".join(parts)


def ask_model(
    cfg: OpenAIConfig,
    prompt: str,
    frames: Sequence[np.ndarray] = (),
    max_tokens: int = 2048,
    temperature: float = 0.2,
) -> tuple[str, str]:
    """(model id, answer text) of one chat completion; VLMError (one line) when the server cannot answer."""
    import httpx

    model = cfg.model or check_server(cfg)[0]
    content: Any = prompt
    if len(frames):
        content = [{"type": "text", "text": prompt}] + [
            {
                "type": "image_url",
                "image_url": {"url": encode_data_url(f, cfg.image_format, cfg.jpeg_quality)},
            }
            for f in frames
        ]
    body = {
        "model": model,
        "messages": [{"role": "system", "content": SYSTEM}, {"role": "user", "content": content}],
        "max_tokens": max_tokens,
        "temperature": temperature,
    }
    url = cfg.base_url.rstrip("/") + "/chat/completions"
    try:
        response = httpx.post(url, json=body, headers=_headers(cfg), timeout=cfg.timeout_s)
    except httpx.TimeoutException:
        raise VLMError(
            f"the model server at {cfg.base_url} did not answer within {cfg.timeout_s:g} s"
        ) from None
    except httpx.HTTPError as exc:
        raise VLMError(f"cannot reach the model server at {cfg.base_url} ({type(exc).__name__})") from None
    if response.status_code >= 400:
        raise VLMError(
            f"the model server at {cfg.base_url} refused the request (HTTP {response.status_code}: "
            f"{_error_message(response)}); reward programs need a server that generates text "
            "(vLLM, SGLang, Ollama); `vlmrl serve` only scores clips with a yes/no token"
        )
    try:
        data = response.json()
        answer = data["choices"][0]["message"]["content"]
    except (ValueError, KeyError, IndexError, TypeError):
        raise VLMError(f"POST {url} did not return an OpenAI chat completion") from None
    if not isinstance(answer, str):
        raise VLMError(f"POST {url} returned no text content")
    return str(data.get("model") or model), answer
