"""Fixtures for the buffer tests (helpers live in buffer_helpers.py, put on sys.path here)."""

from __future__ import annotations

import sys
from collections.abc import Callable
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent))

from buffer_helpers import ACTION_DIM, OBS_SPEC

from buffer import BufferConfig, ReplayBuffer, make_buffer


@pytest.fixture
def make(tmp_path) -> Callable[..., ReplayBuffer]:
    """make(storage, sampler_cfg, **cfg_fields) -> ReplayBuffer; zarr stores live in tmp_path."""
    made: list[ReplayBuffer] = []

    def _make(storage: str = "memory", sampler=None, name: str = "store.zarr", **fields) -> ReplayBuffer:
        kwargs = dict(storage=storage, capacity_steps=fields.pop("capacity_steps", 400), **fields)
        if sampler is not None:
            kwargs["sampler"] = sampler
        cfg = BufferConfig(**kwargs)
        path = str(tmp_path / name) if storage == "zarr" else None
        buf = make_buffer(cfg, OBS_SPEC, ACTION_DIM, path=path)
        made.append(buf)
        return buf

    yield _make
    for buf in made:
        buf.close()
