"""The valid range of every numeric option of `vlmrl train`, checked before anything runs (issue #36, item 3).

``RANGES`` holds one `Range` per numeric field of every config class a `TrainConfig` can hold (the scorer
backends of ``scorer:<name>`` included); `check_ranges` walks a config and raises one ConfigError naming the
first value outside its range, its dotted field and its command-line option::

    buffer.gamma must be in (0, 1], got 1.5 (--buffer.gamma)

A config class that gains a numeric field must add its range here: ``tests/vlmrl/test_config_ranges.py``
fails for any numeric field of a reachable class without one. Ranges say what a value can mean (a discount
in (0, 1], a size >= 1, a share in [0, 1]); rules between fields (``target_critics <= num_critics``) stay
with the checks of the code that uses them (``check_config``, ``sim.factory.validate_config``).
"""

from __future__ import annotations

import dataclasses
import functools
import math
import types
import typing
from dataclasses import dataclass
from typing import Any

from agents.config import IQLConfig, PixelEncoderConfig, SACConfig
from buffer.config import (
    BufferConfig,
    PERSamplerConfig,
    PriorMixSamplerConfig,
    VLMMixSamplerConfig,
    VLMTDSamplerConfig,
)
from sim.config import RandomizeConfig, SimConfig
from vlm.config import (
    AuxRewardConfig,
    CLIPConfig,
    HFConfig,
    LearnedConfig,
    OpenAIConfig,
    OracleConfig,
    ScorerRayConfig,
    WorkerConfig,
)
from vlmrl.errors import ConfigError


@dataclass(frozen=True)
class Range:
    """Where a numeric option's values may lie (finite always); a tuple option's every entry."""

    low: float | None = None
    high: float | None = None
    low_open: bool = False
    """``low`` itself is outside."""
    high_open: bool = False
    """``high`` itself is outside."""
    none_ok: bool = False
    """None is allowed (the option's "not set")."""

    def contains(self, value: float) -> bool:
        if not math.isfinite(value):
            return False
        if self.low is not None and (value < self.low or (self.low_open and value == self.low)):
            return False
        return not (self.high is not None and (value > self.high or (self.high_open and value == self.high)))

    def describe(self) -> str:
        """``in (0, 1]``, ``>= 1``, ``> 0`` or ``a finite number``."""
        if self.low is not None and self.high is not None:
            return f"in {'(' if self.low_open else '['}{self.low:g}, {self.high:g}{')' if self.high_open else ']'}"
        if self.low is not None:
            return f"{'>' if self.low_open else '>='} {self.low:g}"
        if self.high is not None:
            return f"{'<' if self.high_open else '<='} {self.high:g}"
        return "a finite number"


ANY = Range()
POSITIVE = Range(0, low_open=True)
NON_NEGATIVE = Range(0)
AT_LEAST_ONE = Range(1)
UNIT = Range(0, 1)
"""A share or probability: [0, 1]."""
DISCOUNT = Range(0, 1, low_open=True)
"""A discount or Polyak rate: (0, 1]."""
SEED = NON_NEGATIVE
"""numpy's generators take seeds >= 0."""
FACTOR = Range(0, none_ok=True)
"""A randomisation factor (a range around the nominal value), or None: the preset's."""

