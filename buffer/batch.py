"""Typed batches handed from the replay buffer to learners (numpy, so buffer/ stays torch-free)."""

from __future__ import annotations

from typing import NamedTuple

import numpy as np


class Batch(NamedTuple):
    """A sampled batch of transitions, B rows.

    With n-step returns, ``reward`` is the discounted sum of up to n rewards and ``discount`` is
    gamma**k for the k steps actually summed (k < n when the episode ended first), times
    ``1 - terminated``, so the learner's target is ``reward + discount * V(next_obs)``.
    """

    obs: dict[str, np.ndarray]
    """Observation arrays by key (``state`` float32[B, n], ``pixels/<cam>`` uint8[B, H, W, 3 * stack])."""
    action: np.ndarray
    """float32[B, action_dim]."""
    reward: np.ndarray
    """float32[B]: env reward (plus auxiliary reward when the buffer adds it), n-step summed."""
    next_obs: dict[str, np.ndarray]
    """Observation after the (last) step, same keys and dtypes as ``obs``."""
    terminated: np.ndarray
    """float32[B]: 1.0 where the episode terminated (no bootstrap), truncation is not termination."""
    discount: np.ndarray
    """float32[B]: multiplier of the bootstrap value, gamma**k * (1 - terminated)."""
    weights: np.ndarray
    """float32[B]: importance-sampling weights (all ones for uniform sampling), max-normalised."""
    indices: np.ndarray
    """int64[B]: global transition ids, for ``update_priorities``."""
    prior: np.ndarray | None = None
    """bool[B]: rows drawn from the prior data (demonstrations, ``--prior-data``) of an RLPD mix; None when
    the buffer's sampler has no prior part. A learner's behaviour-cloning term reads it."""
