"""Sampler statistics: empirical frequencies vs target distributions (chi-square), PER weights vs formula."""

from __future__ import annotations

import numpy as np
import pytest
from scipy.stats import chisquare

from buffer.errors import BufferError
from buffer.samplers import PrioritizedSampler, UniformSampler, VLMMixSampler
from buffer.samplers.sum_tree import SumTree

N_DRAWS = 200_000
CAPACITY = 64


def frequencies(sampler, positions, draws=N_DRAWS, seed=0):
    pos, _ = sampler.sample(draws, np.random.default_rng(seed))
    counts = np.bincount(pos, minlength=CAPACITY)
    assert counts[np.setdiff1d(np.arange(CAPACITY), positions)].sum() == 0, "sampled an invalid position"
    return counts[positions]


def assert_matches(counts, probs):
    probs = np.asarray(probs, np.float64) / np.sum(probs)
    result = chisquare(counts, probs * counts.sum())
    assert result.pvalue > 1e-6, f"chi-square p={result.pvalue:.2e}"


def live_positions():
    positions = np.arange(50)
    return np.setdiff1d(positions, [3, 4, 5, 20])  # holes, as eviction/final rows leave


def make_per(**kw):
    return PrioritizedSampler(CAPACITY, alpha=0.6, beta_start=0.4, beta_anneal_steps=1000, eps=1e-6, **kw)


def test_sum_tree_prefix_search_and_updates():
    tree = SumTree(10)
    tree.set(np.arange(10), np.arange(10.0))
    assert tree.total == 45
    np.testing.assert_array_equal(tree.find(np.array([0.0, 0.99, 1.0, 44.9])), [1, 1, 2, 9])
    tree.set(np.array([9, 9]), np.array([5.0, 0.0]))
    assert tree.total == 36


def test_uniform_matches_uniform():
    s = UniformSampler(CAPACITY)
    s.add(np.arange(50))
    s.remove(np.array([3, 4, 5, 20]))
    live = live_positions()
    assert_matches(frequencies(s, live), np.ones(len(live)))


def test_per_matches_priorities_and_weights_match_formula():
    s = make_per()
    live = live_positions()
    s.add(live)
    td = np.random.default_rng(1).uniform(0, 3, len(live))
    s.update_priorities(live, td)
    p = (td + 1e-6) ** 0.6
    assert_matches(frequencies(s, live), p)
    for step, beta in ((0, 0.4), (500, 0.7), (5000, 1.0)):
        s.set_learner_step(step)
        pos, w = s.sample(256, np.random.default_rng(step))
        prob = p[np.searchsorted(live, pos)] / p.sum()
        expected = (len(live) * prob) ** -beta
        np.testing.assert_allclose(w, expected / expected.max(), rtol=1e-5)


def test_per_gives_new_transitions_the_max_priority_and_ignores_evicted_updates():
    s = make_per()
    s.add(np.arange(10))
    s.update_priorities(np.arange(10), np.full(10, 0.1))
    s.update_priorities(np.array([0]), np.array([4.0]))
    s.add(np.array([10]))  # new: priority of the largest TD seen (4)
    s.remove(np.array([1]))
    s.update_priorities(np.array([1]), np.array([100.0]))  # evicted meanwhile: stays out
    live = np.array([0, *range(2, 11)])
    p = np.array([4.0 + 1e-6, *([0.1 + 1e-6] * 8), 4.0 + 1e-6]) ** 0.6
    assert_matches(frequencies(s, live), p)


@pytest.mark.parametrize("step", [0, 500, 2000])
def test_vlm_mix_matches_mixture_with_lambda_warmup(step):
    s = VLMMixSampler(
        CAPACITY,
        lambda_start=0.0,
        lambda_end=0.8,
        warmup_steps=1000,
        default_score=0.5,
        score_exponent=2.0,
        score_eps=1e-3,
        beta=0.0,
    )
    live = live_positions()
    s.add(live)
    scores = np.random.default_rng(2).uniform(0, 1, len(live)).astype(np.float32)
    scored = np.arange(len(live)) % 3 != 0  # a third unscored: default score
    s.set_scores(live[scored], scores[scored])
    s.set_learner_step(step)
    lam = 0.8 * min(1.0, step / 1000)
    assert s.mix_lambda == pytest.approx(lam)
    v = (np.where(scored, scores, 0.5).astype(np.float64) + 1e-3) ** 2.0
    q = lam * v / v.sum() + (1 - lam) / len(live)
    assert_matches(frequencies(s, live, seed=step), q)


