"""Prior-data mixing (RLPD, Ball et al. 2023, "Efficient Online RL with Offline Data"): a fixed share of
every batch comes from designated prior data (demonstrations, a recorded store, an earlier run's buffer),
the rest from online data.

Each part has its own sampler, so any replay mode (uniform, PER, VLM mix, VLM x TD) applies to the online
part, and optionally to the prior part. Which positions are prior is decided when they are added: while
``mark_prior(True)`` is in force, newly committed transitions join the prior part. An evicted position
leaves its part; reused later, it joins the part in force then.

Importance weights: each part's sampler weights its own draws (max-normalised within the part); the mix
itself is a design choice of the learner (RLPD's symmetric sampling), not a bias to correct, so the two
parts' weights are concatenated and max-normalised over the batch, no further factor.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from buffer.errors import BufferError
from buffer.samplers.protocol import Sampler


class PriorMixSampler:
    """Draws ``round(prior_share * batch)`` positions from the prior part and the rest from the online part.

    While one part is empty, the whole batch comes from the other.
    """

    def __init__(self, capacity: int, online: Sampler, prior: Sampler, prior_share: float = 0.5):
        if not 0.0 <= prior_share <= 1.0:
            raise BufferError(f"prior mix sampler: prior_share must be in [0, 1], got {prior_share}")
        self.online, self.prior, self.prior_share = online, prior, prior_share
        self._is_prior = np.zeros(capacity, bool)
        self._is_live = np.zeros(capacity, bool)
        self._adding_prior = False

    def mark_prior(self, enabled: bool) -> None:
        """Transitions added from now on are prior data (True) or online data (False, the default)."""
        self._adding_prior = bool(enabled)

    @property
    def counts(self) -> tuple[int, int]:
        """(prior, online) sampleable positions."""
        prior = int(np.count_nonzero(self._is_live & self._is_prior))
        return prior, int(np.count_nonzero(self._is_live)) - prior

    def is_prior(self, positions: np.ndarray) -> np.ndarray:
        """bool[len(positions)]: which positions belong to the prior part."""
        return self._is_prior[np.asarray(positions, np.int64)]

    def add(self, positions: np.ndarray) -> None:
        positions = np.asarray(positions, np.int64)
        self._is_prior[positions] = self._adding_prior
        self._is_live[positions] = True
        (self.prior if self._adding_prior else self.online).add(positions)

    def promote(self, positions: np.ndarray) -> None:
        """Move live online ``positions`` into the prior part (``BufferConfig.prior_info_key``: steps the
        operator took over join the demonstrations); prior or free positions are left as they are. A
        position's online priority is not carried over: it enters the prior sampler as new data does."""
        positions = np.asarray(positions, np.int64)
        moving = positions[self._is_live[positions] & ~self._is_prior[positions]]
        if len(moving) == 0:
            return
        self.online.remove(moving)
        self._is_prior[moving] = True
        self.prior.add(moving)

    def remove(self, positions: np.ndarray) -> None:
        positions = np.asarray(positions, np.int64)
        prior = self._is_prior[positions]
        if prior.any():
            self.prior.remove(positions[prior])
        if (~prior).any():
            self.online.remove(positions[~prior])
        self._is_prior[positions] = False
        self._is_live[positions] = False

    def sample(self, batch_size: int, rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
        prior_count, online_count = self.counts
        if prior_count == 0 and online_count == 0:
            raise BufferError("prior mix sampler: nothing to sample yet")
        n_prior = round(self.prior_share * batch_size)
        if prior_count == 0:
            n_prior = 0
        elif online_count == 0:
            n_prior = batch_size
        parts = []
        if n_prior > 0:
            parts.append(self.prior.sample(n_prior, rng))
        if batch_size - n_prior > 0:
            parts.append(self.online.sample(batch_size - n_prior, rng))
        positions = np.concatenate([p for p, _ in parts])
        weights = np.concatenate([w for _, w in parts]).astype(np.float32)
        return positions, weights / weights.max()

    def _split(self, positions: np.ndarray, values: np.ndarray) -> tuple[tuple[np.ndarray, np.ndarray], ...]:
        positions, values = np.asarray(positions, np.int64), np.asarray(values)
        prior = self._is_prior[positions]
        return (positions[prior], values[prior]), (positions[~prior], values[~prior])

    def update_priorities(self, positions: np.ndarray, td_errors: np.ndarray) -> None:
        (prior_pos, prior_td), (online_pos, online_td) = self._split(positions, td_errors)
        if len(prior_pos):
            self.prior.update_priorities(prior_pos, prior_td)
        if len(online_pos):
            self.online.update_priorities(online_pos, online_td)

    def set_scores(self, positions: np.ndarray, scores: np.ndarray) -> None:
        (prior_pos, prior_scores), (online_pos, online_scores) = self._split(positions, scores)
        if len(prior_pos):
            self.prior.set_scores(prior_pos, prior_scores)
        if len(online_pos):
            self.online.set_scores(online_pos, online_scores)

    def set_learner_step(self, step: int) -> None:
        self.prior.set_learner_step(step)
        self.online.set_learner_step(step)

    def state_dict(self) -> dict[str, Any]:
        return {
            "online": self.online.state_dict(),
            "prior": self.prior.state_dict(),
            "is_prior": self._is_prior.copy(),
            "is_live": self._is_live.copy(),
            "adding_prior": self._adding_prior,
        }

    def load_state_dict(self, state: dict[str, Any]) -> None:
        self.online.load_state_dict(state["online"])
        self.prior.load_state_dict(state["prior"])
        self._is_prior = np.array(state["is_prior"], bool)
        self._is_live = np.array(state["is_live"], bool)
        self._adding_prior = bool(state["adding_prior"])
