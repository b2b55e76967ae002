"""Prior data (RLPD): a recorded store's episodes copied into a run's replay buffer before it learns, marked
as the prior part of each batch when the buffer's sampler is a prior mix (``buffer.samplers.prior_mix``).

`vlmrl train --prior-data` and `vlmrl finetune --prior-data` both load it here: ``check_prior_data`` before
the run directory is kept, ``add_prior_data`` once per run (a resumed run's checkpoint already holds it).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from buffer.io.recorded import ActionMap, ObsMap, load_prior_episodes
from buffer.metadata import read_store_metadata
from buffer.samplers.prior_mix import PriorMixSampler
from robot.contract import STATE_KEY
from vlmrl.errors import ConfigError
from vlmrl.loop.arm_actions import ActionConverter
from vlmrl.loop.learner import LoopState

CONVERTED_MODES = ("delta", "ee_delta")
"""Action modes whose runs take a recording of absolute joint targets as prior data (``absolute_to_agent``)."""


def stored_action_mode(record: dict[str, Any]) -> str | None:
    """The kind of actions a store holds: its record's ``action_mode``; ``absolute`` for a recording of an
    arm without one (``vlmrl record``: the joint targets sent); None for a training buffer."""
    return record.get("action_mode") or ("absolute" if "action_keys" in record else None)


def check_prior_data(
    path: Path,
    obs_spec: dict[str, Any],
    action_dim: int,
    action_mode: str = "",
    arm_action_dim: int | None = None,
    rebuilt: Sequence[str] = (),
) -> None:
    """ConfigError in one line unless the store at ``path`` holds the arrays this run stores, by key name,
    and actions of this run's kind: a recording says its ``action_mode`` (``vlmrl record``: absolute
    joint targets; a `vlmrl finetune` buffer: the policy's), and its actions would mean something else to a
    run of another ``--sim.action-mode``, unless the run converts an arm's absolute targets
    (``arm_action_dim`` of them, given) to its joint or end-effector deltas (``absolute_to_agent``). Keys in
    ``rebuilt`` are made from the store's other arrays, not checked."""
    if not Path(path).exists():
        raise ConfigError(f"--prior-data {path}: no such store")
    meta = read_store_metadata(path)  # one-line BufferError for anything that is not a vlmrl store
    stored_mode = stored_action_mode(meta.record)
    converted = arm_action_dim is not None and stored_mode == "absolute" and action_mode in CONVERTED_MODES
    want_dim = arm_action_dim if converted else action_dim

    def norm(spec: Any) -> tuple[tuple[int, ...], str] | None:
        return None if spec is None else (tuple(int(n) for n in spec[0]), np.dtype(spec[1]).name)

    wrong = [k for k in obs_spec if k not in rebuilt and norm(meta.obs_spec.get(k)) != norm(obs_spec[k])]
    if wrong or meta.action_dim != want_dim:
        k = wrong[0] if wrong else "action"
        have = norm(meta.obs_spec.get(k)) if wrong else meta.action_dim
        want = norm(obs_spec[k]) if wrong else want_dim
        raise ConfigError(
            f"--prior-data {path}: {k!r} is {have} there, this run stores {want} (record it with the same "
            "cameras, image size and --policy-obs)"
        )
    if converted:
        return
    if action_mode and stored_mode is not None and stored_mode != action_mode:
        raise ConfigError(
            f"--prior-data {path}: its actions are {stored_mode} (vlmrl record stores the joint targets sent, "
            f"in LeRobot units), this run's are --sim.action-mode {action_mode}; train with "
            f"--sim.action-mode {stored_mode}"
        )


def absolute_to_agent(action_keys: Sequence[str], convert: ActionConverter) -> ActionMap:
    """Recorded joint targets as a joint-delta or end-effector policy's actions: each step's move from the
    previous target (from the measured joints at the episode's first step, where ``LeRobotEnv.last_sent``
    starts) in the agent's units (``convert.to_agent``: clipped to [-1, 1], so a target that jumped further is
    stored as the largest step). ``action_keys``: the recording's, each also one of its observation keys (the
    measured joint)."""

    def map_actions(actions: np.ndarray, read: Callable[[str], np.ndarray]) -> np.ndarray:
        first = np.array([float(np.asarray(read(k))[0].reshape(-1)[0]) for k in action_keys])
        previous = np.vstack([first[None, :], actions[:-1].astype(np.float64)])
        return np.stack(
            [
                convert.to_agent(action_keys, now, before)
                for now, before in zip(actions, previous, strict=True)
            ]
        ).astype(np.float32)

    return map_actions


def joint_vector(keys: Sequence[str]) -> ObsMap:
    """An episode's ``state`` as an arm reports it: its joint keys' values side by side, in this order."""

    def rows(read: Callable[[str], np.ndarray]) -> np.ndarray:
        return np.stack([np.asarray(read(k)).reshape(-1) for k in keys], axis=1).astype(np.float32)

    return rows


def add_prior_data(
    buffer: Any,
    state: LoopState,
    path: Path,
    *,
    skip_corrupt: bool,
    convert: ActionConverter | None = None,
    fill_info: bool = False,
    joint_state: Sequence[str] | None = None,
) -> dict[int, str]:
    """Copy the intact episodes of the store at ``path`` into ``buffer``, as its sampler's prior part when it
    is a prior mix; ``state`` records how many were added and that rows [0, ``demo_rows``) are prior.

    Args:
        convert: a joint-delta or end-effector run's converter: a recording of absolute targets is converted
            to its actions (``absolute_to_agent``).
        fill_info: info keys the store lacks are stored as zeros (a recording has no takeover flags).
        joint_state: an arm's joint keys: ``state`` is the arm's joint vector in this order (``LeRobotEnv``),
            made from them where the store's ``state`` is another (a twin recording's is the sim's state).

    Returns:
        skipped episode -> problem (only with ``skip_corrupt``; the caller names them).
    """
    meta = read_store_metadata(path)
    record = meta.record
    rebuilt = None
    if joint_state is not None and STATE_KEY in buffer.obs_keys:
        stored = meta.obs_spec.get(STATE_KEY)
        if stored is None or tuple(int(n) for n in stored[0]) != tuple(buffer.storage.specs[STATE_KEY].shape):
            rebuilt = {STATE_KEY: joint_vector(joint_state)}
    actions = None
    if convert is not None and stored_action_mode(record) == "absolute":
        actions = absolute_to_agent(record["action_keys"], convert)
    mix = buffer.sampler if isinstance(buffer.sampler, PriorMixSampler) else None
    if mix is not None:
        mix.mark_prior(True)
    try:
        added, skipped = load_prior_episodes(
            str(path),
            buffer,
            skip_corrupt=skip_corrupt,
            actions=actions,
            fill_info=fill_info,
            rebuilt=rebuilt,
        )
    finally:
        if mix is not None:
            mix.mark_prior(False)
    state.prior_episodes_added = added
    state.demo_rows = buffer.storage.episodes().next_row
    return skipped
