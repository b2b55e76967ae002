"""``make_expert(env)``: the scripted expert of a simulated env, chosen by its suite (explicit table).

An expert has ``reset()`` (call after ``env.reset``) and ``act(obs) -> action`` in the env's action space;
it reads the simulator's privileged state, so its episodes are demonstrations, never a deployable policy.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Protocol

import numpy as np

from sim.adapters.metaworld_expert import MetaWorldExpert
from sim.errors import SimError
from sim.so101.scripted import ScriptedPolicy


class Expert(Protocol):
    """A scripted policy of one env."""

    def reset(self) -> None:
        """Forget the last episode (call after ``env.reset``)."""
        ...

    def act(self, obs: dict[str, np.ndarray] | None = None) -> np.ndarray:
        """The next action in the env's action space."""
        ...


def _so101_expert(env: Any) -> Expert:
    return ScriptedPolicy(env)


def _metaworld_expert(env: Any) -> Expert:
    return MetaWorldExpert(env)


EXPERTS: dict[str, Callable[[Any], Expert]] = {"so101": _so101_expert, "metaworld": _metaworld_expert}
"""Suite -> its scripted expert (robosuite has none)."""


def make_expert(env: Any) -> Expert:
    """The scripted expert of ``env`` (a ``make_env`` env, wrapped or not); ``SimError`` for a suite without one."""
    suite = env.unwrapped.cfg.suite
    if suite not in EXPERTS:
        raise SimError(f"sim suite {suite!r} has no scripted expert; suites with one: {sorted(EXPERTS)}")
    return EXPERTS[suite](env)
