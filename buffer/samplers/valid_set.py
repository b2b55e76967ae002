"""The set of sampleable positions, with exact uniform sampling by rejection."""

from __future__ import annotations

import numpy as np

from buffer.errors import BufferError


class ValidSet:
    """A boolean mask over ring positions, plus the high-water mark of positions ever added."""

    def __init__(self, capacity: int):
        self.mask = np.zeros(capacity, np.bool_)
        self.count = 0
        self.high = 0

    def add(self, positions: np.ndarray) -> None:
        """Mark positions valid."""
        positions = np.asarray(positions, np.int64)
        if len(positions):
            self.count += int(len(positions) - self.mask[positions].sum())
            self.mask[positions] = True
            self.high = max(self.high, int(positions.max()) + 1)

    def remove(self, positions: np.ndarray) -> None:
        """Mark positions invalid."""
        positions = np.asarray(positions, np.int64)
        self.count -= int(self.mask[positions].sum())
        self.mask[positions] = False

    def sample(self, n: int, rng: np.random.Generator) -> np.ndarray:
        """`n` valid positions uniformly with replacement (rejection over [0, high): exact, and cheap
        because whole-episode FIFO eviction leaves few holes)."""
        if self.count == 0:
            raise BufferError("cannot sample: the buffer holds no committed transitions yet")
        out = rng.integers(0, self.high, n)
        bad = ~self.mask[out]
        while bad.any():
            out[bad] = rng.integers(0, self.high, int(bad.sum()))
            bad = ~self.mask[out]
        return out

    def state_dict(self) -> dict:
        """Mask and counters."""
        return {"mask": self.mask.copy(), "count": self.count, "high": self.high}

    def load_state_dict(self, state: dict) -> None:
        """Restore from `state_dict`."""
        self.mask = np.array(state["mask"], np.bool_)
        self.count = int(state["count"])
        self.high = int(state["high"])
