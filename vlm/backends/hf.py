"""The ``hf`` backend: a transformers image-text-to-text model answering a yes/no question per clip.

Each clip becomes one chat turn with its K subsampled frames as images followed by the prompt; the score
is P(yes)/(P(yes)+P(no)) from the next-token logits at the generation prompt (see ``answer_tokens``).
"""

from __future__ import annotations

import inspect
import threading
from collections.abc import Sequence
from typing import Any

import numpy as np

from vlm.answer_tokens import answer_token_ids, yes_probability
from vlm.backends.loading import resize_longer_side, resolve_device, resolve_dtype
from vlm.clip import Clip, as_clips
from vlm.config import HFConfig
from vlm.errors import VLMError
from vlm.scorer import make_scorer_id


def load_hf_model(cfg: HFConfig, device: str, dtype: Any) -> tuple[Any, Any]:
    """Loads processor and model from a hub id or local directory; one-line VLMError on failure."""
    from transformers import AutoModelForImageTextToText, AutoProcessor

    kwargs: dict[str, Any] = {"trust_remote_code": cfg.trust_remote_code}
    if cfg.revision:
        kwargs["revision"] = cfg.revision
    try:
        processor = AutoProcessor.from_pretrained(cfg.model, **kwargs)
        model = AutoModelForImageTextToText.from_pretrained(cfg.model, dtype=dtype, **kwargs)
    except ImportError as exc:
        raise VLMError(f"loading {cfg.model!r} needs a package that is not installed: {exc}") from None
    except (OSError, ValueError, KeyError) as exc:
        first = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        raise VLMError(
            f"cannot load {cfg.model!r} as an image-text-to-text model ({first}); pass a VLM such as "
            "Qwen2.5-VL, SmolVLM or Idefics3 (hub id or directory with model and processor)"
        ) from None
    return model.to(device).eval(), processor  # type: ignore[arg-type]


class HFScorer:
    """Scores clips with a local transformers VLM (see the module docstring).

    Args:
        cfg: model source, frames per clip, batch size, device and dtype.
        model: an already built model (tests, or sharing one model); loaded from ``cfg.model`` if None.
        processor: its processor; required with ``model``.
    """

    def __init__(self, cfg: HFConfig, *, model: Any = None, processor: Any = None) -> None:
        import torch

        if cfg.num_frames < 1 or cfg.batch_size < 1:
            raise VLMError("hf num_frames and batch_size must be >= 1")
        self.cfg = cfg
        self.device = resolve_device(cfg.device)
        self.dtype = resolve_dtype(cfg.dtype, self.device)
        if model is None:
            model, processor = load_hf_model(cfg, self.device, self.dtype)
        elif processor is None:
            raise VLMError("HFScorer(model=...) also needs processor=...")
        self.model, self.processor = model, processor
        if getattr(processor, "chat_template", None) is None:
            raise VLMError(f"{cfg.model!r} has no chat template in its processor; yes/no scoring needs one")
        tokenizer = processor.tokenizer
        tokenizer.padding_side = "left"  # the answer position is then the last column for every row
        self.yes_ids, self.no_ids = answer_token_ids(tokenizer)
        forward = inspect.signature(model.forward).parameters
        self._forward_kwargs = {"logits_to_keep": 1} if "logits_to_keep" in forward else {}
        self._processor_kwargs: dict[str, Any] = {}
        if hasattr(getattr(processor, "image_processor", None), "do_image_splitting"):
            # Tiling each frame into crops multiplies image tokens (17x for SmolVLM); frames are small.
            self._processor_kwargs["do_image_splitting"] = False
        image_kwargs = getattr(getattr(processor, "image_processor", None), "valid_kwargs", None)
        if self.device == "cuda" and "device" in getattr(image_kwargs, "__annotations__", {}):
            # Resize and normalise the frames on the GPU: on the CPU this took 554 of 671 ms a batch of 32 clips
            # (SmolVLM-256M on an H200, results/bench/gpu_paths.json). Torchvision resamples bicubic there.
            self._processor_kwargs["device"] = self.device
        self.scorer_id = make_scorer_id("hf", cfg.model)
        self.model_id = cfg.model
        self._lock = threading.Lock()
        self._torch = torch

    def _chat_text(self, num_images: int, prompt: str) -> str:
        content: list[dict[str, str]] = [{"type": "image"} for _ in range(num_images)]
        content.append({"type": "text", "text": prompt})
        messages = [{"role": "user", "content": content}]
        return self.processor.apply_chat_template(messages, add_generation_prompt=True, tokenize=False)

    def _inputs(self, clips: list[Clip], prompt: str) -> dict[str, Any]:
        texts, images = [], []
        for clip in clips:
            frames = resize_longer_side(clip.subsample(self.cfg.num_frames).frames, self.cfg.max_image_side)
            texts.append(self._chat_text(len(frames), prompt))
            images.append(list(frames))
        inputs = self.processor(
            text=texts, images=images, return_tensors="pt", padding=True, **self._processor_kwargs
        )
        out = {}
        for key, value in inputs.items():
            if hasattr(value, "to"):
                value = value.to(self.device)
                if value.is_floating_point():
                    value = value.to(self.dtype)
            out[key] = value
        return out

    def score(self, clips: Sequence[Clip | np.ndarray], prompt: str) -> np.ndarray:
        """Returns float32 [N] P(yes) in [0, 1]; batches of ``cfg.batch_size`` clips per forward pass."""
        batch = as_clips(clips)
        scores = np.empty(len(batch), np.float32)
        with self._lock, self._torch.inference_mode():
            for lo in range(0, len(batch), self.cfg.batch_size):
                chunk = batch[lo : lo + self.cfg.batch_size]
                logits = self.model(**self._inputs(chunk, prompt), **self._forward_kwargs).logits
                scores[lo : lo + len(chunk)] = yes_probability(logits[:, -1, :], self.yes_ids, self.no_ids)
        return scores

    def close(self) -> None:
        """Drops the model so its memory can be freed."""
        with self._lock:
            self.model = None
