"""Running mean/std normalisation of vector observations, kept as buffers so export bakes it in."""

from __future__ import annotations

from typing import TYPE_CHECKING

import torch
from torch import Tensor, nn


class RunningNormalizer(nn.Module):
    """Normalises float32[B, n] with running statistics merged batch by batch (Chan et al. parallel variance).

    The statistics live in float64 buffers for precision and are saved with the module's state_dict.
    """

    if TYPE_CHECKING:  # buffers; TorchScript must not see class annotations
        mean: torch.Tensor
        var: torch.Tensor
        count: torch.Tensor

    def __init__(self, size: int, clip: float = 10.0, enabled: bool = True, eps: float = 1e-8) -> None:
        super().__init__()
        self.clip = clip
        self.enabled = enabled
        self.eps = eps
        self.register_buffer("mean", torch.zeros(size, dtype=torch.float64))
        self.register_buffer("var", torch.ones(size, dtype=torch.float64))
        self.register_buffer("count", torch.zeros((), dtype=torch.float64))

    @torch.no_grad()
    def update(self, x: Tensor) -> None:
        """Merge a batch float[B, n] into the running statistics (no-op when disabled)."""
        if not self.enabled or x.shape[0] == 0:
            return
        x = x.to(torch.float64)
        batch_count = float(x.shape[0])
        batch_mean = x.mean(dim=0)
        batch_var = x.var(dim=0, unbiased=False)
        total = self.count + batch_count
        delta = batch_mean - self.mean
        self.mean += delta * (batch_count / total)
        self.var.copy_(
            (
                self.var * self.count
                + batch_var * batch_count
                + delta.pow(2) * self.count * batch_count / total
            )
            / total
        )
        self.count.copy_(total)

    def forward(self, x: Tensor) -> Tensor:
        """(x - mean) / std clipped to +-clip, as float32; identity when disabled or before any update."""
        if not self.enabled:
            return x
        mean = self.mean.to(x.dtype)
        std = torch.sqrt(self.var + self.eps).to(x.dtype)
        return torch.clamp((x - mean) / std, -self.clip, self.clip)
