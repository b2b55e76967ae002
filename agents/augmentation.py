"""DrQ random-shift augmentation (Kostrikov et al. 2020; Yarats et al. 2021) for uint8 image batches."""

from __future__ import annotations

import torch
from torch import Tensor


def random_shift(images: Tensor, pad_px: int, generator: torch.Generator | None = None) -> Tensor:
    """Shift each image by a random integer offset in [-pad_px, pad_px] per axis, replicating edges.

    Equivalent to replicate-padding by ``pad_px`` and cropping back to the original size at a random
    position, done by clamped index gathering so it works on uint8 without a float copy.

    Args:
        images: uint8 or float [B, H, W, C] (channels last, as stored in the buffer).
        pad_px: maximum shift in pixels; 0 returns the input unchanged.
        generator: torch generator for the offsets.

    Returns:
        A tensor of the same shape and dtype.
    """
    if pad_px <= 0:
        return images
    batch, height, width = images.shape[0], images.shape[1], images.shape[2]
    device = images.device
    shifts = torch.randint(-pad_px, pad_px + 1, (batch, 2), generator=generator, device=device)
    rows = (torch.arange(height, device=device)[None, :] + shifts[:, :1]).clamp_(0, height - 1)
    cols = (torch.arange(width, device=device)[None, :] + shifts[:, 1:]).clamp_(0, width - 1)
    batch_index = torch.arange(batch, device=device)[:, None, None]
    return images[batch_index, rows[:, :, None], cols[:, None, :]]


def random_shift_prepared(images: Tensor, pad_px: int, generator: torch.Generator | None = None) -> Tensor:
    """``random_shift`` for float [B, C, H, W] images (the encoder's prepared input): one gather.

    Replicate padding then cropping at an offset equals reading each pixel at its shifted position with
    the position clamped to the image, so the shifted images come from a single ``torch.gather`` over the
    flattened pixels, without a padded copy (``replication_pad2d`` cost 4 ms a call at batch 256, 32 px,
    more than the gather; uint8 advanced indexing on the frames was ~30% of a pixel update).
    """
    if pad_px <= 0:
        return images
    batch, channels, height, width = images.shape
    device = images.device
    shifts = torch.randint(-pad_px, pad_px + 1, (batch, 2), generator=generator, device=device)
    rows = (torch.arange(height, device=device)[None, :, None] + shifts[:, 0, None, None]).clamp_(
        0, height - 1
    )
    cols = (torch.arange(width, device=device)[None, None, :] + shifts[:, 1, None, None]).clamp_(0, width - 1)
    flat_index = (rows * width + cols).reshape(batch, 1, height * width).expand(-1, channels, -1)
    return images.flatten(2).gather(2, flat_index).view(batch, channels, height, width)
