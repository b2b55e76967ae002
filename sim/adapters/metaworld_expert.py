"""Meta-World's own scripted policies (``metaworld.policies``) as the expert of an MT1 env.

Each MT1 task ships a hand-written policy that reads the env's full 39-d observation (hand, object and
goal positions): privileged, as the twin's scripted expert is. ``vlmrl train --demo-episodes N`` puts its
episodes in the buffer as demonstrations, and the replay experiment records them (with noisy and failed
episodes beside them) as labelled recordings for `vlmrl scorer fit`.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from sim.errors import SimError


class MetaWorldExpert:
    """The scripted policy of a ``MetaWorldEnv``'s task; ``act`` ignores the observation it is given and
    reads the env's last 39-d state, so it also drives envs whose policy sees only pixels."""

    def __init__(self, env: Any) -> None:
        from metaworld.policies import ENV_POLICY_MAP

        self.env = env.unwrapped
        task = self.env.cfg.task
        if task not in ENV_POLICY_MAP:
            raise SimError(f"metaworld task {task!r} has no scripted policy in metaworld.policies")
        policy_class: Any = ENV_POLICY_MAP[task]  # a concrete subclass of metaworld's abstract Policy
        self._policy = policy_class()
        self._low, self._high = self.env.action_space.low, self.env.action_space.high

    def reset(self) -> None:
        """Nothing to forget: Meta-World's policies act on the current state alone."""

    def act(self, obs: dict[str, np.ndarray] | None = None) -> np.ndarray:
        """The next action (end-effector move and gripper, in [-1, 1]); ``obs`` is unused."""
        action = self._policy.get_action(self.env.last_state.astype(np.float64))
        return np.clip(np.asarray(action, np.float32), self._low, self._high)
