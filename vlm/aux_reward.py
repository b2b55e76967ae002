"""Per-step auxiliary rewards from clip scores, added to the env reward (times a weight).

A clip's score judges the state at its last frame, so it becomes the potential Phi of that state (the
clip rule, ``buffer/clips.py`` and docs/ARCHITECTURE.md: callers pass each clip's last frame step).
Steps are indexed like the replay buffer: transition t goes from observation t to observation t + 1, and
an episode of n transitions has observations 0..n (the last one is the kept final ``next_obs``).

- ``shaping``: r_aux[t] = gamma * Phi(s_{t+1}) - Phi(s_t) (Ng, Harada & Russell 1999), which leaves the
  optimal policy unchanged. Phi holds the latest score until the next clip ends (0 before the first), and
  is 0 after termination (an absorbing state must have zero potential for the guarantee to hold).
- ``scaled``: r_aux[e - 1] = score on the transition that reaches a clip's last frame e (RG-VLM style);
  simpler and denser, but it can change the optimal policy.

Rewards depend on neighbouring scores, so recompute a whole episode when new scores arrive.
"""

from __future__ import annotations

import numpy as np

from vlm.config import AuxRewardConfig
from vlm.errors import VLMError


def _checked(n_steps: int, last_steps: np.ndarray, scores: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    last_steps = np.asarray(last_steps, np.int64).reshape(-1)
    scores = np.asarray(scores, np.float64).reshape(-1)
    if last_steps.shape != scores.shape:
        raise VLMError(f"{len(last_steps)} clip end steps but {len(scores)} scores")
    if n_steps < 0 or np.any(last_steps < 0) or np.any(last_steps > n_steps):
        raise VLMError(f"clip end steps must lie in [0, {n_steps}] (the episode's observations)")
    if not np.all(np.isfinite(scores)):
        raise VLMError("clip scores must be finite")
    order = np.argsort(last_steps, kind="stable")  # ties: the score listed last wins
    return last_steps[order], scores[order]


def potentials(n_steps: int, last_steps: np.ndarray, scores: np.ndarray) -> np.ndarray:
    """float64 [n_steps + 1] Phi per observation: the latest clip score at or before it, 0 before any."""
    ends, values = _checked(n_steps, last_steps, scores)
    phi = np.zeros(n_steps + 1)
    if len(ends):
        marks = np.full(n_steps + 1, -1)
        marks[ends] = np.arange(len(ends))  # later entries overwrite earlier ones at the same step
        filled = np.maximum.accumulate(marks)
        phi = np.where(filled >= 0, values[np.maximum(filled, 0)], 0.0)
    return phi


def shaping_rewards(phi: np.ndarray, gamma: float, terminated: bool) -> np.ndarray:
    """float64 [n] gamma * Phi[t + 1] - Phi[t]; Phi of a terminal last observation counts as 0."""
    nxt = np.array(phi[1:], np.float64)
    if terminated and len(nxt):
        nxt[-1] = 0.0
    return gamma * nxt - phi[:-1]


def scaled_rewards(n_steps: int, last_steps: np.ndarray, scores: np.ndarray) -> np.ndarray:
    """float64 [n_steps] the score on the transition reaching each clip's last frame (clips ending at 0
    judge the initial state, which no transition reaches, and are ignored)."""
    ends, values = _checked(n_steps, last_steps, scores)
    rewards = np.zeros(n_steps)
    keep = ends >= 1
    rewards[ends[keep] - 1] = values[keep]
    return rewards


def aux_rewards(
    cfg: AuxRewardConfig,
    n_steps: int,
    last_steps: np.ndarray,
    scores: np.ndarray,
    terminated: bool = False,
) -> np.ndarray:
    """float32 [n_steps] weighted auxiliary reward for one episode.

    Args:
        cfg: variant, weight, gamma and optional score threshold.
        n_steps: transitions in the episode.
        last_steps: each scored clip's last frame step (``ClipRequest.last_step``), in [0, n_steps].
        scores: their scores in [0, 1].
        terminated: whether the episode ended in a terminal state (not a time-limit truncation).
    """
    values = np.asarray(scores, np.float64)
    if cfg.threshold is not None:
        values = (values >= cfg.threshold).astype(np.float64)
    if cfg.kind == "shaping":
        rewards = shaping_rewards(potentials(n_steps, last_steps, values), cfg.gamma, terminated)
    elif cfg.kind == "scaled":
        rewards = scaled_rewards(n_steps, last_steps, values)
    else:
        raise VLMError(f"unknown aux reward kind {cfg.kind!r}; choose shaping or scaled")
    return (cfg.weight * rewards).astype(np.float32)


def combined_reward(env_reward: np.ndarray, aux_reward: np.ndarray, weight: float = 1.0) -> np.ndarray:
    """float32 env reward plus ``weight`` times the auxiliary reward, element-wise."""
    return (
        np.asarray(env_reward, np.float32) + np.float32(weight) * np.asarray(aux_reward, np.float32)
    ).astype(np.float32)
