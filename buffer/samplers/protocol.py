"""The Sampler protocol: which ring positions a batch is drawn from, and their importance weights."""

from __future__ import annotations

from typing import Any, Protocol

import numpy as np


class Sampler(Protocol):
    """Draws ring positions of sampleable transitions. Positions are ints in [0, capacity).

    The buffer calls `add`/`remove` as episodes are committed/evicted (only transition starts, never an
    episode's final-observation row), under its lock; samplers are not thread-safe on their own.
    """

    def add(self, positions: np.ndarray) -> None:
        """Make positions sampleable (new transitions get the default/maximum priority)."""
        ...

    def remove(self, positions: np.ndarray) -> None:
        """Make positions unsampleable (evicted)."""
        ...

    def sample(self, batch_size: int, rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
        """Draw `batch_size` positions with replacement: (int64 positions, float32 max-normalised weights)."""
        ...

    def update_priorities(self, positions: np.ndarray, td_errors: np.ndarray) -> None:
        """Report TD errors of sampled positions (ignored by samplers that do not use them)."""
        ...

    def set_scores(self, positions: np.ndarray, scores: np.ndarray) -> None:
        """Report VLM scores in [0, 1] of positions (ignored by samplers that do not use them)."""
        ...

    def set_learner_step(self, step: int) -> None:
        """Drive annealing schedules (PER beta, VLM lambda)."""
        ...

    def state_dict(self) -> dict[str, Any]:
        """Everything needed to resume sampling exactly (numpy arrays and numbers)."""
        ...

    def load_state_dict(self, state: dict[str, Any]) -> None:
        """Restore from `state_dict`."""
        ...
