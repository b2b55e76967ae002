"""Uniform sampling over committed transitions."""

from __future__ import annotations

from typing import Any

import numpy as np

from buffer.samplers.valid_set import ValidSet


class UniformSampler:
    """Every sampleable position equally likely; importance weights are all ones."""

    def __init__(self, capacity: int):
        self._valid = ValidSet(capacity)

    def add(self, positions: np.ndarray) -> None:
        self._valid.add(positions)

    def remove(self, positions: np.ndarray) -> None:
        self._valid.remove(positions)

    def sample(self, batch_size: int, rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
        return self._valid.sample(batch_size, rng), np.ones(batch_size, np.float32)

    def update_priorities(self, positions: np.ndarray, td_errors: np.ndarray) -> None:
        pass

    def set_scores(self, positions: np.ndarray, scores: np.ndarray) -> None:
        pass

    def set_learner_step(self, step: int) -> None:
        pass

    def state_dict(self) -> dict[str, Any]:
        return {"valid": self._valid.state_dict()}

    def load_state_dict(self, state: dict[str, Any]) -> None:
        self._valid.load_state_dict(state["valid"])
