"""Configs for the replay buffer, its storages and its samplers (tyro turns the docstrings into --help)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal


@dataclass(frozen=True, kw_only=True)
class UniformSamplerConfig:
    """Every committed transition equally likely."""

    kind: Literal["uniform"] = "uniform"
    """Sampler name (fixed)."""


@dataclass(frozen=True, kw_only=True)
class TDPriorityConfig:
    """TD-error priorities (PER, Schaul et al. 2016, arXiv:1511.05952), shared by PER and VLM x TD."""

    alpha: float = 0.6
    """TD-error exponent: p_i = (|TD_i| + eps)^alpha, P(i) = p_i / sum_j p_j."""
    beta_start: float = 0.4
    """Importance-sampling exponent at learner step 0, annealed linearly to 1."""
    beta_anneal_steps: int = 100_000
    """Learner steps over which beta goes from beta_start to 1."""
    eps: float = 1e-6
    """Added to |TD| so no transition gets zero probability."""


@dataclass(frozen=True, kw_only=True)
class ScorePriorityConfig:
    """VLM-score priorities, shared by the VLM mix and VLM x TD (``buffer.samplers.priority``)."""

    default_score: float = 0.5
    """Score assumed for transitions no clip score covers yet."""
    score_exponent: float = 1.0
    """The score factor is (score_i + score_eps) ** score_exponent."""
    score_eps: float = 1e-3
    """Added to scores so a score of 0 still leaves some probability."""


@dataclass(frozen=True, kw_only=True)
class PERSamplerConfig(TDPriorityConfig):
    """Proportional prioritised replay on TD errors (Schaul et al. 2016, arXiv:1511.05952)."""

    kind: Literal["per"] = "per"
    """Sampler name (fixed)."""


@dataclass(frozen=True, kw_only=True)
class VLMMixSamplerConfig(ScorePriorityConfig):
    """q_t = lambda_t * p_VLM + (1 - lambda_t) * uniform, lambda_t warmed up linearly; p_VLM(i) is
    proportional to the score factor."""

    kind: Literal["vlm_mix"] = "vlm_mix"
    """Sampler name (fixed)."""
    lambda_start: float = 0.0
    """Mixture weight of the VLM distribution at learner step 0."""
    lambda_end: float = 0.5
    """Mixture weight of the VLM distribution after the warm-up."""
    warmup_steps: int = 10_000
    """Learner steps over which lambda goes linearly from lambda_start to lambda_end."""
    beta: float = 0.0
    """Importance-weight exponent, weights (N q_i)^-beta; 0 keeps the VLM bias uncorrected (weights 1)."""


@dataclass(frozen=True, kw_only=True)
class VLMTDSamplerConfig(TDPriorityConfig, ScorePriorityConfig):
    """Prioritised replay on the product of the score factor and the TD priority:
    (score + score_eps)^score_exponent * (|TD| + eps)^alpha."""

    kind: Literal["vlm_td"] = "vlm_td"
    """Sampler name (fixed)."""


SamplerConfig = UniformSamplerConfig | PERSamplerConfig | VLMMixSamplerConfig | VLMTDSamplerConfig


@dataclass(frozen=True, kw_only=True)
class PriorMixSamplerConfig:
    """RLPD-style mixing: a fixed share of each batch from prior data (demonstrations, a recorded store,
    an earlier run's buffer), the rest from online data, each part drawn by its own sampler."""

    kind: Literal["prior_mix"] = "prior_mix"
    """Sampler name (fixed)."""
    prior_share: float = 0.5
    """Share of each batch drawn from the prior data (RLPD's symmetric sampling: 0.5); while one part is
    empty the whole batch comes from the other."""
    online: SamplerConfig = field(default_factory=UniformSamplerConfig)
    """How the online part is drawn (any replay mode)."""
    prior: SamplerConfig = field(default_factory=UniformSamplerConfig)
    """How the prior part is drawn."""


@dataclass(frozen=True, kw_only=True)
class BufferConfig:
    """A replay buffer: where transitions live, how they are sampled, what a batch holds."""

    storage: Literal["memory", "zarr"] = "memory"
    """`memory`: numpy ring in RAM; `zarr`: zarr v3 store at `path` (local directory or fsspec URL)."""
    capacity_steps: int = 100_000
    """Rows kept (one per transition plus one final observation per episode); oldest episodes go first."""
    sampler: SamplerConfig | PriorMixSamplerConfig = field(default_factory=UniformSamplerConfig)
    """How transitions are drawn."""
    frame_cache_bytes: int = 256 * 2**20
    """RAM budget of the zarr frame cache in bytes (decoded frames, least recently used dropped)."""
    frames_per_shard: int = 128
    """Frames per zarr shard file, at most 255 (each frame is its own inner chunk: one read, one pread)."""
    frame_codec: Literal["none", "zstd", "blosc-lz4", "blosc-zstd-bitshuffle", "jpeg"] = "none"
    """Frame compression of a new zarr store (a reopened store keeps its own). Camera noise barely
    compresses losslessly (84x84 with sigma-3 noise: 21.2 kB raw, ~20 kB zstd, ~17 kB
    blosc-zstd-bitshuffle at ~3x the decode time), so `none` reads fastest; noise-free sim renders
    shrink ~5x with `blosc-lz4`, which decodes fast. `jpeg` is lossy (every frame its own JPEG at
    `frame_quality`, through imagecodecs): ~8x smaller at quality 90, readable by plain zarr-python
    (docs/recordings.md, "Lossy frames")."""
    frame_quality: int = 90
    """JPEG quality (1..100) of `frame_codec=jpeg`, recorded in the store; ignored by lossless codecs."""
    prefetch: bool = False
    """Read the next batch in a background thread while the learner updates on this one. The next
    batch is drawn when this one is returned, so it misses an episode committed in between and, with
    TD priorities, this update's errors. Pays off when reading a batch is slow (a `jpeg` store decodes
    every frame it samples). Runs stay deterministic and `--resume` exact: the drawn batch is part of
    the buffer's state."""
    read_threads: int = 4
    """Threads reading the frames of one batch in parallel (preadv releases the GIL; cold reads wait on
    the disk, ~2x faster with 4 here); 0 or 1 reads inline."""
    fsync: bool = False
    """fsync each commit: survives power loss, not just a killed process (slower)."""
    n_step: int = 1
    """Rewards summed per sampled transition (n-step returns)."""
    gamma: float = 0.99
    """Discount used for n-step sums and the returned `discount`."""
    absorbing_terminal: bool = False
    """Treat a terminated step as entering an absorbing state that keeps paying that step's reward forever:
    a sampled transition ending there gets ``gamma**k * r_terminal / (1 - gamma)`` added to its reward (no
    bootstrap, as before). With episodes that end at success (``terminate_on_success``, a success key on the
    arm) this values success as holding it for ever, so ending an episode by succeeding is worth as much as
    an episode that runs on in success (a sparse 1 once is otherwise worth less than the entropy bonus SAC
    collects by staying alive: measured on twin reach, docs/deployable.md, "Success-terminal episodes"). Needs gamma < 1."""
    clone_info_key: str = ""
    """An info key (0/1 in the info a step returned) whose steps the learner's behaviour-cloning term clones
    too, beside an RLPD mix's prior rows (``Batch.prior``): ``intervention`` makes the actor clone the
    operator's takeovers, as HIL-SERL's does (`vlmrl finetune`). Acts only with an agent whose ``bc_weight``
    is > 0. Empty: prior rows only."""
    prior_info_key: str = ""
    """An info key (0/1, as ``clone_info_key``) whose steps join the prior part of an RLPD mix when stored
    (``buffer.samplers.prior_mix``), so they are replayed at the prior share beside the demonstrations rather
    than at their share of the robot's data: ``intervention`` puts the operator's takeovers with the
    demonstrations, as HIL-SERL stores its interventions in its demonstration buffer. Needs a prior-mix
    sampler (`vlmrl finetune --prior-data` with ``--prior-share`` > 0). Empty: steps join the online part."""
    clone_all: bool = False
    """Every sampled row is a behaviour-cloning row: the actor's loss adds ``bc_weight * mean|Q| * ||pi - a||^2``
    on the whole batch, keeping it near the data it learns from (TD3+BC's anchor, at its ratio with the
    default ``bc_weight`` 0.4). Acts only with an agent whose ``bc_weight`` is > 0."""
    frame_stack: int = 1
    """Frames stacked along the channel axis for pixel keys (earlier frames clamp at episode start)."""
    clip_length: int = 8
    """Frames per clip handed to the scorer."""
    clip_stride: int = 2
    """Steps between consecutive frames of a clip; one clip covers clip_length * clip_stride steps."""
    clip_camera: str = ""
    """Camera whose frames form clips; empty = the first `pixels/<cam>` key."""
    priority_scorer: str = ""
    """Scorer id whose clip scores drive VLM priorities; empty = every scorer's scores do."""
    aux_reward_scorer: str = ""
    """Scorer id whose auxiliary reward is added to sampled rewards; empty = none."""
    aux_reward_weight: float = 1.0
    """Multiplier of the auxiliary reward added to sampled rewards."""
    seed: int = 0
    """Seed of the sampling random generator."""
    replay_stats_every: int = 1_000
    """Sampled batches per window of replay diagnostics (``ReplayBuffer.replay_stats``: what is replayed
    against what is stored, ``buffer.replay_stats``); 0: not collected."""
