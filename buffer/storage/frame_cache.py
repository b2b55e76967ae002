"""A least-recently-used cache of decoded frames with a budget in bytes."""

from __future__ import annotations

from collections import OrderedDict

import numpy as np


class FrameCache:
    """Decoded frames by ring position; evicts least recently used frames beyond `budget_bytes`."""

    def __init__(self, budget_bytes: int):
        self.budget_bytes = max(0, int(budget_bytes))
        self.nbytes = 0
        self._frames: OrderedDict[int, np.ndarray] = OrderedDict()
        self.hits = 0
        self.misses = 0

    def get(self, position: int) -> np.ndarray | None:
        """The cached frame, or None."""
        frame = self._frames.get(position)
        if frame is None:
            self.misses += 1
            return None
        self._frames.move_to_end(position)
        self.hits += 1
        return frame

    def put(self, position: int, frame: np.ndarray) -> None:
        """Cache a frame (if it fits the budget at all), evicting old ones."""
        if frame.nbytes > self.budget_bytes:
            return
        old = self._frames.pop(position, None)
        if old is not None:
            self.nbytes -= old.nbytes
        self._frames[position] = frame
        self.nbytes += frame.nbytes
        while self.nbytes > self.budget_bytes:
            _, dropped = self._frames.popitem(last=False)
            self.nbytes -= dropped.nbytes

    def invalidate(self, positions: range) -> None:
        """Forget frames at positions about to be overwritten."""
        for p in positions:
            old = self._frames.pop(p, None)
            if old is not None:
                self.nbytes -= old.nbytes
