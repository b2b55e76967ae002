"""Proportional prioritised replay on a sum-tree, optionally times a VLM score factor.

PER: Schaul et al. 2016 (arXiv:1511.05952): P(i) = p_i / sum_j p_j with p_i = (|TD_i| + eps)^alpha,
weights w_i = (N P(i))^-beta / max_batch w, beta annealed linearly to 1. New transitions get the
largest TD priority seen so far, so each is replayed at least about once.
With `score_exponent` set (the VLM x |TD| variant) p_i is multiplied by (score_i + score_eps)^score_exponent.
Both factors come from `buffer.samplers.priority`.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from buffer.errors import BufferError
from buffer.samplers.priority import score_factor, td_factor
from buffer.samplers.sum_tree import SumTree
from buffer.samplers.valid_set import ValidSet


class PrioritizedSampler:
    """PER over TD errors, or over TD errors times VLM scores when `score_exponent` is given."""

    def __init__(
        self,
        capacity: int,
        *,
        alpha: float,
        beta_start: float,
        beta_anneal_steps: int,
        eps: float,
        score_exponent: float | None = None,
        default_score: float = 0.5,
        score_eps: float = 1e-3,
    ):
        if alpha < 0 or not 0 <= beta_start <= 1 or eps <= 0:
            raise BufferError(
                f"PER: need alpha >= 0, 0 <= beta_start <= 1, eps > 0; got {alpha}, {beta_start}, {eps}"
            )
        self.alpha, self.beta_start, self.eps = alpha, beta_start, eps
        self.beta_anneal_steps = max(1, beta_anneal_steps)
        self.score_exponent, self.default_score, self.score_eps = score_exponent, default_score, score_eps
        self._valid = ValidSet(capacity)
        self._tree = SumTree(capacity)
        self._td_priority = np.zeros(capacity, np.float64)  # (|TD| + eps), before alpha
        self._scores = np.full(capacity, np.nan, np.float32)
        self._max_td_priority = 1.0
        self._step = 0

    @property
    def beta(self) -> float:
        """Importance-sampling exponent at the current learner step."""
        frac = min(1.0, self._step / self.beta_anneal_steps)
        return self.beta_start + (1.0 - self.beta_start) * frac

    def _refresh(self, positions: np.ndarray) -> None:
        p = td_factor(self._td_priority[positions], self.alpha)
        if self.score_exponent is not None:
            p = p * score_factor(
                self._scores[positions], self.default_score, self.score_eps, self.score_exponent
            )
        self._tree.set(positions, np.where(self._valid.mask[positions], p, 0.0))

    def add(self, positions: np.ndarray) -> None:
        positions = np.asarray(positions, np.int64)
        self._valid.add(positions)
        self._td_priority[positions] = self._max_td_priority
        self._scores[positions] = np.nan
        self._refresh(positions)

    def remove(self, positions: np.ndarray) -> None:
        positions = np.asarray(positions, np.int64)
        self._valid.remove(positions)
        self._tree.set(positions, np.zeros(len(positions)))

    def sample(self, batch_size: int, rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
        if self._valid.count == 0 or self._tree.total <= 0:
            raise BufferError("cannot sample: the buffer holds no committed transitions yet")
        positions = self._tree.sample(batch_size, rng)
        prob = self._tree.get(positions) / self._tree.total
        w = (self._valid.count * prob) ** -self.beta
        return positions, (w / w.max()).astype(np.float32)

    def update_priorities(self, positions: np.ndarray, td_errors: np.ndarray) -> None:
        positions = np.asarray(positions, np.int64)
        td = np.abs(np.asarray(td_errors, np.float64)).reshape(-1)
        if td.shape != positions.shape:
            raise BufferError(f"update_priorities: {len(positions)} indices but {td.size} td_errors")
        if not np.all(np.isfinite(td)):
            raise BufferError("update_priorities: td_errors contain NaN or inf")
        live = self._valid.mask[positions]  # transitions evicted since they were sampled stay out
        positions, td = positions[live], td[live]
        self._td_priority[positions] = td + self.eps
        if len(td):
            self._max_td_priority = max(self._max_td_priority, float(td.max() + self.eps))
        self._refresh(positions)

    def set_scores(self, positions: np.ndarray, scores: np.ndarray) -> None:
        if self.score_exponent is None:
            return
        positions = np.asarray(positions, np.int64)
        self._scores[positions] = scores
        self._refresh(positions)

    def set_learner_step(self, step: int) -> None:
        self._step = int(step)

    def state_dict(self) -> dict[str, Any]:
        return {
            "valid": self._valid.state_dict(),
            "td_priority": self._td_priority.copy(),
            "scores": self._scores.copy(),
            "max_td_priority": self._max_td_priority,
            "step": self._step,
        }

    def load_state_dict(self, state: dict[str, Any]) -> None:
        self._valid.load_state_dict(state["valid"])
        self._td_priority = np.array(state["td_priority"], np.float64)
        self._scores = np.array(state["scores"], np.float32)
        self._max_td_priority = float(state["max_td_priority"])
        self._step = int(state["step"])
        self._tree = SumTree(len(self._td_priority))
        self._refresh(np.arange(len(self._td_priority)))