RANGES: dict[type, dict[str, Range]] = {
    SimConfig: {
        "image_size": Range(1, 2048),
        "control_hz": POSITIVE,
        "max_episode_steps": Range(1, none_ok=True),
        "max_delta_deg": POSITIVE,
        "max_delta_gripper": POSITIVE,
        "max_windup_deg": NON_NEGATIVE,  # 0: unbounded
        "max_delta_m": POSITIVE,
        "reward_radius_m": Range(0, low_open=True, none_ok=True),
    },
    RandomizeConfig: {
        "camera_pos_m": FACTOR,
        "camera_rot_deg": FACTOR,
        "camera_fovy_deg": FACTOR,
        "light_frac": FACTOR,
        "color": Range(0, 0.5, none_ok=True),
        "texture": Range(0, 1, none_ok=True),
        "cube_mass_frac": FACTOR,
        "cube_size_frac": FACTOR,
        "friction_frac": FACTOR,
        "joint_damping_frac": FACTOR,
        "gripper_force_frac": FACTOR,
        "max_latency_steps": Range(0, 2, none_ok=True),
        "joint_noise_deg": FACTOR,
        "seed_salt": SEED,
        "calibration_sigmas": NON_NEGATIVE,
    },
    PixelEncoderConfig: {
        "image_size": NON_NEGATIVE,  # 0: the frames' own size
        "patch_size": NON_NEGATIVE,  # 0: a 3x3 conv first
        "channels": AT_LEAST_ONE,
        "first_channels": AT_LEAST_ONE,
        "num_layers": AT_LEAST_ONE,
        "strided_layers": NON_NEGATIVE,
        "feature_dim": AT_LEAST_ONE,
        "shift_pad_px": NON_NEGATIVE,
        "color_jitter": Range(0, 1, high_open=True),
    },
    SACConfig: {
        "hidden_dims": AT_LEAST_ONE,
        "actor_lr": POSITIVE,
        "critic_lr": POSITIVE,
        "alpha_lr": POSITIVE,
        "init_alpha": POSITIVE,
        "target_entropy": Range(none_ok=True),
        "tau": DISCOUNT,
        "num_critics": AT_LEAST_ONE,
        "target_critics": AT_LEAST_ONE,
        "utd_ratio": AT_LEAST_ONE,
        "log_std_min": ANY,
        "log_std_max": ANY,
        "obs_clip": POSITIVE,
        "privileged_aux_weight": NON_NEGATIVE,
        "bc_weight": NON_NEGATIVE,
        "teacher_weight": NON_NEGATIVE,
        "actor_ema": UNIT,  # 0: no averaged copy
        "lr_final_fraction": Range(0, 1, low_open=True),  # 1: constant rates
        "lr_decay_updates": NON_NEGATIVE,
        "seed": SEED,
    },
    IQLConfig: {
        "hidden_dims": AT_LEAST_ONE,
        "actor_lr": POSITIVE,
        "critic_lr": POSITIVE,
        "value_lr": POSITIVE,
        "expectile": Range(0.5, 1, high_open=True),
        "temperature": NON_NEGATIVE,  # 0: behaviour cloning (equal weights)
        "max_weight": POSITIVE,
        "num_critics": AT_LEAST_ONE,
        "tau": DISCOUNT,
        "log_std_min": ANY,
        "log_std_max": ANY,
        "obs_clip": POSITIVE,
        "seed": SEED,
    },
    BufferConfig: {
        "capacity_steps": AT_LEAST_ONE,
        "frame_cache_bytes": NON_NEGATIVE,
        "frames_per_shard": Range(1, 255),
        "frame_quality": Range(1, 100),
        "read_threads": NON_NEGATIVE,
        "n_step": AT_LEAST_ONE,
        "gamma": DISCOUNT,
        "frame_stack": AT_LEAST_ONE,
        "clip_length": AT_LEAST_ONE,
        "clip_stride": AT_LEAST_ONE,
        "aux_reward_weight": NON_NEGATIVE,
        "replay_stats_every": NON_NEGATIVE,
        "seed": SEED,
    },
    PERSamplerConfig: {
        "alpha": NON_NEGATIVE,
        "beta_start": UNIT,
        "beta_anneal_steps": NON_NEGATIVE,
        "eps": POSITIVE,
    },
    VLMMixSamplerConfig: {
        "default_score": UNIT,
        "score_exponent": NON_NEGATIVE,
        "score_eps": POSITIVE,
        "lambda_start": UNIT,
        "lambda_end": UNIT,
        "warmup_steps": NON_NEGATIVE,
        "beta": UNIT,
    },
    VLMTDSamplerConfig: {
        "default_score": UNIT,
        "score_exponent": NON_NEGATIVE,
        "score_eps": POSITIVE,
        "alpha": NON_NEGATIVE,
        "beta_start": UNIT,
        "beta_anneal_steps": NON_NEGATIVE,
        "eps": POSITIVE,
    },
    PriorMixSamplerConfig: {"prior_share": UNIT},
    OracleConfig: {"noise": UNIT, "seed": SEED, "latency_s": NON_NEGATIVE},
    ScorerRayConfig: {
        "actors": NON_NEGATIVE,
        "cpus_per_actor": POSITIVE,
        "gpus_per_actor": NON_NEGATIVE,
        "max_in_flight": AT_LEAST_ONE,
        "timeout_s": POSITIVE,
    },
    HFConfig: {"num_frames": AT_LEAST_ONE, "max_image_side": NON_NEGATIVE, "batch_size": AT_LEAST_ONE},
    OpenAIConfig: {
        "replica_retry_s": NON_NEGATIVE,
        "num_frames": AT_LEAST_ONE,
        "jpeg_quality": Range(1, 100),
        "top_logprobs": AT_LEAST_ONE,
        "timeout_s": POSITIVE,
        "max_retries": NON_NEGATIVE,
        "backoff_s": NON_NEGATIVE,
        "max_concurrency": AT_LEAST_ONE,
    },
    CLIPConfig: {"projection_alpha": UNIT, "num_frames": AT_LEAST_ONE, "batch_size": AT_LEAST_ONE},
    LearnedConfig: {"batch_size": AT_LEAST_ONE},
    AuxRewardConfig: {"weight": ANY, "gamma": DISCOUNT, "threshold": Range(0, 1, none_ok=True)},
    WorkerConfig: {
        "batch_size": AT_LEAST_ONE,
        "batch_wait_s": NON_NEGATIVE,
        "max_backlog": AT_LEAST_ONE,
        "backoff_s": NON_NEGATIVE,
        "max_backoff_s": NON_NEGATIVE,
        "breaker_failures": AT_LEAST_ONE,
        "breaker_cooldown_s": NON_NEGATIVE,
        "latency_window": AT_LEAST_ONE,
    },
}
"""Config class -> numeric field -> its range (the `TrainConfig` and `RayConfig` entries are added below)."""


