"""``StallTakeover``: the scripted expert takes over a training episode whose policy has stalled
(`vlmrl train --takeover-stall-steps N`), as a person at the arm does in HIL-SERL.

Before each step the policy would drive, it looks at the twin's tool: once the tool has moved less than
``stall_m`` over the last ``stall_steps`` steps while the task does not hold, the expert (reset there, so it
starts its approach from where the arm is) drives to the episode's end; it stops acting once the task holds,
as it does in its demonstrations. Its steps carry ``info["intervention"] = 1`` (``vlmrl.loop.sources.INTERVENTION_KEY``), so
``--buffer.prior-info-key intervention`` puts them with the demonstrations, and the cloning term learns what
the expert does from the states where the policy stopped (DAgger's labels, where they are needed).
"""

from __future__ import annotations

from collections import deque
from typing import Any

import numpy as np

from sim.experts import make_expert


class StallTakeover:
    """The expert that takes over stalled training episodes of an SO-101 twin env (see the module doc).

    Args:
        env: the training env (a ``make_env`` twin, wrapped or not); its expert is ``make_expert(env)``.
        stall_steps: the window (steps) over which the tool must move at least ``stall_m``.
        stall_m: the least movement of the tool over the window, metres.
    """

    def __init__(self, env: Any, stall_steps: int, stall_m: float) -> None:
        self.env, self.stall_steps, self.stall_m = env, stall_steps, stall_m
        self.expert = make_expert(env)
        self.tool: deque[np.ndarray] = deque(maxlen=stall_steps + 1)  # where the window's steps left the tool
        self.driving = False

    def begin(self) -> None:
        """A new episode (after its reset): the policy drives."""
        self.tool.clear()
        self.tool.append(self.env.unwrapped.sim.tcp_position())
        self.driving = False

    def drives(self, task_holds: bool) -> bool:
        """Whether the expert drives the next step (``task_holds``: the last step's success)."""
        if not self.driving and not task_holds and len(self.tool) == self.tool.maxlen:
            window = np.asarray(self.tool)
            if float(np.linalg.norm(window - window[-1], axis=1).max()) < self.stall_m:
                self.driving = True
                self.expert.reset()
        return self.driving

    def act(self, obs: Any) -> np.ndarray:
        return self.expert.act(obs)

    def stepped(self) -> None:
        """After each step: note where the tool is."""
        self.tool.append(self.env.unwrapped.sim.tcp_position())
