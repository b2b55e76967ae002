"""Opening recorded episode stores for reading: damaged episodes named, not fatal.

A consumer of recorded data (``vlmrl score``, the LeRobot export, prior data for training) opens the
store with ``open_recorded``, then picks the episodes to use with
``buffer.storage.integrity.intact_episodes`` (refusing damage, or skipping it with ``skip_corrupt`` and
reporting what was skipped). ``load_prior_episodes`` does both and copies the intact episodes into
a training buffer (prior data).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Sequence
from pathlib import Path

import numpy as np

from buffer.config import BufferConfig, UniformSamplerConfig
from buffer.errors import BufferError
from buffer.factory import make_sampler
from buffer.metadata import read_store_metadata
from buffer.replay_buffer import ReplayBuffer
from buffer.spec import ArraySpec, ObsSpec, build_specs
from buffer.storage.integrity import intact_episodes
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
        frame_quality=cfg.frame_quality,
        frame_cache_bytes=cfg.frame_cache_bytes,
        read_threads=cfg.read_threads,
        on_damage="record",
    )
    return ReplayBuffer(cfg, storage, make_sampler(cfg.sampler, storage.capacity))


ActionMap = Callable[[np.ndarray, Callable[[str], np.ndarray]], np.ndarray]
"""An episode's actions (steps x action size) -> the actions to store, given a reader of the episode's
observation rows by key (``vlmrl.loop.prior_data.absolute_to_agent``)."""
ObsMap = Callable[[Callable[[str], np.ndarray]], np.ndarray]
"""An observation array the target stores, made from a reader of the source episode's rows by key."""


def copy_episodes(
    source: ReplayBuffer,
    target: ReplayBuffer,
    episodes: Sequence[int],
    actions: ActionMap | None = None,
    missing_info: Sequence[str] = (),
    rebuilt: dict[str, ObsMap] | None = None,
) -> int:
    """Append live episodes of `source` to `target`, which stores the same observations, action size and
    info keys (scores are not copied: the target's scorer judges them again). Returns episodes copied.

    Args:
        actions: maps each episode's actions before they are stored (None: as they are).
        missing_info: info keys of `target` that `source` lacks, stored as zeros.
        rebuilt: observation keys of `target` made from `source`'s other arrays instead of copied.

    Raises:
        BufferError: an episode's data is damaged (nothing of it is added), or the layouts differ.
    """
    read = source.storage.read
    for e in episodes:
        start, end = source.episode_rows(e)
        rows = np.arange(start, end)

        def rows_of(key: str, rows: np.ndarray = rows) -> np.ndarray:
            return read(key, rows)

        obs = {k: rebuilt[k](rows_of) if rebuilt and k in rebuilt else rows_of(k) for k in target.obs_keys}
        steps = rows[:-1]
        info = {
            k: np.zeros(len(rows), np.float32) if k in missing_info else read(f"info/{k}", rows)
            for k in target.info_keys
        }
        action = read("action", steps)
        if actions is not None:
            action = actions(action, rows_of)
        target.add_episode(
            obs,
            action,
            read("reward", steps),
            read("terminated", steps),
            read("truncated", steps),
            info,
        )
    return len(episodes)


def load_prior_episodes(
    path: str,
    target: ReplayBuffer,
    *,
    skip_corrupt: bool,
    actions: ActionMap | None = None,
    fill_info: bool = False,
    rebuilt: dict[str, ObsMap] | None = None,
) -> tuple[int, dict[int, str]]:
    """Prior data for training (`train --prior-data`): copy the intact episodes of the recorded zarr store
    at `path` into `target` (whose arrays it must hold), every row read and checked first.

    Returns:
        (episodes copied, skipped episode -> problem); damaged episodes are skipped only with
        `skip_corrupt`, and the caller reports them (`integrity.describe_skipped`).

    Raises:
        BufferError: no store at `path`, one without an array `target` holds (it may hold more: only
            `target`'s are copied; with `fill_info` a missing info key is stored as zeros), or (without
            `skip_corrupt`) a damaged episode, named in one line.
    """
    if "://" not in path and not (Path(path) / "zarr.json").is_file():
        raise BufferError(f"{path}: no zarr store here (no zarr.json)")
    specs = (
        target.storage.specs
        if "://" in path
        else recorded_specs(path, target, fill_info, tuple(rebuilt or ()))
    )
    missing = [k for k in target.info_keys if f"info/{k}" not in specs]
    storage = ZarrStorage.open_or_create(path, specs, capacity=2, on_damage="record")
    try:
        reader = dataclasses.replace(target.cfg, prior_info_key="")  # its sampler is not a prior mix
        source = ReplayBuffer(reader, storage, make_sampler(UniformSamplerConfig(), storage.capacity))
        episodes, skipped = intact_episodes(storage, skip_corrupt=skip_corrupt)
        return copy_episodes(source, target, episodes, actions, missing, rebuilt), skipped
    finally:
        storage.close()


def recorded_specs(
    path: str, target: ReplayBuffer, fill_info: bool = False, rebuilt: Sequence[str] = ()
) -> dict[str, ArraySpec]:
    """The array specs of the store at ``path``, which must hold every array ``target`` stores (with
    ``fill_info``: every observation array); a recording may hold more (joint keys beside the state, say),
    and only ``target``'s are copied.

    Raises:
        BufferError: the store lacks one of ``target``'s observation or info arrays (named).
    """
    meta = read_store_metadata(path)
    missing = [k for k in target.obs_keys if k not in meta.obs_spec and k not in rebuilt]
    if not fill_info:
        missing += [f"info/{k}" for k in target.info_keys if k not in meta.info_keys]
    if missing:
        raise BufferError(f"{path}: the store has no {missing[0]!r}, which the buffer it goes into stores")
    return build_specs(meta.obs_spec, meta.action_dim, meta.info_keys)
