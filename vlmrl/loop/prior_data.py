"""Prior data (RLPD): a recorded store's episodes copied into a run's replay buffer before it learns, marked
as the prior part of each batch when the buffer's sampler is a prior mix (``buffer.samplers.prior_mix``).

`vlmrl train --prior-data` and `vlmrl finetune --prior-data` both load it here: ``check_prior_data`` before
the run directory is kept, ``add_prior_data`` once per run (a resumed run's checkpoint already holds it).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np

from buffer.io.recorded import load_prior_episodes
from buffer.metadata import read_store_metadata
from buffer.samplers.prior_mix import PriorMixSampler
from vlmrl.errors import ConfigError
from vlmrl.loop.learner import LoopState


def check_prior_data(path: Path, obs_spec: dict[str, Any], action_dim: int, action_mode: str = "") -> None:
    """ConfigError in one line unless the store at ``path`` holds the arrays this run stores, by key name,
    and actions of this run's kind: a recording says its ``action_mode`` (``vlmrl record``: absolute
    joint targets; a `vlmrl finetune` buffer: the policy's), and its actions would mean something else to a
    run of another ``--sim.action-mode``."""
    if not Path(path).exists():
        raise ConfigError(f"--prior-data {path}: no such store")
    meta = read_store_metadata(path)  # one-line BufferError for anything that is not a vlmrl store

    def norm(spec: Any) -> tuple[tuple[int, ...], str] | None:
        return None if spec is None else (tuple(int(n) for n in spec[0]), np.dtype(spec[1]).name)

    wrong = [k for k in obs_spec if norm(meta.obs_spec.get(k)) != norm(obs_spec[k])]
    if wrong or meta.action_dim != action_dim:
        k = wrong[0] if wrong else "action"
        have = norm(meta.obs_spec.get(k)) if wrong else meta.action_dim
        want = norm(obs_spec[k]) if wrong else action_dim
        raise ConfigError(
            f"--prior-data {path}: {k!r} is {have} there, this run stores {want} (record it with the same "
            "cameras, image size and --policy-obs)"
        )
    stored_mode = meta.record.get("action_mode") or ("absolute" if "action_keys" in meta.record else None)
    if action_mode and stored_mode is not None and stored_mode != action_mode:
        raise ConfigError(
            f"--prior-data {path}: its actions are {stored_mode} (vlmrl record stores the joint targets sent, "
            f"in LeRobot units), this run's are --sim.action-mode {action_mode}; train with "
            f"--sim.action-mode {stored_mode}"
        )


def add_prior_data(buffer: Any, state: LoopState, path: Path, *, skip_corrupt: bool) -> dict[int, str]:
    """Copy the intact episodes of the store at ``path`` into ``buffer``, as its sampler's prior part when it
    is a prior mix; ``state`` records how many were added and that rows [0, ``demo_rows``) are prior.

    Returns:
        skipped episode -> problem (only with ``skip_corrupt``; the caller names them).
    """
    mix = buffer.sampler if isinstance(buffer.sampler, PriorMixSampler) else None
    if mix is not None:
        mix.mark_prior(True)
    try:
        added, skipped = load_prior_episodes(str(path), buffer, skip_corrupt=skip_corrupt)
    finally:
        if mix is not None:
            mix.mark_prior(False)
    state.prior_episodes_added = added
    state.demo_rows = buffer.storage.episodes().next_row
    return skipped