def test_vlm_mix_weights_match_formula():
    s = VLMMixSampler(
        CAPACITY,
        lambda_start=0.5,
        lambda_end=0.5,
        warmup_steps=1,
        default_score=0.5,
        score_exponent=1.0,
        score_eps=0.0,
        beta=1.0,
    )
    live = np.arange(10)
    s.add(live)
    scores = np.linspace(0.1, 1.0, 10)
    s.set_scores(live, scores)
    pos, w = s.sample(100, np.random.default_rng(0))
    q = 0.5 * scores[pos] / scores.sum() + 0.5 / 10
    np.testing.assert_allclose(w, (1 / (10 * q)) / (1 / (10 * q)).max(), rtol=1e-5)


def test_vlm_td_matches_product():
    s = make_per(score_exponent=1.0, default_score=0.5, score_eps=1e-3)
    live = live_positions()
    s.add(live)
    rng = np.random.default_rng(3)
    td = rng.uniform(0, 2, len(live))
    scores = rng.uniform(0, 1, len(live)).astype(np.float32)
    s.update_priorities(live, td)
    s.set_scores(live[::2], scores[::2])
    v = np.where(np.arange(len(live)) % 2 == 0, scores, 0.5).astype(np.float64) + 1e-3
    assert_matches(frequencies(s, live), v * (td + 1e-6) ** 0.6)


def test_per_settings_at_their_bounds():
    for alpha, beta_start in ((0.0, 1.0), (0.6, 0.0)):  # alpha 0 is uniform PER, beta 1 full correction
        PrioritizedSampler(CAPACITY, alpha=alpha, beta_start=beta_start, beta_anneal_steps=10, eps=1e-6)
    for alpha, beta_start, eps in ((-0.1, 0.4, 1e-6), (0.6, 1.5, 1e-6), (0.6, 0.4, 0.0)):
        with pytest.raises(BufferError, match="PER: need"):
            PrioritizedSampler(CAPACITY, alpha=alpha, beta_start=beta_start, beta_anneal_steps=10, eps=eps)
    assert make_per().beta == 0.4  # beta_start before the first update


def test_per_samples_a_single_low_priority_transition():
    per = make_per()
    per.add(np.array([7]))
    per.update_priorities(np.array([7]), np.array([0.01]))  # total priority below 1
    positions, weights = per.sample(4, np.random.default_rng(0))
    np.testing.assert_array_equal(positions, [7] * 4)
    np.testing.assert_array_equal(weights, np.ones(4, np.float32))


def test_per_restored_from_a_state_dict_keeps_adding_and_scoring_like_the_original():
    original = make_per(score_exponent=1.0)
    original.add(live_positions())
    original.update_priorities(np.array([0, 1]), np.array([3.0, 0.5]))
    original.set_scores(np.array([2]), np.array([0.9]))
    restored = make_per(score_exponent=1.0)
    restored.load_state_dict(original.state_dict())
    for sampler in (original, restored):
        sampler.add(np.array([60, 61]))  # new rows get the max TD priority seen before the checkpoint
        sampler.set_scores(np.array([61]), np.array([0.2]))
    a, b = original.sample(256, np.random.default_rng(1)), restored.sample(256, np.random.default_rng(1))
    np.testing.assert_array_equal(a[0], b[0])
    np.testing.assert_array_equal(a[1], b[1])


def test_sum_tree_get_reads_leaves_and_a_capacity_just_past_a_power_of_two_fits():
    tree = SumTree(5)  # 4 + 1: needs 8 leaves
    tree.set(np.arange(5), np.array([1.0, 0.0, 2.0, 0.0, 3.0]))
    np.testing.assert_array_equal(tree.get(np.array([0, 2, 4, 1])), [1.0, 2.0, 3.0, 0.0])
    assert tree.total == 6.0
    np.testing.assert_array_equal(tree.find(np.array([0.5, 1.5, 5.9])), [0, 2, 4])
