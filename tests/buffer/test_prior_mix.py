"""Prior-data mixing (RLPD): fixed prior share per batch, each part by its own sampler, routing, resume."""

from __future__ import annotations

import numpy as np
import pytest
from scipy.stats import chisquare

from buffer import BufferConfig, make_buffer
from buffer.config import PERSamplerConfig, PriorMixSamplerConfig
from buffer.errors import BufferError
from buffer.samplers import PrioritizedSampler, UniformSampler
from buffer.samplers.prior_mix import PriorMixSampler
from tests.buffer.buffer_helpers import ACTION_DIM, OBS_SPEC, fill_episode

CAPACITY = 64
PRIOR = np.arange(0, 10)
ONLINE = np.arange(10, 50)


def make_mix(share: float = 0.5, online=None) -> PriorMixSampler:
    mix = PriorMixSampler(CAPACITY, online or UniformSampler(CAPACITY), UniformSampler(CAPACITY), share)
    mix.mark_prior(True)
    mix.add(PRIOR)
    mix.mark_prior(False)
    mix.add(ONLINE)
    return mix


@pytest.mark.parametrize("share", [0.5, 0.25, 0.0, 1.0])
def test_every_batch_holds_the_prior_share_exactly(share: float) -> None:
    mix = make_mix(share)
    rng = np.random.default_rng(0)
    for _ in range(20):
        positions, weights = mix.sample(64, rng)
        assert np.count_nonzero(np.isin(positions, PRIOR)) == round(share * 64)
        assert np.all(np.isin(positions, np.concatenate([PRIOR, ONLINE])))
        np.testing.assert_array_equal(weights, np.ones(64, np.float32))


def test_each_part_is_drawn_uniformly_within_itself() -> None:
    mix = make_mix(0.5)
    positions, _ = mix.sample(100_000, np.random.default_rng(1))
    prior_counts = np.bincount(positions, minlength=CAPACITY)[PRIOR]
    online_counts = np.bincount(positions, minlength=CAPACITY)[ONLINE]
    assert prior_counts.sum() == online_counts.sum() == 50_000
    assert chisquare(prior_counts).pvalue > 1e-6 and chisquare(online_counts).pvalue > 1e-6
    assert prior_counts.mean() > 3 * online_counts.mean()  # 10 prior rows get as many draws as 40 online


def test_an_empty_part_gives_the_whole_batch_to_the_other() -> None:
    mix = PriorMixSampler(CAPACITY, UniformSampler(CAPACITY), UniformSampler(CAPACITY), 0.5)
    with pytest.raises(BufferError, match="nothing to sample"):
        mix.sample(4, np.random.default_rng(0))
    mix.add(ONLINE)  # online only (no demonstrations yet)
    positions, _ = mix.sample(32, np.random.default_rng(0))
    assert np.all(np.isin(positions, ONLINE))
    mix.remove(ONLINE)
    mix.mark_prior(True)
    mix.add(PRIOR)
    positions, _ = mix.sample(32, np.random.default_rng(0))
    assert np.all(np.isin(positions, PRIOR))


def test_evicted_prior_positions_reused_later_join_the_online_part() -> None:
    mix = make_mix(0.5)
    mix.remove(PRIOR[:5])
    mix.add(PRIOR[:5])  # mark_prior(False) is in force
    assert mix.counts == (5, 45)
    assert not mix.is_prior(PRIOR[:5]).any() and mix.is_prior(PRIOR[5:]).all()


def test_td_errors_reach_only_the_part_that_holds_the_position() -> None:
    per = PrioritizedSampler(CAPACITY, alpha=1.0, beta_start=0.0, beta_anneal_steps=1, eps=1e-6)
    mix = make_mix(0.5, online=per)
    # Online position 10 gets all the TD error; prior TD errors go to the uniform prior part (ignored).
    td = np.full(len(ONLINE), 1e-3)
    td[0] = 100.0
    mix.update_priorities(np.concatenate([PRIOR, ONLINE]), np.concatenate([np.full(10, 50.0), td]))
    positions, weights = mix.sample(2000, np.random.default_rng(2))
    online = positions[~np.isin(positions, PRIOR)]
    assert np.mean(online == 10) > 0.9
    prior_counts = np.bincount(positions[np.isin(positions, PRIOR)], minlength=10)
    assert chisquare(prior_counts).pvalue > 1e-6
    assert weights.max() == pytest.approx(1.0)


