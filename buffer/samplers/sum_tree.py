"""A sum-tree whose updates and prefix-sum searches are vectorised over numpy index arrays."""

from __future__ import annotations

import numpy as np


class SumTree:
    """Binary tree over `capacity` non-negative leaves; each node holds the sum of its children.

    Leaves live at [size, 2 * size) of one float64 array (size = next power of two), so an update of
    k leaves costs O(k log n) in log n numpy calls and a search of k prefix sums the same.
    """

    def __init__(self, capacity: int):
        self.capacity = capacity
        self.size = 1 << max(0, int(capacity - 1).bit_length())
        self.depth = self.size.bit_length() - 1
        self.tree = np.zeros(2 * self.size, np.float64)

    @property
    def total(self) -> float:
        """Sum of all leaves."""
        return float(self.tree[1])

    def get(self, index: np.ndarray) -> np.ndarray:
        """Leaf values at `index`."""
        return self.tree[np.asarray(index, np.int64) + self.size]

    def set(self, index: np.ndarray, values: np.ndarray) -> None:
        """Set leaves (last write wins for repeated indices) and refresh their ancestors."""
        node = np.asarray(index, np.int64) + self.size
        if node.size == 0:
            return
        self.tree[node] = values
        node = np.unique(node >> 1)
        while node[0] >= 1:
            self.tree[node] = self.tree[2 * node] + self.tree[2 * node + 1]
            if node[0] == 1:
                break
            node = np.unique(node >> 1)

    def find(self, prefix: np.ndarray) -> np.ndarray:
        """Leaf index i for each prefix sum u with sum(leaves[:i]) <= u < sum(leaves[:i+1])."""
        u = np.array(prefix, np.float64, copy=True)
        node = np.ones(len(u), np.int64)
        for _ in range(self.depth):
            left = self.tree[2 * node]
            go_right = u >= left
            u -= left * go_right
            node = 2 * node + go_right
        return node - self.size

    def sample(self, n: int, rng: np.random.Generator) -> np.ndarray:
        """`n` leaf indices drawn with replacement, each with probability leaf / total."""
        idx = self.find(rng.random(n) * self.total)
        # Float rounding can land a search on a zero leaf next to the last positive one; redraw those.
        for _ in range(8):
            bad = self.get(idx) <= 0
            if not bad.any():
                break
            idx[bad] = self.find(rng.random(int(bad.sum())) * self.total)
        return idx
