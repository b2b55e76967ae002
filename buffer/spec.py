"""Per-row array specs: what a buffer stores for every step, and checks on what `add_step` is given."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np

from buffer.errors import BufferError

SCHEMA_VERSION = 1
"""Version of the on-disk layout; a store written by a newer version is refused."""

ObsSpec = Mapping[str, tuple[tuple[int, ...], np.dtype]]
"""Observation key -> (shape, dtype), as the env declares it."""


@dataclass(frozen=True)
class ArraySpec:
    """One per-row array: its name in the store, per-row shape and dtype."""

    name: str
    shape: tuple[int, ...]
    dtype: np.dtype

    @property
    def is_frame(self) -> bool:
        """Camera frames (uint8 HxWx3 under `pixels/`) go to disk; everything else stays in RAM."""
        return self.name.startswith("pixels/") and self.dtype == np.uint8 and len(self.shape) == 3

    @property
    def row_bytes(self) -> int:
        """Bytes one row takes uncompressed."""
        return int(np.prod(self.shape, dtype=np.int64)) * self.dtype.itemsize


def build_specs(obs_spec: ObsSpec, action_dim: int, info_keys: Sequence[str]) -> dict[str, ArraySpec]:
    """Specs of every per-row array for an env with these observations, actions and info keys.

    Raises:
        BufferError: a key collides with a reserved array name, or a shape/dtype is unusable.
    """
    if action_dim < 1:
        raise BufferError(f"action_dim must be >= 1, got {action_dim}")
    reserved = {"action", "reward", "terminated", "truncated", "episode_ends"}
    specs: dict[str, ArraySpec] = {}
    for key, (shape, dtype) in obs_spec.items():
        if key in reserved or key.split("/")[0] in {"info", "scores", "aux_reward"}:
            raise BufferError(f"observation key {key!r} clashes with a reserved buffer array name")
        dt = np.dtype(dtype)
        if key.startswith("pixels/") and (dt != np.uint8 or len(shape) != 3 or shape[2] != 3):
            raise BufferError(f"observation {key!r}: pixels must be uint8[H,W,3], got {dt}{list(shape)}")
        specs[key] = ArraySpec(key, tuple(int(s) for s in shape), dt)
    specs["action"] = ArraySpec("action", (action_dim,), np.dtype(np.float32))
    specs["reward"] = ArraySpec("reward", (), np.dtype(np.float32))
    specs["terminated"] = ArraySpec("terminated", (), np.dtype(np.bool_))
    specs["truncated"] = ArraySpec("truncated", (), np.dtype(np.bool_))
    for key in info_keys:
        specs[f"info/{key}"] = ArraySpec(f"info/{key}", (), np.dtype(np.float32))
    return specs


def check_value(spec: ArraySpec, value: object, where: str) -> np.ndarray:
    """`value` as an array of the spec's shape and dtype, or a BufferError naming `where`.

    Floats may come as any real dtype (they are cast); uint8 frames must be uint8; NaN/inf is refused.
    """
    arr = np.asarray(value)
    if arr.shape != spec.shape:
        raise BufferError(f"{where}: expected shape {list(spec.shape)}, got {list(arr.shape)}")
    if spec.dtype == np.uint8 and arr.dtype != np.uint8:
        raise BufferError(f"{where}: expected uint8, got {arr.dtype}")
    if spec.dtype.kind == "f":
        if arr.dtype.kind not in "fiub":
            raise BufferError(f"{where}: expected a real number array, got {arr.dtype}")
        arr = arr.astype(spec.dtype, copy=False)
        if not np.all(np.isfinite(arr)):
            raise BufferError(f"{where}: contains NaN or inf")
    elif spec.dtype == np.bool_:
        arr = arr.astype(np.bool_, copy=False)
    return arr
