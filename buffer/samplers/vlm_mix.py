"""VLM-guided replay: a mixture of score-proportional and uniform sampling with a lambda warm-up.

q_t(i) = lambda_t * p_VLM(i) + (1 - lambda_t) / N, with p_VLM(i) proportional to
(score_i + score_eps)^score_exponent (`buffer.samplers.priority.score_factor`); transitions no clip covers
yet use `default_score`.
lambda_t goes linearly from lambda_start to lambda_end over `warmup_steps` learner steps, so early
training (when scores are few and noisy) is nearly uniform.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from buffer.errors import BufferError
from buffer.samplers.priority import score_factor
from buffer.samplers.sum_tree import SumTree
from buffer.samplers.valid_set import ValidSet


class VLMMixSampler:
    """Mixture of VLM-score-proportional and uniform sampling."""

    def __init__(
        self,
        capacity: int,
        *,
        lambda_start: float,
        lambda_end: float,
        warmup_steps: int,
        default_score: float,
        score_exponent: float,
        score_eps: float,
        beta: float,
    ):
        for name, v in (("lambda_start", lambda_start), ("lambda_end", lambda_end)):
            if not 0 <= v <= 1:
                raise BufferError(f"VLM mix sampler: {name} must be in [0, 1], got {v}")
        self.lambda_start, self.lambda_end = lambda_start, lambda_end
        self.warmup_steps = max(1, warmup_steps)
        self.default_score, self.score_exponent, self.score_eps = default_score, score_exponent, score_eps
        self.beta = beta
        self._valid = ValidSet(capacity)
        self._tree = SumTree(capacity)
        self._scores = np.full(capacity, np.nan, np.float32)
        self._step = 0

    @property
    def mix_lambda(self) -> float:
        """Weight of the VLM distribution at the current learner step."""
        frac = min(1.0, self._step / self.warmup_steps)
        return self.lambda_start + (self.lambda_end - self.lambda_start) * frac

    def _refresh(self, positions: np.ndarray) -> None:
        p = score_factor(self._scores[positions], self.default_score, self.score_eps, self.score_exponent)
        self._tree.set(positions, np.where(self._valid.mask[positions], p, 0.0))

    def add(self, positions: np.ndarray) -> None:
        positions = np.asarray(positions, np.int64)
        self._valid.add(positions)
        self._scores[positions] = np.nan
        self._refresh(positions)

    def remove(self, positions: np.ndarray) -> None:
        positions = np.asarray(positions, np.int64)
        self._valid.remove(positions)
        self._tree.set(positions, np.zeros(len(positions)))

    def sample(self, batch_size: int, rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
        lam = self.mix_lambda
        from_vlm = rng.random(batch_size) < lam
        positions = self._valid.sample(batch_size, rng)
        if from_vlm.any():
            positions[from_vlm] = self._tree.sample(int(from_vlm.sum()), rng)
        if self.beta == 0:
            return positions, np.ones(batch_size, np.float32)
        n = self._valid.count
        q = lam * self._tree.get(positions) / self._tree.total + (1 - lam) / n
        w = (n * q) ** -self.beta
        return positions, (w / w.max()).astype(np.float32)

    def update_priorities(self, positions: np.ndarray, td_errors: np.ndarray) -> None:
        pass

    def set_scores(self, positions: np.ndarray, scores: np.ndarray) -> None:
        positions = np.asarray(positions, np.int64)
        self._scores[positions] = scores
        self._refresh(positions)

    def set_learner_step(self, step: int) -> None:
        self._step = int(step)

    def state_dict(self) -> dict[str, Any]:
        return {"valid": self._valid.state_dict(), "scores": self._scores.copy(), "step": self._step}

    def load_state_dict(self, state: dict[str, Any]) -> None:
        self._valid.load_state_dict(state["valid"])
        self._scores = np.array(state["scores"], np.float32)
        self._step = int(state["step"])
        self._tree = SumTree(len(self._scores))
        self._refresh(np.arange(len(self._scores)))
