"""The ``clip`` backend: contrastive image-text similarity (CLIP, SigLIP) as a clip score.

Per frame, VLM-RM's goal-baseline projection (Rocamonde et al. 2023, "Vision-Language Models are Zero-Shot
Reward Models"): with unit embeddings x (image), g (goal caption) and b (baseline caption), project onto
the direction d = g - b, P = alpha * d d^T / |d|^2 + (1 - alpha) I, and take R = 1 - |P (x - g)|^2 / 2,
which lies in [-1, 1]; the score is (R + 1) / 2. Frame scores are pooled over the clip (mean/max/last).
"""

from __future__ import annotations

import itertools
import threading
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from vlm.backends.loading import resolve_device, resolve_dtype
from vlm.clip import Clip, as_clips
from vlm.config import CLIPConfig
from vlm.errors import VLMError
from vlm.scorer import make_scorer_id

_POOLS: dict[str, Callable[[np.ndarray], Any]] = {"mean": np.mean, "max": np.max, "last": lambda v: v[-1]}


def _features(output: Any) -> Any:
    # transformers 5 returns a model output whose pooler_output holds the projected embedding.
    return output if hasattr(output, "norm") else output.pooler_output


class CLIPScorer:
    """Scores clips by goal-baseline projected similarity to the prompt (used as the goal caption)."""

    def __init__(self, cfg: CLIPConfig, *, model: Any = None, processor: Any = None) -> None:
        import torch

        if not 0.0 <= cfg.projection_alpha <= 1.0:
            raise VLMError(f"clip projection_alpha must be in [0, 1], got {cfg.projection_alpha}")
        if cfg.num_frames < 1 or cfg.batch_size < 1:
            raise VLMError("clip num_frames and batch_size must be >= 1")
        self.cfg = cfg
        self.device = resolve_device(cfg.device)
        self.dtype = resolve_dtype(cfg.dtype, self.device, gpu_default="float16")
        if model is None:
            from transformers import AutoModel, AutoProcessor

            try:
                processor = AutoProcessor.from_pretrained(cfg.model)
                model = AutoModel.from_pretrained(cfg.model, dtype=self.dtype)
            except (OSError, ValueError, KeyError, ImportError) as exc:
                first = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
                raise VLMError(f"cannot load {cfg.model!r} as a CLIP/SigLIP model ({first})") from None
            model = model.to(self.device).eval()
        if not hasattr(model, "get_image_features") or not hasattr(model, "get_text_features"):
            raise VLMError(f"{cfg.model!r} is not a contrastive image-text model (CLIP or SigLIP)")
        self.model, self.processor = model, processor
        # SigLIP was trained with text padded to its maximum length; CLIP with dynamic padding.
        self._text_padding: dict[str, Any] = {"padding": True}
        if "siglip" in type(model).__name__.lower():
            self._text_padding = {"padding": "max_length", "max_length": 64}
        self.scorer_id = make_scorer_id("clip", cfg.model)
        self.model_id = cfg.model
        self._lock = threading.Lock()
        self._projection_cache: dict[str, tuple[Any, Any]] = {}
        self._torch = torch

    def _goal_and_projection(self, prompt: str) -> tuple[Any, Any]:
        if prompt not in self._projection_cache:
            torch = self._torch
            inputs = self.processor(
                text=[prompt, self.cfg.baseline_prompt],
                return_tensors="pt",
                truncation=True,
                **self._text_padding,
            ).to(self.device)
            text = _features(self.model.get_text_features(**inputs)).float()
            text = text / text.norm(dim=-1, keepdim=True)
            goal, baseline = text[0], text[1]
            direction = goal - baseline
            eye = torch.eye(goal.shape[0], device=goal.device)
            alpha = self.cfg.projection_alpha
            if direction.norm() < 1e-8:  # goal == baseline caption: plain distance to the goal
                projection = eye
            else:
                d = direction / direction.norm()
                projection = alpha * torch.outer(d, d) + (1 - alpha) * eye
            self._projection_cache = {prompt: (goal, projection)}
        return self._projection_cache[prompt]

    def frame_scores(self, frames: Sequence[np.ndarray], prompt: str) -> np.ndarray:
        """float32 [N] per-image scores in [0, 1] for N uint8 [H, W, 3] frames."""
        with self._torch.inference_mode():
            return self._frame_scores(frames, prompt)

    def _frame_scores(self, frames: Sequence[np.ndarray], prompt: str) -> np.ndarray:
        goal, projection = self._goal_and_projection(prompt)
        out = []
        for lo in range(0, len(frames), self.cfg.batch_size):
            images = list(frames[lo : lo + self.cfg.batch_size])
            pixels = self.processor(images=images, return_tensors="pt")["pixel_values"]
            emb = _features(self.model.get_image_features(pixel_values=pixels.to(self.device, self.dtype)))
            emb = emb.float()
            emb = emb / emb.norm(dim=-1, keepdim=True)
            reward = 1 - 0.5 * ((emb - goal) @ projection).pow(2).sum(-1)
            out.append(((reward + 1) / 2).clamp(0, 1).cpu().numpy())
        return np.concatenate(out).astype(np.float32)

    def score(self, clips: Sequence[Clip | np.ndarray], prompt: str) -> np.ndarray:
        """Returns float32 [N] pooled projected similarities in [0, 1]."""
        batch = [c.subsample(self.cfg.num_frames) for c in as_clips(clips)]
        if not batch:
            return np.zeros(0, np.float32)
        frames = [frame for c in batch for frame in c.frames]
        lengths = [c.length for c in batch]
        with self._lock:
            per_frame = self.frame_scores(frames, prompt)
        pool = _POOLS[self.cfg.pool]
        bounds = np.cumsum([0, *lengths])
        return np.array([pool(per_frame[a:b]) for a, b in itertools.pairwise(bounds)], np.float32)

    def close(self) -> None:
        """Drops the model so its memory can be freed."""
        with self._lock:
            self.model = None
