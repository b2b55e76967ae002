"""Priorities reach the sampler through `ReplayBuffer` and change what is sampled (issue #15, item 9c).

The sampler tests drive samplers directly; these go through the buffer's own `update_priorities` and
`set_learner_step`, which the learner calls: a buffer that dropped either would pass every sampler test.
"""

from __future__ import annotations

import numpy as np
import pytest

from buffer import PERSamplerConfig, UniformSamplerConfig, VLMMixSamplerConfig, VLMTDSamplerConfig
from buffer.config import BufferConfig
from buffer.errors import BufferError
from buffer.factory import make_buffer, make_sampler
from tests.buffer.buffer_helpers import ACTION_DIM, OBS_SPEC, fill_episode


def _buffer(sampler):
    buf = make_buffer(BufferConfig(capacity_steps=64, sampler=sampler, seed=0), OBS_SPEC, ACTION_DIM)
    fill_episode(buf, 0, 20)
    fill_episode(buf, 1, 20)
    return buf


def test_td_errors_given_to_the_buffer_make_those_transitions_the_ones_sampled() -> None:
    for sampler in (PERSamplerConfig(alpha=1.0, beta_start=0.4), VLMTDSamplerConfig(alpha=1.0)):
        buf = _buffer(sampler)
        before = buf.sample(400, keys=["state"]).indices
        rows = np.arange(buf.num_transitions)
        hot = rows[[3, 27]]
        td = np.full(len(rows), 1e-3)
        td[[3, 27]] = 10.0
        if isinstance(sampler, PERSamplerConfig):  # columns, as a [B, 1] critic output: flattened
            buf.update_priorities(rows[:, None], td[:, None])
        else:
            buf.update_priorities(rows, td)
        after = buf.sample(400, keys=["state"]).indices
        share_before = np.isin(before, hot).mean()
        share_after = np.isin(after, hot).mean()
        assert share_before < 0.2, sampler  # the default priorities spread the draws
        assert share_after > 0.9, (sampler, share_after)  # 10 / (10 + 10 + 38e-3) of the mass per draw


def test_the_buffers_learner_step_anneals_per_importance_weights_to_one() -> None:
    buf = _buffer(PERSamplerConfig(alpha=1.0, beta_start=0.4, beta_anneal_steps=100))
    rows = np.arange(buf.num_transitions)
    buf.update_priorities(rows, np.linspace(0.01, 10.0, len(rows)))
    early = buf.sample(256, keys=["state"]).weights
    buf.set_learner_step(100)
    late = buf.sample(256, keys=["state"]).weights
    # beta 0.4 -> 1: full correction, so the smallest weights (of the most likely rows) get smaller.
    assert late.min() < early.min() * 0.5


# Survivors of `make mutation` (group samplers) that change behaviour, killed here.


@pytest.mark.parametrize(
    "sampler", [UniformSamplerConfig(), PERSamplerConfig(), VLMMixSamplerConfig(beta=0.4)]
)
def test_importance_weights_are_one_float32_per_transition(sampler) -> None:
    weights = _buffer(sampler).sample(16, keys=["state"]).weights
    assert weights.shape == (16,) and weights.dtype == np.float32


def test_vlm_mix_lambda_bounds_and_schedule() -> None:
    with pytest.raises(BufferError, match=r"lambda_end must be in \[0, 1\], got 1.5"):
        make_sampler(VLMMixSamplerConfig(lambda_end=1.5), 8)
    with pytest.raises(BufferError, match=r"lambda_start must be in \[0, 1\], got -0.1"):
        make_sampler(VLMMixSamplerConfig(lambda_start=-0.1), 8)
    sampler = make_sampler(VLMMixSamplerConfig(lambda_start=0.0, lambda_end=1.0, warmup_steps=4), 8)
    assert sampler.mix_lambda == 0.0  # a fresh sampler starts at lambda_start
    sampler.set_learner_step(2)
    assert sampler.mix_lambda == 0.5
    sampler.set_learner_step(4)
    assert sampler.mix_lambda == 1.0
    one_step = make_sampler(VLMMixSamplerConfig(lambda_start=0.0, lambda_end=1.0, warmup_steps=1), 8)
    one_step.set_learner_step(1)
    assert one_step.mix_lambda == 1.0


def test_scores_of_removed_positions_never_make_them_sampleable() -> None:
    sampler = make_sampler(VLMMixSamplerConfig(lambda_start=1.0, lambda_end=1.0), 16)
    sampler.add(np.arange(10))
    sampler.remove(np.arange(5))
    sampler.set_scores(np.arange(10), np.array([1.0] * 5 + [0.01] * 5, np.float32))
    positions, _ = sampler.sample(2000, np.random.default_rng(0))
    assert positions.min() >= 5


def test_td_errors_of_removed_positions_never_make_them_sampleable() -> None:
    sampler = make_sampler(PERSamplerConfig(alpha=1.0), 16)
    sampler.add(np.arange(10))
    sampler.remove(np.arange(5))
    sampler.update_priorities(np.arange(10), np.array([100.0] * 5 + [5.0] * 5))
    positions, _ = sampler.sample(2000, np.random.default_rng(0))
    assert positions.min() >= 5
    sampler.add(np.arange(10, 12))  # new transitions get the largest TD priority of live ones (5), not 100
    positions, _ = sampler.sample(2000, np.random.default_rng(1))
    assert np.isin(positions, [10, 11]).mean() < 0.6  # 2 of 7 equal priorities: about 0.29
