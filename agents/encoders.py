"""Observation encoders: dict of observation tensors -> one feature vector per sample.

Vector keys (``state``, LeRobot joint keys ...) are flattened, concatenated in sorted key order and
normalised; each ``pixels/<cam>`` key goes through its own small conv net (DrQ / SAC-AE style).
"""

import numpy as np
import torch
from torch import Tensor, nn

from agents.config import PixelEncoderConfig
from agents.errors import AgentError
from agents.normalizer import RunningNormalizer

ObsSpec = dict[str, tuple[tuple[int, ...], np.dtype]]
"""Observation key -> (per-sample shape, dtype), as the buffer and env describe observations."""


def is_pixel_key(key: str) -> bool:
    """True for image observation keys (``pixels/<cam>``)."""
    return key.startswith("pixels/")


def _image_shape(shape: tuple[int, ...]) -> tuple[int, int, int]:
    height, width, channels = shape
    return height, width, channels


class PixelEncoder(nn.Module):
    """uint8[B, H, W, C] -> float32[B, feature_dim]: conv stack, linear, LayerNorm, tanh."""

    def __init__(self, image_shape: tuple[int, int, int], cfg: PixelEncoderConfig) -> None:
        super().__init__()
        height, width, channels = image_shape
        layers: list[nn.Module] = []
        in_channels = channels
        for i in range(cfg.num_layers):
            layers += [nn.Conv2d(in_channels, cfg.channels, 3, stride=2 if i == 0 else 1), nn.ReLU()]
            in_channels = cfg.channels
        self.convs = nn.Sequential(*layers)
        with torch.no_grad():
            flat = self.convs(torch.zeros(1, channels, height, width)).numel()
        self.project = nn.Sequential(
            nn.Linear(flat, cfg.feature_dim), nn.LayerNorm(cfg.feature_dim), nn.Tanh()
        )
        self.feature_dim = cfg.feature_dim

    def forward(self, images: Tensor) -> Tensor:
        x = images.permute(0, 3, 1, 2).to(torch.float32) / 255.0 - 0.5
        return self.project(self.convs(x).flatten(1))


class ObservationEncoder(nn.Module):
    """Encodes an observation dict into features: normalised vector part, then pixel features by camera."""

    state_keys: list[str]
    pixel_keys: list[str]

    def __init__(
        self,
        obs_spec: ObsSpec,
        pixel_cfg: PixelEncoderConfig,
        normalize: bool = True,
        obs_clip: float = 10.0,
        normalizer: RunningNormalizer | None = None,
    ) -> None:
        super().__init__()
        if not obs_spec:
            raise AgentError("obs_spec is empty: the agent needs at least one observation key")
        self.state_keys = sorted(k for k in obs_spec if not is_pixel_key(k))
        self.pixel_keys = sorted(k for k in obs_spec if is_pixel_key(k))
        self.state_dim = sum(int(np.prod(obs_spec[k][0])) for k in self.state_keys)
        for key in self.pixel_keys:
            shape, dtype = obs_spec[key]
            if len(shape) != 3 or np.dtype(dtype) != np.uint8:
                raise AgentError(f"obs_spec[{key!r}] must be uint8 [H, W, C], got {np.dtype(dtype)} {shape}")
        self.normalizer = normalizer or RunningNormalizer(self.state_dim, clip=obs_clip, enabled=normalize)
        # ModuleDict names may not contain "."; camera keys never do, "/" is replaced for safety.
        self.pixel_encoders = nn.ModuleDict(
            {
                key.replace("/", "__"): PixelEncoder(_image_shape(obs_spec[key][0]), pixel_cfg)
                for key in self.pixel_keys
            }
        )
        self.feature_dim = self.state_dim + len(self.pixel_keys) * pixel_cfg.feature_dim

    def state_vector(self, obs: dict[str, Tensor]) -> Tensor:
        """The raw (unnormalised) vector part, float32[B, state_dim]; empty [B, 0] if there is none."""
        parts = [obs[k].to(torch.float32).flatten(1) for k in self.state_keys]
        if len(parts) == 0:
            first = obs[self.pixel_keys[0]]
            return torch.zeros(first.shape[0], 0, dtype=torch.float32, device=first.device)
        return torch.cat(parts, dim=-1)

    def forward(self, obs: dict[str, Tensor]) -> Tensor:
        """float32[B, feature_dim] features of a batched observation dict."""
        parts = [self.normalizer(self.state_vector(obs))]
        for name, encoder in self.pixel_encoders.items():
            parts.append(encoder(obs[name.replace("__", "/")]))
        return torch.cat(parts, dim=-1)
