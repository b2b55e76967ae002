"""Building buffers from configs: explicit factories, no registration by import."""

from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np

from buffer.config import (
    BufferConfig,
    PERSamplerConfig,
    PriorMixSamplerConfig,
    SamplerConfig,
    ScorePriorityConfig,
    UniformSamplerConfig,
    VLMMixSamplerConfig,
    VLMTDSamplerConfig,
)
from buffer.errors import BufferError
from buffer.replay_buffer import ReplayBuffer
from buffer.samplers import PrioritizedSampler, Sampler, UniformSampler, VLMMixSampler
from buffer.samplers.prior_mix import PriorMixSampler
from buffer.spec import ObsSpec, build_specs
from buffer.storage.jpeg_quality import check_quality
from buffer.storage.memory import MemoryStorage
from buffer.storage.protocol import Storage
from buffer.zarr_loop import settle_at_exit


def _uniform(cfg: UniformSamplerConfig, capacity: int) -> Sampler:
    return UniformSampler(capacity)


def _prioritized(cfg: PERSamplerConfig | VLMTDSamplerConfig, capacity: int) -> Sampler:
    """PER, or VLM x TD when the config also carries score priorities."""
    scores = cfg if isinstance(cfg, ScorePriorityConfig) else None
    return PrioritizedSampler(
        capacity,
        alpha=cfg.alpha,
        beta_start=cfg.beta_start,
        beta_anneal_steps=cfg.beta_anneal_steps,
        eps=cfg.eps,
        score_exponent=scores.score_exponent if scores else None,
        default_score=scores.default_score if scores else 0.5,
        score_eps=scores.score_eps if scores else 1e-3,
    )


def _vlm_mix(cfg: VLMMixSamplerConfig, capacity: int) -> Sampler:
    return VLMMixSampler(
        capacity,
        lambda_start=cfg.lambda_start,
        lambda_end=cfg.lambda_end,
        warmup_steps=cfg.warmup_steps,
        default_score=cfg.default_score,
        score_exponent=cfg.score_exponent,
        score_eps=cfg.score_eps,
        beta=cfg.beta,
    )


def _prior_mix(cfg: PriorMixSamplerConfig, capacity: int) -> Sampler:
    return PriorMixSampler(
        capacity, make_sampler(cfg.online, capacity), make_sampler(cfg.prior, capacity), cfg.prior_share
    )


SAMPLERS: dict[str, Callable[..., Sampler]] = {
    "uniform": _uniform,
    "per": _prioritized,
    "vlm_mix": _vlm_mix,
    "vlm_td": _prioritized,
    "prior_mix": _prior_mix,
}


def make_sampler(cfg: SamplerConfig | PriorMixSamplerConfig, capacity: int) -> Sampler:
    """The sampler a config names, over `capacity` ring positions."""
    if cfg.kind not in SAMPLERS:
        raise BufferError(f"unknown sampler {cfg.kind!r} (choose from {sorted(SAMPLERS)})")
    return SAMPLERS[cfg.kind](cfg, capacity)


def make_storage(
    cfg: BufferConfig,
    obs_spec: ObsSpec,
    action_dim: int,
    info_keys: Sequence[str] = ("success", "progress"),
    path: str | None = None,
) -> Storage:
    """The storage a config names. For `zarr`, an existing store at `path` is reopened (its committed
    episodes kept, a partial one discarded with a warning), otherwise created. For `memory`, a
    directory `path` holding a `MemoryStorage.save` is loaded."""
    specs = build_specs(obs_spec, action_dim, info_keys)
    check_quality(cfg.frame_quality)
    attrs = {
        "obs_spec": {k: [list(shape), np.dtype(dt).str] for k, (shape, dt) in obs_spec.items()},
        "action_dim": int(action_dim),
        "info_keys": list(info_keys),
    }
    if cfg.storage == "memory":
        if path is not None:
            from pathlib import Path

            if (Path(path) / "meta.json").exists():
                loaded = MemoryStorage.load(path)
                if loaded.specs != specs:
                    raise BufferError(f"{path}: saved buffer holds other arrays than this env declares")
                return loaded
        return MemoryStorage(specs, cfg.capacity_steps, attrs)
    if cfg.storage == "zarr":
        if path is None:
            raise BufferError("storage 'zarr' needs a path (a directory or an fsspec URL)")
        from buffer.storage.zarr_store import ZarrStorage

        # A store being reopened has its metadata checked by open_or_create: malformed metadata is one
        # line, not a traceback from inside zarr.
        settle_at_exit()  # a failed read leaves zarr tasks running: let them finish before exit, quietly
        return ZarrStorage.open_or_create(
            path,
            specs,
            capacity=cfg.capacity_steps,
            attrs=attrs,
            frames_per_shard=cfg.frames_per_shard,
            frame_codec=cfg.frame_codec,
            frame_quality=cfg.frame_quality,
            frame_cache_bytes=cfg.frame_cache_bytes,
            fsync=cfg.fsync,
            read_threads=cfg.read_threads,
        )
    raise BufferError(f"unknown storage {cfg.storage!r} (choose from ['memory', 'zarr'])")


def make_buffer(
    cfg: BufferConfig,
    obs_spec: ObsSpec,
    action_dim: int,
    info_keys: Sequence[str] = ("success", "progress"),
    path: str | None = None,
) -> ReplayBuffer:
    """A ReplayBuffer for an env with these observations (key -> (shape, dtype)), actions and info keys.

    Raises:
        BufferError: a bad config, obs spec, or a store that cannot be opened.
    """
    storage = make_storage(cfg, obs_spec, action_dim, info_keys, path)
    return ReplayBuffer(cfg, storage, make_sampler(cfg.sampler, storage.capacity))
