"""The ``learned`` backend: a small conv net over a clip's frames, fitted by ``vlmrl scorer fit``.

A clip's score means what a VLM's does: P(the clip shows the task's goal reached / about to be reached),
for the one prompt and camera it was fitted on. The net sees ``num_frames`` evenly spaced frames (the
last one always; a shorter clip repeats its first frame in front, as if the arm had stood still) and
their consecutive differences, so the direction of motion is visible: a time-reversed ("rewound") clip
of a success is a negative (ReWiND, Zhang et al. 2025). It is cheap enough to score every clip on a CPU.

The file (``torch.save`` of plain tensors and JSON-able metadata, loaded with ``weights_only=True``)
records the camera, frame size, frames per clip, prompt and how it was labelled; a file fitted on
another camera or frame size, or asked another prompt, is refused with one line.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from vlm.clip import Clip, as_clips, subsample_indices
from vlm.config import LearnedConfig
from vlm.errors import VLMError
from vlm.prompts import prompt_hash
from vlm.scorer import make_scorer_id

FILE_FORMAT = "vlmrl-learned-scorer"
FILE_VERSION = 1
_META_KEYS = ("camera", "image_hw", "num_frames", "width", "prompt", "prompt_hash", "labels")


def build_net(num_frames: int, width: int) -> Any:
    """The clip net: frames and their differences stacked on channels -> 4 strided convs -> a 4x4 grid
    (adaptive pooling keeps where things are: the cube's height is the task) -> MLP -> one logit."""
    from torch import nn

    in_ch = 3 * num_frames + 3 * (num_frames - 1)
    w = width
    return nn.Sequential(
        nn.Conv2d(in_ch, w, 5, stride=2, padding=2),
        nn.ReLU(),
        nn.Conv2d(w, 2 * w, 3, stride=2, padding=1),
        nn.ReLU(),
        nn.Conv2d(2 * w, 2 * w, 3, stride=2, padding=1),
        nn.ReLU(),
        nn.Conv2d(2 * w, 2 * w, 3, stride=2, padding=1),
        nn.ReLU(),
        nn.AdaptiveAvgPool2d(4),
        nn.Flatten(),
        nn.Linear(2 * w * 16, 64),
        nn.ReLU(),
        nn.Linear(64, 1),
    )


def clip_frames(clip: Clip, num_frames: int) -> np.ndarray:
    """uint8 [num_frames, H, W, 3]: evenly spaced frames (last kept), front-padded with the first frame."""
    frames = clip.frames[subsample_indices(clip.length, num_frames)]
    if len(frames) < num_frames:
        pad = np.repeat(frames[:1], num_frames - len(frames), axis=0)
        frames = np.concatenate([pad, frames])
    return frames


def frames_to_input(frames: Any) -> Any:
    """float tensor [B, C, H, W] from uint8 [B, F, H, W, 3] (a tensor): frames in [-0.5, 0.5] and the
    F - 1 consecutive differences, stacked on channels."""
    import torch

    x = frames.permute(0, 1, 4, 2, 3).float() / 255.0 - 0.5  # B F 3 H W
    diffs = x[:, 1:] - x[:, :-1]
    return torch.cat([x.flatten(1, 2), diffs.flatten(1, 2)], dim=1)


def save_learned(path: str | Path, net: Any, meta: dict[str, Any]) -> None:
    """Writes the scorer file atomically (a temporary file, then a rename): never half a file."""
    import torch

    missing = [k for k in _META_KEYS if k not in meta]
    if missing:
        raise VLMError(f"learned scorer metadata lacks {missing}")
    path = Path(path)
    tmp = path.with_name(f".{path.name}.tmp{os.getpid()}")
    state = {k: v.detach().cpu() for k, v in net.state_dict().items()}
    torch.save({"format": FILE_FORMAT, "version": FILE_VERSION, "meta": dict(meta), "state_dict": state}, tmp)
    os.replace(tmp, path)


def load_learned(path: str | Path) -> tuple[dict[str, Any], dict[str, Any]]:
    """(metadata, state_dict) of a scorer file; one-line VLMError when missing or not such a file."""
    import pickle

    import torch

    path = Path(path)
    if not str(path) or not path.is_file():
        raise VLMError(
            f"learned scorer file {str(path)!r} not found; fit one with "
            "`vlmrl scorer fit EPISODES --out student.pt` and pass --scorer.path student.pt"
        )
    try:
        blob = torch.load(path, map_location="cpu", weights_only=True)
    except (pickle.UnpicklingError, RuntimeError, EOFError, OSError, ValueError) as exc:
        first = (str(exc).strip().splitlines() or [type(exc).__name__])[0][:120]
        raise VLMError(f"{path}: not a readable learned scorer file ({first})") from None
    if not isinstance(blob, dict) or blob.get("format") != FILE_FORMAT:
        raise VLMError(f"{path}: not a learned scorer file (written by vlmrl scorer fit)")
    if blob.get("version") != FILE_VERSION:
        raise VLMError(
            f"{path}: learned scorer file version {blob.get('version')}, this vlmrl reads {FILE_VERSION}"
        )
    meta = blob.get("meta")
    if not isinstance(meta, dict) or any(k not in meta for k in _META_KEYS):
        raise VLMError(f"{path}: learned scorer metadata must hold {list(_META_KEYS)}")
    return meta, blob["state_dict"]


def check_learned_file(cfg: LearnedConfig) -> None:
    """The ``check_reachable`` of this backend: the file exists and is a learned scorer file."""
    load_learned(cfg.path)


class LearnedScorer:
    """Scores clips with a fitted clip net (see the module docstring); thread-safe.

    Attributes:
        camera: the camera the file was fitted on (``check_source`` compares it with the data's).
        image_hw: (height, width) of the frames it was fitted on.
        meta: everything the file records (labels, episodes, clip settings, figures).
    """

    def __init__(self, cfg: LearnedConfig) -> None:
        import torch

        if cfg.batch_size < 1:
            raise VLMError(f"learned batch_size must be >= 1, got {cfg.batch_size}")
        self.cfg = cfg
        self.meta, state = load_learned(cfg.path)
        self.camera = str(self.meta["camera"])
        self.image_hw = (int(self.meta["image_hw"][0]), int(self.meta["image_hw"][1]))
        self.num_frames = int(self.meta["num_frames"])
        self.net = build_net(self.num_frames, int(self.meta["width"]))
        try:
            self.net.load_state_dict(state)
        except (RuntimeError, KeyError) as exc:
            first = (str(exc).strip().splitlines() or ["mismatched weights"])[0][:120]
            raise VLMError(f"{cfg.path}: weights do not fit the clip net ({first})") from None
        self.device = (
            "cuda" if cfg.device == "cuda" or (cfg.device == "auto" and torch.cuda.is_available()) else "cpu"
        )
        self.net.to(self.device).eval()
        self.scorer_id = make_scorer_id("learned", Path(cfg.path).stem)
        self.model_id = str(cfg.path)
        self._lock = threading.Lock()

    def check_source(self, camera: str, image_hw: Sequence[int]) -> None:
        """Raises a one-line VLMError unless frames of ``camera`` at ``image_hw`` are what it was fitted on."""
        hw = (int(image_hw[0]), int(image_hw[1]))
        if camera != self.camera or (hw != self.image_hw and not self.cfg.resize):
            raise VLMError(
                f"{self.cfg.path} was fitted on camera {self.camera!r} at {self.image_hw[0]}x{self.image_hw[1]} "
                f"px, these frames are camera {camera!r} at {hw[0]}x{hw[1]} px; fit a scorer on this camera "
                "and size (vlmrl scorer fit --camera ...), render at its size (--sim.image-size), or pass "
                "--scorer.resize"
            )

    def _batch(self, clips: list[Clip]) -> Any:
        import torch
        import torch.nn.functional as F

        out = []
        for clip in clips:
            frames = torch.from_numpy(np.ascontiguousarray(clip_frames(clip, self.num_frames)))
            if tuple(frames.shape[1:3]) != self.image_hw:
                if not self.cfg.resize:
                    h, w = frames.shape[1:3]
                    raise VLMError(
                        f"{self.cfg.path} scores {self.image_hw[0]}x{self.image_hw[1]} px frames, got {h}x{w}; "
                        "score frames of the size it was fitted on (or --scorer.resize)"
                    )
                x = frames.permute(0, 3, 1, 2).float()
                x = F.interpolate(x, size=self.image_hw, mode="bilinear", antialias=True, align_corners=False)
                frames = x.round().clamp(0, 255).to(torch.uint8).permute(0, 2, 3, 1)
            out.append(frames)
        return torch.stack(out)

    def score(self, clips: Sequence[Clip | np.ndarray], prompt: str) -> np.ndarray:
        """float32 [N] in [0, 1]: sigmoid of the net's logit per clip."""
        import torch

        batch = as_clips(clips)
        if prompt_hash(prompt) != self.meta["prompt_hash"]:
            raise VLMError(
                f"{self.cfg.path} was fitted for the prompt {self.meta['prompt']!r}, not {prompt!r}; "
                "fit a scorer for this task"
            )
        scores = np.empty(len(batch), np.float32)
        with self._lock, torch.inference_mode():
            for i in range(0, len(batch), self.cfg.batch_size):
                part = batch[i : i + self.cfg.batch_size]
                x = frames_to_input(self._batch(part).to(self.device))
                scores[i : i + len(part)] = torch.sigmoid(self.net(x)[:, 0]).float().cpu().numpy()
        return scores

    def close(self) -> None:
        """Drops the net."""
        self.net = None
