"""Evaluation episodes of a deterministic policy on seeds kept apart from the training seeds."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

EVAL_SEED_BASE = 1_000_000
"""Evaluation seeds start here; training episodes use seeds below it, so the two never share a start."""


def eval_seeds(seed: int, num_episodes: int) -> list[int]:
    """The evaluation seeds of a run: the same at every evaluation, disjoint from training seeds."""
    return [EVAL_SEED_BASE + 1000 * seed + i for i in range(num_episodes)]


@dataclass
class EpisodeRecord:
    """One evaluation episode: return, length, success, and optionally its frames and progress."""

    episode_return: float
    length: int
    success: bool
    frames: list[np.ndarray] = field(default_factory=list)
    """uint8[H, W, 3] per observation (reset included) when recorded."""
    info: dict[str, list[float]] = field(default_factory=dict)
    """Per-observation privileged info ("success", "progress") aligned with ``frames``."""


@dataclass
class EvalResult:
    """Summary of one evaluation round."""

    success_rate: float
    mean_return: float
    mean_length: float
    episodes: list[EpisodeRecord]

    def as_dict(self) -> dict[str, float]:
        """The scalar figures (for logs and curves)."""
        return {"success_rate": self.success_rate, "return": self.mean_return, "length": self.mean_length}


def run_episode(
    env: Any,
    policy: Callable[[dict[str, np.ndarray]], np.ndarray],
    seed: int,
    camera_key: str = "",
) -> EpisodeRecord:
    """Roll out one episode; records ``camera_key`` frames (``pixels/<cam>``) when given."""
    obs, info = env.reset(seed=seed)
    record = EpisodeRecord(0.0, 0, False)

    def remember(obs: dict[str, np.ndarray], info: dict[str, Any]) -> None:
        if camera_key:
            record.frames.append(np.asarray(obs[camera_key]))
            for key in ("success", "progress"):
                record.info.setdefault(key, []).append(float(info.get(key, 0.0)))

    remember(obs, info)
    while True:
        obs, reward, terminated, truncated, info = env.step(policy(obs))
        remember(obs, info)
        record.episode_return += float(reward)
        record.length += 1
        record.success = record.success or bool(info.get("success", False))
        if terminated or truncated:
            return record


def evaluate(
    env: Any,
    policy: Callable[[dict[str, np.ndarray]], np.ndarray],
    seeds: Sequence[int],
    camera_key: str = "",
    record_episodes: int = 0,
) -> EvalResult:
    """Run one episode per seed; frames are kept for the first ``record_episodes`` episodes."""
    episodes = [
        run_episode(env, policy, seed, camera_key if i < record_episodes else "")
        for i, seed in enumerate(seeds)
    ]
    return EvalResult(
        success_rate=float(np.mean([e.success for e in episodes])),
        mean_return=float(np.mean([e.episode_return for e in episodes])),
        mean_length=float(np.mean([e.length for e in episodes])),
        episodes=episodes,
    )
