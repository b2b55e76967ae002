"""Configuration of the SAC learner and its observation encoders."""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass(frozen=True, kw_only=True)
class PixelEncoderConfig:
    """The small conv net that turns ``pixels/<cam>`` images into features (DrQ style)."""

    channels: int = 32
    """Feature maps per conv layer."""
    num_layers: int = 4
    """Number of 3x3 conv layers (the first has stride 2, the rest stride 1)."""
    feature_dim: int = 50
    """Size of the features after the linear + LayerNorm + tanh projection, per camera."""
    shift_pad_px: int = 4
    """DrQ random-shift augmentation: pad by this many pixels (replicate) and crop back; 0 disables it."""


@dataclass(frozen=True, kw_only=True)
class SACConfig:
    """Soft Actor-Critic (Haarnoja et al. 2018) with twin critics, target networks and auto temperature."""

    hidden_dims: tuple[int, ...] = (256, 256)
    """Hidden layer sizes of the actor and of each critic."""
    actor_lr: float = 3e-4
    """Adam learning rate of the actor."""
    critic_lr: float = 3e-4
    """Adam learning rate of the critics (and the pixel encoder, which only the critic trains)."""
    alpha_lr: float = 3e-4
    """Adam learning rate of the log temperature."""
    init_alpha: float = 1.0
    """Initial entropy temperature."""
    autotune_alpha: bool = True
    """Learn the temperature so the policy entropy tracks ``target_entropy``; otherwise keep ``init_alpha``."""
    target_entropy: float | None = None
    """Entropy target in nats; None means ``-action_dim``."""
    tau: float = 0.005
    """Polyak rate of the target critics (and target pixel encoder)."""
    utd_ratio: int = 1
    """Update-to-data ratio: gradient updates per environment step (the training loop reads it)."""
    layer_norm: bool = False
    """LayerNorm after each hidden layer of the critics (RLPD, Ball et al. 2023); helps high UTD ratios."""
    log_std_min: float = -5.0
    """Lower clamp of the actor's log standard deviation."""
    log_std_max: float = 2.0
    """Upper clamp of the actor's log standard deviation."""
    normalize_obs: bool = True
    """Normalise non-pixel observations with running mean/std statistics (updated from training batches)."""
    obs_clip: float = 10.0
    """Clip normalised observations to +-this value."""
    pixel: PixelEncoderConfig = field(default_factory=PixelEncoderConfig)
    """Encoder for pixel observations (used only when the observation spec has ``pixels/<cam>`` keys)."""
    seed: int = 0
    """Seed of network initialisation and of the agent's own sampling (actions, augmentation)."""
    device: str = "cpu"
    """Torch device of the learner."""
