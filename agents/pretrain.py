"""Pretraining the pixel encoder on the twin's own frames, for ``PixelEncoderConfig.frozen``.

No pretrained vision weights can be downloaded here, and HIL-SERL's frozen ResNet-10 would cost more per
frame than this whole CPU budget. Instead the encoder learns, by regression, to read from a frame what
the simulator knows about it: the privileged state vector (joint angles, object and target positions).
A frozen encoder then needs no backward pass in SAC (about half a pixel update's cost), and the features
already locate the objects the policy must see. The privileged state is used only as a training target
here; the encoder, and the policy built on it, read pixels only, so it still deploys on a real arm.

    frames, states = ...                           # uint8[N, H, W, 3] and float32[N, S] from the twin
    weights = pretrain_pixel_encoder(frames, states, PixelEncoderConfig(), steps=2000)
    torch.save(weights, "encoder.pt")              # then --agent.pixel.frozen --agent.pixel.weights-path encoder.pt
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch
from torch import nn

from agents.config import PixelEncoderConfig
from agents.encoders import PixelEncoder
from agents.errors import AgentError


@dataclass
class PretrainResult:
    """The encoder's weights (a ``PixelEncoder`` state dict, loadable by ``weights_path``) and its losses."""

    weights: dict[str, torch.Tensor]
    """State dict of the trained ``PixelEncoder`` (used for every camera when loaded)."""
    first_loss: float
    """Mean squared error of the standardised targets on the first batch."""
    last_loss: float
    """Mean over the last 10% of the steps."""


def pretrain_pixel_encoder(
    frames: np.ndarray,
    targets: np.ndarray,
    cfg: PixelEncoderConfig,
    steps: int = 2000,
    batch_size: int = 128,
    lr: float = 1e-3,
    seed: int = 0,
) -> PretrainResult:
    """Train a ``PixelEncoder`` (plus a linear head, discarded) to regress ``targets`` from ``frames``.

    Args:
        frames: uint8[N, H, W, C] camera frames (as stored in the buffer).
        targets: float[N, S] what each frame should reveal (the twin's privileged state); standardised
            per column before fitting.
        cfg: the encoder's configuration (the one SAC will use, so the weights fit).
        steps: gradient steps; batch_size: frames per step; lr: Adam learning rate; seed: of
            initialisation, batches and the DrQ shifts applied while pretraining.

    Raises:
        AgentError: frames and targets do not match in number or shape.
    """
    frames, targets = np.asarray(frames), np.asarray(targets, np.float32)
    if frames.ndim != 4 or frames.dtype != np.uint8:
        raise AgentError(
            f"pretrain: frames must be uint8 [N, H, W, C], got {frames.dtype} {list(frames.shape)}"
        )
    if targets.ndim != 2 or len(targets) != len(frames) or len(frames) == 0:
        raise AgentError(f"pretrain: targets must be [N={len(frames)}, S], got {list(targets.shape)}")
    torch.manual_seed(seed)
    generator = torch.Generator().manual_seed(seed)
    encoder = PixelEncoder(frames.shape[1:], cfg)  # type: ignore[arg-type]
    head = nn.Linear(cfg.feature_dim, targets.shape[1])
    mean, std = targets.mean(axis=0), targets.std(axis=0) + 1e-6
    images = torch.from_numpy(frames)
    goal = torch.from_numpy((targets - mean) / std)
    optimizer = torch.optim.Adam([*encoder.parameters(), *head.parameters()], lr=lr)
    losses = []
    for _ in range(steps):
        idx = torch.randint(0, len(images), (min(batch_size, len(images)),), generator=generator)
        x = encoder.prepare_shifted(images[idx], cfg.shift_pad_px, generator)
        loss = (head(encoder(x)) - goal[idx]).pow(2).mean()
        optimizer.zero_grad(set_to_none=True)
        loss.backward()
        optimizer.step()
        losses.append(float(loss.detach()))
    tail = losses[-max(1, steps // 10) :] if losses else [float("nan")]
    return PretrainResult(
        weights={k: v.detach().clone() for k, v in encoder.state_dict().items()},
        first_loss=losses[0] if losses else float("nan"),
        last_loss=float(np.mean(tail)),
    )
