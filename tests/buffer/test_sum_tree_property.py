"""The vectorised sum-tree against a plain cumulative sum, on random update sequences."""

from __future__ import annotations

import numpy as np
from hypothesis import example, given, settings
from hypothesis import strategies as st

from buffer.samplers.sum_tree import SumTree


@settings(max_examples=60, deadline=None)
@example(
    capacity=17, updates=[(0, 1.0), (1, 7.0), (8, 0.12)], probes=[0.9999999999999999]
)  # rounds up to the total
@given(
    capacity=st.integers(1, 70),
    updates=st.lists(
        st.tuples(st.integers(0, 69), st.one_of(st.just(0.0), st.floats(1e-6, 10))), min_size=1, max_size=40
    ),
    probes=st.lists(st.floats(0, 1, exclude_max=True), min_size=1, max_size=20),
)
def test_sum_tree_matches_cumsum(capacity, updates, probes):
    tree = SumTree(capacity)
    leaves = np.zeros(capacity)
    for index, value in updates:
        index %= capacity
        tree.set(np.array([index]), np.array([value]))
        leaves[index] = value
    assert np.isclose(tree.total, leaves.sum())
    if leaves.sum() > 0:
        prefix = np.array(probes) * leaves.sum()
        # A probe just under 1 can round up to the total, where no leaf's interval holds it: skip those.
        prefix = prefix[prefix < np.cumsum(leaves)[-1]]
        found = tree.find(prefix)
        expected = np.searchsorted(np.cumsum(leaves), prefix, side="right")
        # Equal, or a neighbour when the prefix sits on a boundary within float rounding.
        assert np.all(
            (found == expected) | np.isclose(np.cumsum(leaves)[np.minimum(found, expected)], prefix)
        )
        sampled = tree.sample(200, np.random.default_rng(0))
        assert np.all(leaves[sampled] > 0)
