"""Shared helpers of the buffer tests: a small env spec and a filler that writes recognisable episodes."""

from __future__ import annotations

import numpy as np

from buffer import ReplayBuffer

OBS_SPEC = {"state": ((4,), np.float32), "pixels/front": ((6, 5, 3), np.uint8)}
ACTION_DIM = 2


def step_obs(episode: int, t: int) -> dict[str, np.ndarray]:
    """Observation t of an episode: every value encodes (episode, t) so reads can be checked."""
    code = episode * 1000 + t
    frame = (np.arange(6 * 5 * 3, dtype=np.int64).reshape(6, 5, 3) + code) % 251
    return {"state": np.array([episode, t, code, 1.0], np.float32), "pixels/front": frame.astype(np.uint8)}


def fill_episode(buf: ReplayBuffer, episode: int, length: int, terminate: bool = True) -> None:
    """Add one episode step by step; reward = t, action = (episode, t)."""
    for t in range(length):
        last = t == length - 1
        buf.add_step(
            step_obs(episode, t),
            np.array([episode, t], np.float32),
            float(t),
            terminate and last,
            (not terminate) and last,
            {"success": last and terminate, "progress": t / length},
            step_obs(episode, t + 1),
        )