def test_state_dict_resumes_the_same_draws() -> None:
    a = make_mix(
        0.5, online=PrioritizedSampler(CAPACITY, alpha=0.6, beta_start=0.4, beta_anneal_steps=10, eps=1e-6)
    )
    a.update_priorities(ONLINE[:5], np.arange(5.0))
    b = PriorMixSampler(
        CAPACITY,
        PrioritizedSampler(CAPACITY, alpha=0.6, beta_start=0.4, beta_anneal_steps=10, eps=1e-6),
        UniformSampler(CAPACITY),
    )
    b.load_state_dict(a.state_dict())
    for seed in range(3):
        pa, wa = a.sample(50, np.random.default_rng(seed))
        pb, wb = b.sample(50, np.random.default_rng(seed))
        np.testing.assert_array_equal(pa, pb)
        np.testing.assert_array_equal(wa, wb)
    with pytest.raises(BufferError, match="prior_share"):
        PriorMixSampler(CAPACITY, UniformSampler(CAPACITY), UniformSampler(CAPACITY), 1.5)


def test_buffer_batches_mix_demonstration_episodes_and_online_ones() -> None:
    cfg = BufferConfig(capacity_steps=200, sampler=PriorMixSamplerConfig(online=PERSamplerConfig()))
    buf = make_buffer(cfg, OBS_SPEC, ACTION_DIM)
    assert isinstance(buf.sampler, PriorMixSampler)
    buf.sampler.mark_prior(True)
    fill_episode(buf, episode=7, length=5)  # a demonstration
    buf.sampler.mark_prior(False)
    for episode in range(3):
        fill_episode(buf, episode=episode, length=10)
    batch = buf.sample(32)
    from_demo = batch.obs["state"][:, 0] == 7
    assert np.count_nonzero(from_demo) == 16
    np.testing.assert_array_equal(buf.sampler.is_prior(batch.indices % 200), from_demo)
    np.testing.assert_array_equal(batch.prior, from_demo)  # the learner's behaviour cloning reads it
    buf.update_priorities(batch.indices, np.ones(32, np.float32))


def test_a_buffer_without_a_prior_part_marks_no_rows() -> None:
    buf = make_buffer(BufferConfig(capacity_steps=50), OBS_SPEC, ACTION_DIM)
    fill_episode(buf, episode=0, length=10)
    assert buf.sample(8).prior is None


def test_promoted_online_positions_are_drawn_with_the_prior_part() -> None:
    mix = make_mix(0.5)
    mix.promote(np.array([10, 11, 3, 60]))  # two online, one already prior, one free: only 10 and 11 move
    assert mix.counts == (12, 38)
    assert mix.is_prior(np.array([10, 11, 3])).all() and not mix.is_prior(np.array([12, 60])).any()
    positions, _ = mix.sample(4000, np.random.default_rng(3))
    prior_draws = positions[np.isin(positions, np.concatenate([PRIOR, [10, 11]]))]
    assert len(prior_draws) == 2000 and chisquare(np.bincount(prior_draws)[[*PRIOR, 10, 11]]).pvalue > 1e-6
    mix.remove(np.array([10]))  # evicted: it leaves the prior part like any prior position
    assert mix.counts == (11, 38)


def test_steps_flagged_by_prior_info_key_join_the_prior_part_when_stored() -> None:
    cfg = BufferConfig(capacity_steps=200, sampler=PriorMixSamplerConfig(), prior_info_key="intervention")
    buf = make_buffer(cfg, OBS_SPEC, ACTION_DIM, info_keys=("success", "intervention"))
    n = 6
    flags = np.array([0, 0, 1, 1, 0, 0, 0], np.float32)  # per observation: transitions 1 and 2 led to a flag
    buf.add_episode(
        {"state": np.zeros((n + 1, 4), np.float32), "pixels/front": np.zeros((n + 1, 6, 5, 3), np.uint8)},
        np.zeros((n, ACTION_DIM), np.float32),
        np.zeros(n, np.float32),
        np.zeros(n, bool),
        np.eye(1, n, n - 1, dtype=bool)[0],
        {"success": np.zeros(n + 1, np.float32), "intervention": flags},
    )
    np.testing.assert_array_equal(buf.sampler.is_prior(np.arange(n)), flags[1:].astype(bool))
    batch = buf.sample(64)
    assert np.count_nonzero(np.isin(batch.indices % 200, [1, 2])) == 32  # the prior half, nothing else there
    with pytest.raises(BufferError, match="needs a prior-mix sampler"):
        make_buffer(
            BufferConfig(prior_info_key="intervention"), OBS_SPEC, ACTION_DIM, info_keys=("intervention",)
        )
    with pytest.raises(BufferError, match="prior_info_key 'takeover' is not a stored info key"):
        make_buffer(
            BufferConfig(sampler=PriorMixSamplerConfig(), prior_info_key="takeover"), OBS_SPEC, ACTION_DIM
        )
