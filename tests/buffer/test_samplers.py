"""Sampler statistics: empirical frequencies vs target distributions (chi-square), PER weights vs formula."""

from __future__ import annotations

import numpy as np
import pytest
from scipy.stats import chisquare

from buffer.errors import BufferError
from buffer.samplers import PrioritizedSampler, UniformSampler, VLMMixSampler
from buffer.samplers.prior_mix import PriorMixSampler
from buffer.samplers.priority import score_factor, td_factor
from buffer.samplers.sum_tree import SumTree
from buffer.samplers.valid_set import ValidSet

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


# ---- gaps that the samplers' mutation run found (docs/mutation.md, "Samplers") ----------------------------


def test_valid_set_counts_and_draws_uniformly_with_holes_and_a_full_ring():
    valid = ValidSet(4)
    valid.add(np.array([0]))
    np.testing.assert_array_equal(valid.sample(3, np.random.default_rng(0)), [0, 0, 0])  # one is enough
    valid.add(np.array([0, 1, 2, 3]))  # 0 again counts once; 3 is the ring's last position
    assert valid.count == 4
    valid.remove(np.array([1]))
    assert valid.count == 3
    valid.remove(np.array([2]))
    drawn = valid.sample(4000, np.random.default_rng(0))
    assert set(drawn.tolist()) == {0, 3}
    assert 0.45 < np.mean(drawn == 0) < 0.55  # redraws must reach position 0 too
    valid.remove(np.array([0, 3]))
    with pytest.raises(BufferError, match="cannot sample"):
        valid.sample(1, np.random.default_rng(0))


def test_prior_mix_defaults_to_online_forgets_removed_online_positions_and_fills_every_batch():
    mix = PriorMixSampler(8, UniformSampler(8), UniformSampler(8), prior_share=0.5)
    mix.add(np.array([0, 1, 2]))  # before any mark_prior: online data
    assert mix.counts == (0, 3)
    mix.mark_prior(True)
    mix.add(np.array([3]))
    mix.remove(np.array([1, 2]))  # online positions, not reused
    positions, _ = mix.sample(2, np.random.default_rng(0))  # one draw due from each part
    np.testing.assert_array_equal(np.sort(positions), [0, 3])
    positions, weights = mix.sample(64, np.random.default_rng(0))
    assert set(positions.tolist()) == {0, 3}
    assert weights.dtype == np.float32 and weights.shape == (64,)


def test_prior_mix_gives_a_per_prior_part_its_td_errors_and_resumes_adding_prior_data():
    def make() -> PriorMixSampler:
        per = PrioritizedSampler(8, alpha=1.0, beta_start=1.0, beta_anneal_steps=1, eps=1e-6)
        return PriorMixSampler(8, UniformSampler(8), per, prior_share=1.0)

    mix = make()
    mix.mark_prior(True)
    mix.add(np.array([0, 1]))
    mix.update_priorities(np.array([0, 1]), np.array([0.0, 1000.0]))
    positions, _ = mix.sample(64, np.random.default_rng(0))
    np.testing.assert_array_equal(positions, np.ones(64))  # P(0) is about 1e-9
    restored = make()
    restored.load_state_dict(mix.state_dict())  # taken while mark_prior(True) was in force
    restored.add(np.array([2]))
    assert restored.counts == (3, 0)


def test_per_zero_td_error_first_max_priority_and_a_one_step_anneal():
    per = PrioritizedSampler(CAPACITY, alpha=0.5, beta_start=1.0, beta_anneal_steps=1, eps=1e-6)
    per.add(np.array([0]))
    per.update_priorities(np.array([0]), np.array([0.0]))  # priority eps, not -eps (NaN after alpha 0.5)
    np.testing.assert_array_equal(per.sample(4, np.random.default_rng(0))[1], np.ones(4, np.float32))

    per = PrioritizedSampler(CAPACITY, alpha=1.0, beta_start=1.0, beta_anneal_steps=1, eps=1e-6)
    per.add(np.array([0]))
    per.update_priorities(np.array([0]), np.array([0.5]))
    per.add(np.array([1]))  # the largest TD priority so far is the initial 1.0
    positions, weights = per.sample(256, np.random.default_rng(0))
    assert {0, 1} <= set(positions.tolist())
    np.testing.assert_allclose(weights[positions == 1], 0.5 + 1e-6, rtol=1e-6)  # w = P(0) / P(1)

    annealed = PrioritizedSampler(CAPACITY, alpha=0.6, beta_start=0.4, beta_anneal_steps=1, eps=1e-6)
    annealed.set_learner_step(1)
    assert annealed.beta == 1.0


def test_per_refuses_to_sample_when_every_priority_is_zero():
    per = make_per(score_exponent=1.0, default_score=0.0, score_eps=0.0)
    per.add(np.array([0, 1]))
    with pytest.raises(BufferError, match="cannot sample"):
        per.sample(4, np.random.default_rng(0))


def test_priority_factors_are_float64_and_a_zero_score_stays_positive():
    factor = score_factor(np.array([0.0, np.nan], np.float32), 0.5, 1e-3, 0.5)
    assert factor.dtype == np.float64
    np.testing.assert_allclose(factor, [1e-3**0.5, 0.501**0.5])
    td = td_factor(np.array([4.0], np.float32), 0.5)
    assert td.dtype == np.float64 and td[0] == 2.0


def make_vlm_mix(beta: float) -> VLMMixSampler:
    return VLMMixSampler(
        8,
        lambda_start=1.0,
        lambda_end=1.0,
        warmup_steps=1,
        default_score=0.5,
        score_exponent=1.0,
        score_eps=1e-3,
        beta=beta,
    )


def test_vlm_mix_after_a_removal_and_a_restore_and_with_beta_zero():
    mix = make_vlm_mix(beta=0.5)
    mix.add(np.arange(4))
    mix.set_scores(np.arange(4), np.array([0.1, 0.2, 0.3, 0.4]))
    mix.remove(np.array([3]))  # not reused
    restored = make_vlm_mix(beta=0.5)
    restored.load_state_dict(mix.state_dict())  # positions 4..7 were never added
    for sampler in (mix, restored):
        positions, weights = sampler.sample(64, np.random.default_rng(0))
        assert set(positions.tolist()) <= {0, 1, 2}
        assert weights.dtype == np.float32 and np.all(np.isfinite(weights))
    flat = make_vlm_mix(beta=0.0)
    flat.add(np.arange(3))
    _, weights = flat.sample(5, np.random.default_rng(0))
    assert weights.dtype == np.float32 and weights.shape == (5,)


class ScriptedDraws:
    """Stands in for a Generator's `random`: returns the given draws in turn."""

    def __init__(self, *draws: list[float]):
        self.draws = list(draws)

    def random(self, size: int) -> np.ndarray:
        draws = self.draws.pop(0)
        assert size == len(draws)
        return np.array(draws)


def test_sum_tree_redraws_a_search_that_lands_on_a_zero_leaf():
    tree = SumTree(4)
    tree.set(np.arange(4), np.array([1.0, 1.0, 0.0, 0.0]))
    # A draw of 1.0 puts the prefix sum at the total, as float rounding can: the search ends on leaf 3.
    idx = tree.sample(1, ScriptedDraws([1.0], [0.75]))
    np.testing.assert_array_equal(idx, [1])  # the redraw: 0.75 * total = 1.5 is in leaf 1
