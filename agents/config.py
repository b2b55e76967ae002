"""Configuration of the SAC learner and its observation encoders."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, ClassVar

FORMER_ENCODER: dict[str, int] = {"patch_size": 0, "num_layers": 3, "strided_layers": 2, "first_channels": 8}
"""``PixelEncoderConfig`` fields of the encoder before the patch embedding (3x3 convs, strides 2-2-1,
8-16-16 channels): every pixel result from before 2026-12-02 ran with it."""


def former_encoder_flags(prefix: str = "--agent.pixel") -> str:
    """The command-line options that select ``FORMER_ENCODER``."""
    return " ".join(f"{prefix}.{name.replace('_', '-')} {value}" for name, value in FORMER_ENCODER.items())


@dataclass(frozen=True, kw_only=True)
class PixelEncoderConfig:
    """The small conv net that turns ``pixels/<cam>`` images into features, shared by actor and critics.

    Sized for a CPU (issue #13): frames are subsampled to the policy image size, cut into 4x4 patches that
    one linear map embeds (a conv whose kernel and stride are the patch: ViT's and ConvNeXt's stem), then
    3x3 convs. At 64 px frames, batch 256, one thread, 128x128 MLPs, an update with the default costs
    3.1-3.6x a state update, the former default (3x3 convs with stride 2-2-1, 8-16-16 channels) 4.7-4.9x
    (three runs on the quiet 2-core Xeon, 2026-12-02);
    ``benchmarks/pixel_learning.py --cost-only`` measures it. That encoder is ``FORMER_ENCODER``.
    """

    LEGACY_DEFAULTS: ClassVar[dict[str, Any]] = {"patch_size": 0}
    """A checkpoint from before the patch embedding keeps the 3x3 first layer it was trained with
    (``vlmrl.loop.checkpoint.fill_new_fields``)."""

    image_size: int = 32
    """Policy image side in pixels: the encoder keeps every ``frame // image_size``-th pixel (at least 1)
    of each row and column, so 64 px frames become 32 px; 0 keeps the frames' own size. Separate from the
    scorer's clip size (the frames the sim renders and stores, ``--sim.image-size``)."""
    patch_size: int = 4
    """The first layer as a patch embedding: a ``patch_size`` x ``patch_size`` conv with that stride, so
    each pixel is read once (32 px images become an 8x8 grid); 0: the first layer is a 3x3 conv like the
    others."""
    channels: int = 16
    """Feature maps of every conv layer after the first."""
    first_channels: int = 16
    """Feature maps of the first conv layer (the widest image: the most expensive layer)."""
    num_layers: int = 2
    """Number of conv layers, the patch embedding included."""
    strided_layers: int = 0
    """The first this many 3x3 conv layers have stride 2, the rest stride 1 (the patch embedding's
    stride is its size)."""
    feature_dim: int = 50
    """Size of the features after the linear + LayerNorm + tanh projection, per camera."""
    shift_pad_px: int = 2
    """DrQ random-shift augmentation of the policy images: pad by this many pixels (replicate) and crop
    back at a random offset; 0 disables it (2 at 32 px is DrQ's 4 at 84 px, relatively)."""
    standardize: bool = False
    """Standardise each policy image before the convs: subtract its mean per channel, divide by its
    standard deviation (over all channels and pixels). Global changes of light and of the table's colour,
    which the twin's domain randomisation draws per episode and a real camera's exposure and white balance
    bring, then reach the convs only as what they change relative to the rest of the image. Part of the
    exported policy."""
    color_jitter: float = 0.0
    """Colour augmentation of the policy images in training updates (after the DrQ shift), per image:
    contrast about its mean, brightness, and each channel's gain, each a factor uniform in [1 - x, 1 + x]
    (the channel gains in [1 - x/2, 1 + x/2]), clipped to the pixel range. It teaches the encoder what
    a change of light, white balance or colour does not change. 0: off (the updates draw nothing)."""
    frozen: bool = False
    """Keep the conv net fixed (no gradients, half the cost of an update): for an encoder pretrained on
    the twin's own frames (``agents.pretrain``) or loaded from ``weights_path``."""
    weights_path: str = ""
    """A state dict (``torch.save``) of this encoder (as ``agents.pretrain.save_encoder`` writes) to
    start from; empty: random initialisation."""


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
    backup_entropy: bool = True
    """Include the entropy bonus ``-alpha * log pi(a'|s')`` in the critic's TD target (SAC as published). Off:
    the target is ``r + discount * min Q'(s', a')`` and entropy only shapes the actor (SERL's default), so
    staying alive earns the critic nothing by itself: episodes that end at success are then not worth less
    than ones that go on."""
    num_critics: int = 2
    """Critics in the ensemble (REDQ/RLPD use 10), all run as one batched matmul per layer."""
    target_critics: int = 2
    """Size of the random subset of critics whose minimum forms the TD target (REDQ, Chen et al. 2021);
    equal to ``num_critics`` takes the minimum over all (clipped double Q with 2)."""
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
    privileged_aux_weight: float = 0.0
    """With privileged keys (an asymmetric critic, simulation only) and a trained pixel encoder: weight of an
    auxiliary loss that makes the actor's features predict the normalised privileged state (a linear head,
    discarded at export). Without it a critic that reads the state has no reason to teach the encoder where
    the target is, and the actor, which reads only the features, cannot find it. 0: no auxiliary loss."""
    actor_reads_estimate: bool = False
    """The actor reads the auxiliary head's estimate of the normalised privileged state (needs an asymmetric
    critic and ``privileged_aux_weight`` > 0) instead of the features: a bottleneck that passes on only
    what predicts the state, not the per-episode appearance (domain randomisation) the features also
    carry. The head stays trained by the auxiliary loss only and ships inside the exported actor."""
    actor_trains_encoder: bool = False
    """Let the actor loss (and behaviour cloning) train the pixel encoder through the actor's own input, as
    end-to-end visuomotor policies do; the critics' copy of the features stays detached in that loss, so
    nothing pushes the features to raise Q. Off: the encoder learns from the critic (and auxiliary) loss
    only, as in DrQ."""
    bc_weight: float = 0.0
    """Behaviour cloning on the prior part of each batch (demonstrations, ``--prior-data``; needs an RLPD
    mix): the actor loss adds ``bc_weight * mean|Q(s, pi(s))| * ||tanh(mean(s)) - a||^2`` over the prior
    rows, so the weight is relative to the critic's scale, as in TD3+BC (Fujimoto & Gu 2021; their
    alpha 2.5 is a weight of 0.4). 0: no behaviour cloning (RLPD as published)."""
    bc_q_filter: bool = True
    """Clone a prior action only where the critics value it above the policy's own action (the Q-filter of
    Nair et al. 2018, "Overcoming Exploration in RL with Demonstrations"): a policy that has outgrown the
    demonstrations is no longer pulled back to them."""
    teacher_weight: float = 0.0
    """Distil a teacher policy into the actor (``SAC.set_teacher``; ``vlmrl train --teacher-policy``): on every
    row of each batch, the actor loss adds ``teacher_weight * mean|Q(s, pi(s))| * ||tanh(mean(s)) - t(s)||^2``,
    ``t(s)`` the teacher's action for the row's observation, read from keys the buffer stores beside the actor's
    (a state policy reading the sim's privileged state teaching a pixel actor: the asymmetric teacher-student
    scheme of privileged learning, here with the student's own visited states labelled, as DAgger does).
    0: off."""
    proposals: bool = False
    """IBRL's proposals (Hu et al. 2023, "Imitation Bootstrapped Reinforcement Learning"): once
    ``SAC.freeze_proposer()`` has kept a frozen copy of the encoder and actor (``vlmrl train --demo-updates N``
    does after its updates on the demonstrations, so the copy is their clone), the critics' target values the
    copy's action at the next state beside the actor's and takes the larger, and each training action is the
    copy's or the actor's, whichever the critics value more. Evaluation and the exported policy are the actor's
    alone. On push after 5,000 demonstration updates: 73.5% on fresh seeds from the state vector (73% without the
    proposals), 53.5% from robot observations against the recipe's 63% (results/deployable, section 32). Off: the
    plain SAC target and actions."""
    actor_ema: float = 0.0
    """Polyak rate of an averaged copy of the actor, updated after each actor step; deterministic acting
    (evaluation) and export use the copy, exploration the actor itself. It smooths the policy's
    update-to-update swings the way target critics smooth Q. 0: off (the actor is evaluated and exported)."""
    lr_final_fraction: float = 1.0
    """Linear learning-rate decay: the actor's and critics' rates (the encoder's with the critics') fall from
    ``actor_lr`` and ``critic_lr`` to this fraction of them over ``lr_decay_updates`` updates and stay there; the
    temperature's rate stays. 1: constant rates. Late in a run, smaller steps keep a policy that works from
    drifting between evaluations."""
    lr_decay_updates: int = 0
    """Updates over which the decay runs (``lr_final_fraction``). 0 with a fraction below 1: ``vlmrl train``
    sets it to the run's updates (``total_steps * utd_ratio``)."""
    seed: int = 0
    """Seed of network initialisation and of the agent's own sampling (actions, augmentation)."""
    device: str = "cpu"
    """Torch device of the learner."""


@dataclass(frozen=True, kw_only=True)
class IQLConfig:
    """Implicit Q-Learning (Kostrikov et al. 2022) for offline data; ``bc`` turns it into behaviour cloning."""

    hidden_dims: tuple[int, ...] = (256, 256)
    """Hidden layer sizes of the actor, of each Q-network and of the value network."""
    actor_lr: float = 3e-4
    """Adam learning rate of the actor."""
    critic_lr: float = 3e-4
    """Adam learning rate of the Q-networks (and the pixel encoder, which only the Q loss trains)."""
    value_lr: float = 3e-4
    """Adam learning rate of the value network."""
    expectile: float = 0.7
    """Expectile tau of the value loss, in (0.5, 1): V approaches the upper expectile of Q over the data's actions."""
    temperature: float = 3.0
    """Inverse temperature beta of advantage-weighted regression: weights exp(beta * (Q - V))."""
    max_weight: float = 100.0
    """Clip of the actor's exp-advantage weights (the paper's 100)."""
    num_critics: int = 2
    """Q-networks in the ensemble (run as one batched matmul); the target is their minimum."""
    tau: float = 0.005
    """Polyak rate of the target Q-networks (and target pixel encoder)."""
    layer_norm: bool = False
    """LayerNorm after each hidden layer of the Q- and value networks."""
    log_std_min: float = -5.0
    """Lower clamp of the actor's log standard deviation."""
    log_std_max: float = 2.0
    """Upper clamp of the actor's log standard deviation."""
    bc: bool = False
    """Behaviour cloning instead of IQL: every weight is 1 and no Q or value network is trained."""
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
