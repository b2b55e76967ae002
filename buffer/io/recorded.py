"""Opening recorded episode stores for reading: damaged episodes named, not fatal.

A consumer of recorded data (``vlmrl score``, the LeRobot export, prior data for training) opens the
store with ``open_recorded``, then picks the episodes to use with
``buffer.storage.integrity.intact_episodes`` (refusing damage, or skipping it with ``skip_corrupt`` and
reporting what was skipped).
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from buffer.config import BufferConfig
from buffer.errors import BufferError
from buffer.factory import make_sampler
from buffer.replay_buffer import ReplayBuffer
from buffer.spec import ObsSpec, build_specs
from buffer.storage.zarr_store import ZarrStorage


def open_recorded(
    cfg: BufferConfig, obs_spec: ObsSpec, action_dim: int, info_keys: Sequence[str], path: str
) -> ReplayBuffer:
    """A ReplayBuffer over the existing zarr store at `path`, opened with `on_damage="record"`: episodes
    whose committed rows are missing or unreadable are listed by `storage.damaged()`, reading them
    raises, and appending to the store is refused (columns such as scores can still be written).

    Raises:
        BufferError: the store cannot be opened at all (not a store, other arrays, episode_ends lost).
    """
    if "://" not in path and not (Path(path) / "zarr.json").is_file():
        raise BufferError(f"{path}: no zarr store here (no zarr.json)")
    storage = ZarrStorage.open_or_create(
        path,
        build_specs(obs_spec, action_dim, info_keys),
        capacity=cfg.capacity_steps,
        frames_per_shard=cfg.frames_per_shard,
        frame_codec=cfg.frame_codec,
        frame_cache_bytes=cfg.frame_cache_bytes,
        read_threads=cfg.read_threads,
        on_damage="record",
    )
    return ReplayBuffer(cfg, storage, make_sampler(cfg.sampler, storage.capacity))
