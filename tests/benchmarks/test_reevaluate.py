"""benchmarks/reevaluate.py: the fresh-seed collapse figure of issue #32."""

from __future__ import annotations

import pytest
import reevaluate

from vlmrl.evaluation.episodes import EVAL_SEED_BASE, eval_seeds


def test_two_proportion_p_matches_the_textbook_z_test() -> None:
    # 60/100 against 45/100: pooled 0.525, z = 0.15 / sqrt(0.525 * 0.475 * 0.02) = 2.124, p = 0.0337.
    assert reevaluate.two_proportion_p(60, 100, 45, 100) == pytest.approx(0.0337, abs=5e-4)
    assert reevaluate.two_proportion_p(45, 100, 60, 100) == reevaluate.two_proportion_p(60, 100, 45, 100)
    assert reevaluate.two_proportion_p(30, 50, 30, 50) == pytest.approx(1.0)
    assert reevaluate.two_proportion_p(0, 100, 0, 100) == 1.0  # no spread: nothing to test


def test_fresh_seeds_are_neither_training_nor_evaluation_seeds() -> None:
    fresh = set(range(reevaluate.REEVAL_SEED_BASE, reevaluate.REEVAL_SEED_BASE + 1000))
    assert min(fresh) >= EVAL_SEED_BASE  # training seeds are below the evaluation base
    for seed in (0, 1, 4, 999, 1999):
        assert fresh.isdisjoint(eval_seeds(seed, 100))
