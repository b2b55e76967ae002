"""Observation encoders: dict of observation tensors -> one feature vector per sample.

Vector keys (``state``, LeRobot joint keys ...) are flattened, concatenated in sorted key order and
normalised; each ``pixels/<cam>`` key goes through its own small conv net (DrQ / SAC-AE style).
Privileged keys (the sim's state for an asymmetric critic) are normalised on their own and read only by
``privileged``: the actor's features, and so the exported policy, never depend on them.
"""

import numpy as np
import torch
from torch import Tensor, nn

from agents.config import PixelEncoderConfig, former_encoder_flags
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


def subsample_stride(frame_px: int, image_size: int) -> int:
    """Integer stride taking ``frame_px`` frames to about ``image_size`` pixels (0: keep them)."""
    return 1 if image_size <= 0 else max(1, frame_px // image_size)


STANDARDIZE_EPS = 0.01
"""Added to an image's standard deviation (images in [-0.5, 0.5]) when ``PixelEncoderConfig.standardize``:
a flat image is not blown up into noise."""


class PixelEncoder(nn.Module):
    """uint8[B, H, W, C] -> float32[B, feature_dim]: subsampling, strided convs, linear, LayerNorm, tanh.

    Subsampling to the policy image size comes first because a conv's cost grows with the pixels it
    reads: at batch 256, one thread, 16-32-32 channels with strides 2-2-1 cost ~10 ms forward on 32 px
    images against ~70 ms on 64 px ones. It takes every ``stride``-th pixel rather than an
    average: converting and averaging the full 64 px uint8 batch cost 20-25 ms, picking then converting
    1.6 ms (measured here with other agents sharing the cores).
    """

    __jit_ignored_attributes__ = ("_shift_tables",)  # a training-time cache: not part of an exported policy

    def __init__(self, image_shape: tuple[int, int, int], cfg: PixelEncoderConfig) -> None:
        super().__init__()
        height, width, channels = image_shape
        if cfg.num_layers < 1 or cfg.channels < 1 or cfg.first_channels < 1 or cfg.feature_dim < 1:
            raise AgentError("pixel encoder needs num_layers, channels, first_channels and feature_dim >= 1")
        if not 0.0 <= cfg.color_jitter < 1.0:
            raise AgentError(f"pixel.color_jitter must be in [0, 1), got {cfg.color_jitter}")
        self.stride = subsample_stride(min(height, width), cfg.image_size)
        layers: list[nn.Module] = []
        in_channels = channels
        if cfg.patch_size < 0 or cfg.strided_layers < 0:
            raise AgentError("pixel encoder needs patch_size and strided_layers >= 0")
        strided = cfg.strided_layers
        for i in range(cfg.num_layers):
            out_channels = cfg.first_channels if i == 0 else cfg.channels
            if i == 0 and cfg.patch_size > 0:
                conv = nn.Conv2d(in_channels, out_channels, cfg.patch_size, stride=cfg.patch_size)
            else:
                conv = nn.Conv2d(in_channels, out_channels, 3, stride=2 if strided > 0 else 1)
                strided -= 1
            layers += [conv, nn.ReLU()]
            in_channels = out_channels
        self.convs = nn.Sequential(*layers)
        policy_px = self._policy_px(height, width)
        with torch.no_grad():
            try:
                flat = self.convs(torch.zeros(1, channels, *policy_px)).numel()
            except RuntimeError:
                flat = 0
        if flat == 0:
            raise AgentError(
                f"pixel encoder: {cfg.num_layers} conv layers do not fit {policy_px[0]}x{policy_px[1]} px policy images "
                f"({height}x{width} frames subsampled by {self.stride}); use fewer layers or a larger "
                "--agent.pixel.image-size"
            )
        self.project = nn.Sequential(
            nn.Linear(flat, cfg.feature_dim), nn.LayerNorm(cfg.feature_dim), nn.Tanh()
        )
        self.feature_dim = cfg.feature_dim
        self.standardize = cfg.standardize
        self.standardize_eps = STANDARDIZE_EPS
        self.image_px = policy_px
        self._shift_tables: dict[tuple, Tensor] = {}  # prepare_shifted's index maps, by frame shape

    def prepare(self, images: Tensor) -> Tensor:
        """uint8[B, H, W, C] frames -> float32[B, C, h, w] policy images in [-0.5, 0.5]."""
        if self.stride > 1:
            images = images[:, :: self.stride, :: self.stride]
        x = images.permute(0, 3, 1, 2).contiguous().to(torch.float32)  # a new tensor: in place is safe
        return x.mul_(1.0 / 255.0).sub_(0.5)

    @torch.jit.unused
    def prepare_shifted(
        self, images: Tensor, pad_px: int, generator: torch.Generator | None = None
    ) -> Tensor:
        """``random_shift_prepared(prepare(images), pad_px, generator)`` in one pass, same values.

        On the CPU, ``agents.kernels.shifted_policy_images`` reads each kept byte once and writes each float
        once. Elsewhere, subsampling, the channel move and the DrQ shift are one index per output pixel
        into the frame, through the 25 (at 2 px) shifted index maps built once: a row lookup, one gather
        of bytes and the float conversion (1.75 ms a call against 2.6-2.8 ms as separate ops at batch
        256, 64 px frames, 32 px images, one CPU thread). The shifts come from the same ``randint`` draw,
        so training is bit-identical either way.
        """
        if pad_px <= 0:
            return self.prepare(images)
        batch, height, width, channels = images.shape
        shifts = torch.randint(-pad_px, pad_px + 1, (batch, 2), generator=generator, device=images.device)
        if images.device.type == "cpu":  # one compiled loop nest, the same values (agents.kernels)
            from agents.kernels import shifted_policy_images

            out = torch.empty((batch, channels, *self._policy_px(height, width)), dtype=torch.float32)
            shifted_policy_images(images.contiguous().numpy(), shifts.numpy(), self.stride, out.numpy())
            return out
        return self._gather_shifted(images, shifts, pad_px)

    @torch.jit.unused
    def _gather_shifted(self, images: Tensor, shifts: Tensor, pad_px: int) -> Tensor:
        """``prepare_shifted``'s torch path (any device): one gather through the shift's index map."""
        batch, height, width, channels = images.shape
        table = self._shift_table(height, width, channels, pad_px, images.device)
        which = (shifts[:, 0] + pad_px) * (2 * pad_px + 1) + (shifts[:, 1] + pad_px)
        pixels = images.reshape(batch, -1).gather(1, table.index_select(0, which))
        x = pixels.view(batch, channels, *self._policy_px(height, width)).to(torch.float32)
        return x.mul_(1.0 / 255.0).sub_(0.5)

    @torch.jit.unused
    def color_jitter(self, x: Tensor, amount: float, generator: torch.Generator | None = None) -> Tensor:
        """``PixelEncoderConfig.color_jitter`` on prepared images float32[B, C, h, w] in [-0.5, 0.5]:
        a new tensor; ``amount`` 0 returns ``x``."""
        if amount <= 0:
            return x
        batch, channels = x.shape[0], x.shape[1]

        def factor(shape: tuple[int, ...], spread: float) -> Tensor:
            u = torch.rand(shape, generator=generator, device=x.device)
            return 1.0 + spread * (2.0 * u - 1.0)

        contrast = factor((batch, 1, 1, 1), amount)
        gain = factor((batch, 1, 1, 1), amount) * factor((batch, channels, 1, 1), amount / 2)
        pixels = x + 0.5
        mean = pixels.mean(dim=(1, 2, 3), keepdim=True)
        pixels = ((pixels - mean) * contrast + mean) * gain
        return pixels.clamp_(0.0, 1.0).sub_(0.5)

    def _policy_px(self, height: int, width: int) -> tuple[int, int]:
        return -(-height // self.stride), -(-width // self.stride)  # what [::stride] keeps

    @torch.jit.unused
    def _shift_table(
        self, height: int, width: int, channels: int, pad_px: int, device: torch.device
    ) -> Tensor:
        """int64[(2 pad + 1)^2, C * h * w]: for each shift (dy, dx), the flat frame index of every policy
        pixel, replicate-padded (positions clamped to the image), channels first."""
        key = (height, width, channels, pad_px, str(device))
        table = self._shift_tables.get(key)
        if table is None:
            rows_px, cols_px = self._policy_px(height, width)
            shifts = torch.arange(-pad_px, pad_px + 1, device=device)
            rows = (torch.arange(rows_px, device=device)[None, :] + shifts[:, None]).clamp(0, rows_px - 1)
            cols = (torch.arange(cols_px, device=device)[None, :] + shifts[:, None]).clamp(0, cols_px - 1)
            row_offset = rows * (self.stride * width * channels)  # [shift, h]
            col_offset = cols * (self.stride * channels)  # [shift, w]
            channel = torch.arange(channels, device=device)
            table = (
                row_offset[:, None, None, :, None]
                + col_offset[None, :, None, None, :]
                + channel[None, None, :, None, None]
            ).reshape(len(shifts) ** 2, -1)  # [dy, dx, C, h, w] -> [dy * K + dx, C * h * w]
            self._shift_tables[key] = table
        return table

    def forward(self, images: Tensor) -> Tensor:
        """Features of uint8[B, H, W, C] frames, or of float images ``prepare`` made (augmented in training)."""
        x = self.prepare(images) if images.dtype == torch.uint8 else images
        if self.standardize:
            x = x - x.mean(dim=(2, 3), keepdim=True)
            x = x / (x.square().mean(dim=(1, 2, 3), keepdim=True).sqrt() + self.standardize_eps)
        return self.project(self.convs(x).flatten(1))


class ObservationEncoder(nn.Module):
    """Encodes an observation dict into features: normalised vector part, then pixel features by camera."""

    state_keys: list[str]
    pixel_keys: list[str]
    privileged_keys: list[str]
    actor_keys: list[str]

    def __init__(
        self,
        obs_spec: ObsSpec,
        pixel_cfg: PixelEncoderConfig,
        normalize: bool = True,
        obs_clip: float = 10.0,
        normalizer: RunningNormalizer | None = None,
        privileged_keys: tuple[str, ...] = (),
    ) -> None:
        super().__init__()
        if not obs_spec:
            raise AgentError("obs_spec is empty: the agent needs at least one observation key")
        for key in privileged_keys:
            if key not in obs_spec or is_pixel_key(key):
                raise AgentError(
                    f"privileged key {key!r} must be a vector key of obs_spec ({list(obs_spec)})"
                )
        self.privileged_keys = sorted(privileged_keys)
        self.state_keys = sorted(k for k in obs_spec if not is_pixel_key(k) and k not in privileged_keys)
        self.pixel_keys = sorted(k for k in obs_spec if is_pixel_key(k))
        if not self.state_keys and not self.pixel_keys:
            raise AgentError(
                f"the actor would read no observation key: all of {list(obs_spec)} are privileged"
            )
        self.state_dim = sum(int(np.prod(obs_spec[k][0])) for k in self.state_keys)
        self.privileged_dim = sum(int(np.prod(obs_spec[k][0])) for k in self.privileged_keys)
        for key in self.pixel_keys:
            shape, dtype = obs_spec[key]
            if len(shape) != 3 or np.dtype(dtype) != np.uint8:
                raise AgentError(f"obs_spec[{key!r}] must be uint8 [H, W, C], got {np.dtype(dtype)} {shape}")
        self.normalizer = normalizer or RunningNormalizer(self.state_dim, clip=obs_clip, enabled=normalize)
        self.privileged_normalizer = RunningNormalizer(self.privileged_dim, clip=obs_clip, enabled=normalize)
        # ModuleDict names may not contain "."; camera keys never do, "/" is replaced for safety.
        self.pixel_encoders = nn.ModuleDict(
            {
                key.replace("/", "__"): PixelEncoder(_image_shape(obs_spec[key][0]), pixel_cfg)
                for key in self.pixel_keys
            }
        )
        self.feature_dim = self.state_dim + len(self.pixel_keys) * pixel_cfg.feature_dim
        self.actor_keys = [*self.state_keys, *self.pixel_keys]
        """The observation keys ``forward`` reads (what an exported policy needs)."""

    def state_vector(self, obs: dict[str, Tensor]) -> Tensor:
        """The raw (unnormalised) vector part, float32[B, state_dim]; empty [B, 0] if there is none."""
        parts = [obs[k].to(torch.float32).flatten(1) for k in self.state_keys]
        if len(parts) == 0:
            first = obs[self.pixel_keys[0]]
            return torch.zeros(first.shape[0], 0, dtype=torch.float32, device=first.device)
        return parts[0] if len(parts) == 1 else torch.cat(parts, dim=-1)

    def privileged_vector(self, obs: dict[str, Tensor]) -> Tensor:
        """The raw privileged part, float32[B, privileged_dim] (empty [B, 0] without privileged keys)."""
        first = obs[self.actor_keys[0]]
        parts = [obs[k].to(torch.float32).flatten(1) for k in self.privileged_keys]
        if len(parts) == 0:
            return torch.zeros(first.shape[0], 0, dtype=torch.float32, device=first.device)
        return torch.cat(parts, dim=-1)

    def privileged(self, obs: dict[str, Tensor]) -> Tensor:
        """Normalised privileged features float32[B, privileged_dim], for the critic only."""
        return self.privileged_normalizer(self.privileged_vector(obs))

    def pixel_encoder(self, key: str) -> PixelEncoder:
        """The conv net of pixel key ``key`` (``pixels/<cam>``)."""
        encoder = self.pixel_encoders[key.replace("/", "__")]
        assert isinstance(encoder, PixelEncoder)
        return encoder

    def prepare(self, obs: dict[str, Tensor]) -> dict[str, Tensor]:
        """``obs`` with each pixel key's frames turned into float policy images (``PixelEncoder.prepare``)."""
        prepared = dict(obs)
        for key in self.pixel_keys:
            prepared[key] = self.pixel_encoder(key).prepare(obs[key])
        return prepared

    def update_statistics(self, obs: dict[str, Tensor]) -> None:
        """Merge a training batch into the running statistics of the vector and privileged parts."""
        self.normalizer.update(self.state_vector(obs))
        if self.privileged_keys:
            self.privileged_normalizer.update(self.privileged_vector(obs))

    def forward(self, obs: dict[str, Tensor]) -> Tensor:
        """float32[B, feature_dim] actor features of a batched observation dict (privileged keys unread)."""
        parts = [self.normalizer(self.state_vector(obs))]
        for name, encoder in self.pixel_encoders.items():
            parts.append(encoder(obs[name.replace("__", "/")]))
        return parts[0] if len(parts) == 1 else torch.cat(parts, dim=-1)


def load_pixel_weights(encoder: ObservationEncoder, path: str) -> None:
    """Load pixel encoder weights saved by ``save_pixel_weights`` (or ``torch.save`` of a ``PixelEncoder``'s
    state dict, then used for every camera); AgentError names the file when it does not fit."""
    try:
        state = torch.load(path, map_location="cpu", weights_only=True)
    except (OSError, RuntimeError, ValueError) as exc:
        raise AgentError(
            f"{path}: cannot read pixel encoder weights ({str(exc).strip().splitlines()[0]})"
        ) from None
    if not isinstance(state, dict):
        raise AgentError(f"{path}: pixel encoder weights must be a state dict, got {type(state).__name__}")
    try:
        if any(key.split(".")[0] in encoder.pixel_encoders for key in state):
            encoder.pixel_encoders.load_state_dict(state)
        else:
            for module in encoder.pixel_encoders.values():
                module.load_state_dict(state)
    except RuntimeError as exc:
        # torch's message opens with "Error(s) in loading state_dict for ...:"; the next line names a tensor
        lines = [line.strip() for line in str(exc).strip().splitlines() if line.strip()]
        first_line = lines[1] if len(lines) > 1 and lines[0].endswith(":") else lines[0]
        raise AgentError(
            f"{path}: pixel encoder weights do not fit this encoder ({first_line}); pass the --agent.pixel "
            f"options they were trained with (the encoder before the patch embedding: {former_encoder_flags()})"
        ) from None


def save_pixel_weights(encoder: ObservationEncoder, path: str) -> None:
    """Write the pixel encoders' weights (all cameras) for ``PixelEncoderConfig.weights_path``."""
    torch.save(encoder.pixel_encoders.state_dict(), path)
