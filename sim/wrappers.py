"""Wrappers that make the sim envs fit tools written elsewhere (Stable-Baselines3, generic RL code).

* `SB3Keys`: observation keys that torch module names accept. The project follows LeRobot's names
  (``elbow_flex.pos``, ``pixels/front``), and SB3's ``MultiInputPolicy`` builds one ``nn.ModuleDict`` entry
  per key, which refuses a ``.`` in a name (``check_env`` passes; model construction fails). The wrapper
  renames every key with `sb3_key` (``elbow_flex.pos`` -> ``elbow_flex_pos``, ``pixels/front`` ->
  ``pixels_front``) and can keep only some keys first (``keep=ROBOT_KEYS`` hides the sim's privileged
  ``state``, as ``vlmrl train --policy-obs robot`` does).
* `normalize_actions`: actions in [-1, 1] mapped linearly onto the env's own box (the twin's ``absolute``
  joint targets in degrees, for example), the range SAC implementations squash to.
* `PotentialShaping`: potential-based reward shaping from the privileged ``progress`` (``vlmrl train
  --reward-shaping potential``).

All are plain gymnasium wrappers: the contract env underneath (``env.unwrapped``) is unchanged.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import gymnasium
import numpy as np
from gymnasium import spaces
from gymnasium.wrappers import RescaleAction

from robot.contract import JOINT_KEYS, PIXELS_PREFIX
from sim.errors import SimError

ROBOT_KEYS: tuple[str, ...] = (*JOINT_KEYS, PIXELS_PREFIX)
"""``keep`` value for what a real arm provides: the joint keys and every ``pixels/<camera>`` key."""


def sb3_key(key: str) -> str:
    """The name `SB3Keys` gives observation ``key``: ``.`` and ``/`` become ``_``."""
    return key.replace(".", "_").replace("/", "_")


class SB3Keys(gymnasium.ObservationWrapper):
    """Dict observations renamed by `sb3_key` (optionally only the keys in ``keep``), for SB3's
    ``MultiInputPolicy``.

    Args:
        env: an env with a ``Dict`` observation space.
        keep: keys to keep before renaming; an entry ending in ``/`` keeps every key with that prefix
            (``"pixels/"``). None: all keys.

    Raises:
        SimError: the observation space is not a Dict, ``keep`` selects nothing, or two kept keys would
            get the same name.
    """

    def __init__(self, env: gymnasium.Env, keep: Sequence[str] | None = None) -> None:
        super().__init__(env)
        space = env.observation_space
        if not isinstance(space, spaces.Dict):
            raise SimError(f"SB3Keys needs a Dict observation space, got {space}")
        keys = [k for k in space.spaces if keep is None or _kept(k, keep)]
        if not keys:
            raise SimError(f"SB3Keys keep={list(keep or [])} selects none of {list(space.spaces)}")
        self.names = {key: sb3_key(key) for key in keys}
        """Original key -> the name it has in this wrapper's observations."""
        clashes = sorted({n for n in self.names.values() if list(self.names.values()).count(n) > 1})
        if clashes:
            raise SimError(f"SB3Keys: several observation keys would be named {clashes}")
        self.observation_space = spaces.Dict({self.names[k]: space.spaces[k] for k in keys})

    def observation(self, observation: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
        return {name: observation[key] for key, name in self.names.items()}


def _kept(key: str, keep: Sequence[str]) -> bool:
    return any(key == k or (k.endswith("/") and key.startswith(k)) for k in keep)


class PotentialShaping(gymnasium.Wrapper):
    """Rewards plus ``gamma * progress(s') - progress(s)``: potential-based shaping (Ng, Harada and Russell, 1999)
    with the env's privileged ``info["progress"]`` in [0, 1] as the potential, so the best policy stays the
    best one while each step tells the learner whether it got closer. A terminal step's next potential is 0
    (nothing follows it); a truncated one keeps its own (the learner bootstraps from it). ``info`` gains
    ``unshaped_reward``. ``gamma`` must be the learner's discount for the invariance to hold.

    Raises:
        SimError: ``gamma`` outside (0, 1], or an env whose ``info`` has no ``progress``.
    """

    def __init__(self, env: gymnasium.Env, gamma: float) -> None:
        super().__init__(env)
        if not 0.0 < gamma <= 1.0:
            raise SimError(f"PotentialShaping: gamma must be in (0, 1], got {gamma}")
        self.gamma = float(gamma)
        self._potential = 0.0

    def reset(self, **kwargs: Any) -> tuple[Any, dict[str, Any]]:
        obs, info = self.env.reset(**kwargs)
        self._potential = _progress(info)
        return obs, info

    def step(self, action: Any) -> tuple[Any, float, bool, bool, dict[str, Any]]:
        obs, reward, terminated, truncated, info = self.env.step(action)
        progress = _progress(info)
        shaped = float(reward) + self.gamma * (0.0 if terminated else progress) - self._potential
        self._potential = progress
        return obs, shaped, terminated, truncated, {**info, "unshaped_reward": float(reward)}


def _progress(info: dict[str, Any]) -> float:
    if "progress" not in info:
        raise SimError(f"PotentialShaping needs info['progress'] from the env, got keys {sorted(info)}")
    return float(info["progress"])


def normalize_actions(env: gymnasium.Env) -> gymnasium.Env:
    """``env`` taking actions in [-1, 1] (mapped linearly onto its action box); unchanged if it already does.

    Raises:
        SimError: the action space is not a bounded Box.
    """
    box: Any = env.action_space
    if not isinstance(box, spaces.Box) or not box.is_bounded("both"):
        raise SimError(f"normalize_actions needs a bounded Box action space, got {box}")
    if np.all(box.low == -1.0) and np.all(box.high == 1.0):
        return env
    # Scalars, not arrays: gymnasium records these arguments in ``env.spec`` and compares specs with ``==``,
    # which an array cannot answer (``gymnasium.make(env.spec)`` and ``check_env`` failed; issue #36).
    # gymnasium's annotation asks for numpy types; at run time it takes floats, as its own docs do.
    return RescaleAction(env, -1.0, 1.0)  # type: ignore[arg-type]
