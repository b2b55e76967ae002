"""gymnasium ids for the SO-101 twin's tasks: ``gymnasium.make("vlmrl/SO101Lift-v0")`` after `register_envs`.

Importing this module registers nothing (no registration by import, STYLE.md); call `register_envs()` once:

    import gymnasium
    from sim.registration import register_envs

    register_envs()
    env = gymnasium.make("vlmrl/SO101Lift-v0", image_size=64, sb3_keys=True, normalize_actions=True)

Keyword arguments of ``gymnasium.make`` are `SimConfig` fields (``cameras``, ``image_size``,
``action_mode``, ``reward``, ``control_hz``...) plus ``sb3_keys`` / ``keep_keys`` (`sim.wrappers.SB3Keys`)
and ``normalize_actions`` (`sim.wrappers.normalize_actions`). The registered defaults are `SimConfig`'s.
``metadata["render_fps"]`` is the control rate; ``render_mode="rgb_array"`` is the one render mode.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from typing import Any

import gymnasium

from sim import wrappers
from sim.config import SimConfig
from sim.errors import SimError
from sim.factory import make_env

ENV_IDS: dict[str, str] = {
    "vlmrl/SO101Reach-v0": "reach",
    "vlmrl/SO101Lift-v0": "lift",
    "vlmrl/SO101Push-v0": "push",
    "vlmrl/SO101Place-v0": "place",
}
"""gymnasium id -> SO-101 twin task."""
_SIM_FIELDS = frozenset(f.name for f in dataclasses.fields(SimConfig)) - {"suite", "task"}


def register_envs() -> list[str]:
    """Register `ENV_IDS` with gymnasium (idempotent); returns the ids."""
    for env_id, task in ENV_IDS.items():
        if env_id not in gymnasium.registry:
            gymnasium.register(env_id, entry_point="sim.registration:make_so101_env", kwargs={"task": task})
    return list(ENV_IDS)


def make_so101_env(
    task: str,
    render_mode: str | None = None,
    sb3_keys: bool = False,
    keep_keys: Sequence[str] | None = None,
    normalize_actions: bool = False,
    **sim: Any,
) -> gymnasium.Env:
    """gymnasium's entry point for `ENV_IDS`: the twin built from ``SimConfig(task=task, **sim)``.

    Raises:
        SimError: an unknown keyword, a bad ``SimConfig`` value, or a render mode other than rgb_array.
    """
    unknown = sorted(set(sim) - _SIM_FIELDS)
    if unknown:
        raise SimError(
            f"unknown keyword(s) {unknown} for the SO-101 twin; expected SimConfig fields, sb3_keys, keep_keys "
            "or normalize_actions"
        )
    if render_mode not in (None, "rgb_array"):
        raise SimError(f"render_mode {render_mode!r}: the twin renders 'rgb_array' only")
    if isinstance(sim.get("cameras"), list):
        sim["cameras"] = tuple(sim["cameras"])
    cfg = SimConfig(suite="so101", task=task, **sim)
    env = make_env(cfg)
    env.render_mode = render_mode
    if normalize_actions:
        env = wrappers.normalize_actions(env)
    if sb3_keys or keep_keys is not None:
        env = wrappers.SB3Keys(env, keep=keep_keys)
    return env
