"""Shared helpers of the local-model backends: resolving a model source, device and dtype."""

from __future__ import annotations

import os
import socket
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from vlm.errors import VLMError


def _looks_local(model: str) -> bool:
    # Hub ids are "name" or "org/name"; anything else path-like is a local directory.
    return model.startswith(("/", ".", "~")) or model.count("/") > 1


def check_model_source(model: str, revision: str = "", *, kind: str = "hf") -> None:
    """Raises a one-line VLMError unless ``model`` is a local model directory or a reachable hub id."""
    if not model:
        raise VLMError(f"no model given: pass --scorer.model <hub id or local directory> ({kind} backend)")
    path = Path(model).expanduser()
    if path.exists() or _looks_local(model):
        if not (path / "config.json").is_file():
            raise VLMError(
                f"model directory {model!r} not found or has no config.json; pass a directory written by "
                f"save_pretrained (model + processor) or a hub id like org/name"
            )
        return
    from huggingface_hub import hf_hub_download, try_to_load_from_cache

    cached = try_to_load_from_cache(model, "config.json", revision=revision or None)
    if isinstance(cached, str):
        return
    if os.environ.get("HF_HUB_OFFLINE", "0") not in ("", "0", "false", "False"):
        raise VLMError(
            f"model {model!r} is not in the local Hugging Face cache and HF_HUB_OFFLINE is set; "
            f"download it first (hf download {model}) or pass a local directory"
        )
    from huggingface_hub import constants

    endpoint = urlsplit(constants.ENDPOINT)
    try:  # one quick probe instead of the hub client's minute of retries
        socket.create_connection((endpoint.hostname or "", endpoint.port or 443), timeout=3).close()
    except OSError:
        raise VLMError(
            f"model {model!r} is not in the local Hugging Face cache and {endpoint.hostname} cannot be reached; "
            f"download it where there is network (hf download {model}) and pass the local directory"
        ) from None
    try:
        hf_hub_download(model, "config.json", revision=revision or None)
    except Exception as exc:
        raise VLMError(
            f"cannot fetch {model!r} from {endpoint.hostname} ({type(exc).__name__}); check the model id "
            f"and revision, log in for gated models (hf auth login), or pass a local directory"
        ) from None


def resolve_device(device: str) -> str:
    """``auto`` becomes cuda when a GPU is visible, else cpu."""
    import torch

    if device == "auto":
        return "cuda" if torch.cuda.is_available() else "cpu"
    if device == "cuda" and not torch.cuda.is_available():
        raise VLMError("device cuda requested but no GPU is visible; use --scorer.device cpu or auto")
    return device


def resolve_dtype(dtype: str, device: str, gpu_default: str = "bfloat16") -> Any:
    """``auto``: ``gpu_default`` on GPU (float16 if bf16 is unsupported), float32 on CPU."""
    import torch

    if dtype == "auto":
        if device != "cuda":
            return torch.float32
        if gpu_default == "bfloat16" and not torch.cuda.is_bf16_supported():
            return torch.float16
        return getattr(torch, gpu_default)
    return getattr(torch, dtype)


def resize_longer_side(frames: Any, max_side: int) -> Any:
    """Downscales uint8 [N, H, W, 3] frames so max(H, W) <= max_side (area interpolation); 0 = as is."""
    import cv2
    import numpy as np

    h, w = frames.shape[1:3]
    if max_side <= 0 or max(h, w) <= max_side:
        return frames
    scale = max_side / max(h, w)
    size = (max(1, round(w * scale)), max(1, round(h * scale)))
    return np.stack([cv2.resize(f, size, interpolation=cv2.INTER_AREA) for f in frames])