def register(cls: type, ranges: dict[str, Any]) -> None:
    """Add a config class's numeric field ranges to `RANGES` (`vlmrl.online.config` registers `TrainConfig`'s and
    `RayConfig`'s there, so this module does not import it: `vlmrl.online.config` calls `check_ranges`)."""
    RANGES[cls] = ranges


def option_name(path: str) -> str:
    """The command-line option of a dotted field path: ``sim.image_size`` -> ``--sim.image-size``."""
    return "--" + path.replace("_", "-")


def check_ranges(cfg: Any, prefix: str = "") -> None:
    """ConfigError in one line for the first numeric field of ``cfg`` (a config dataclass, walked into its
    nested configs) outside its range in `RANGES`: a wrong type, a non-finite number or a value out of range.

    Args:
        cfg: a `TrainConfig` (or any config class in `RANGES`).
        prefix: the dotted path of ``cfg`` inside the run's config ("" for the top).
    """
    ranges = RANGES.get(type(cfg), {})
    for f in dataclasses.fields(cfg):
        value = getattr(cfg, f.name, None)
        path = f"{prefix}{f.name}"
        if dataclasses.is_dataclass(value) and not isinstance(value, type):
            check_ranges(value, path + ".")
            continue
        valid = ranges.get(f.name)
        if valid is None:
            continue
        integer = _integer_field(type(cfg), f.name)
        entries = value if isinstance(value, tuple) else (value,)
        if isinstance(value, tuple) and not value:
            raise ConfigError(f"{path} needs at least one value ({option_name(path)})")
        for entry in entries:
            _check_value(entry, valid, integer, path, value)


def _check_value(entry: Any, valid: Range, integer: bool, path: str, value: Any) -> None:
    if entry is None and valid.none_ok:
        return
    each = " each" if isinstance(value, tuple) else ""
    kind = "a whole number" if integer else "a number"
    shown = "None" if value is None else value
    if (
        isinstance(entry, bool)
        or not isinstance(entry, int | float)
        or (integer and not isinstance(entry, int))
    ):
        raise ConfigError(f"{path} must be {kind}{each}, got {shown!r} ({option_name(path)})")
    if not valid.contains(float(entry)):
        raise ConfigError(f"{path} must be {valid.describe()}{each}, got {shown!r} ({option_name(path)})")


@functools.cache
def _integer_field(cls: type, name: str) -> bool:
    """Whether field ``name`` of ``cls`` holds whole numbers (``int``, ``int | None``, ``tuple[int, ...]``)."""
    return int in numeric_types(typing.get_type_hints(cls)[name])


def numeric_types(annotation: Any) -> set[type]:
    """The numeric types (int, float) an annotation admits, through ``X | None`` and ``tuple[X, ...]``."""
    origin = typing.get_origin(annotation)
    if origin is typing.Annotated:
        return numeric_types(typing.get_args(annotation)[0])
    if origin in (typing.Union, types.UnionType, tuple):
        return set().union(*(numeric_types(a) for a in typing.get_args(annotation) if a is not Ellipsis))
    return {annotation} & {int, float}
