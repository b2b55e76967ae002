"""Priorities reach the sampler through `ReplayBuffer` and change what is sampled (issue #15, item 9c).

The sampler tests drive samplers directly; these go through the buffer's own `update_priorities` and
`set_learner_step`, which the learner calls: a buffer that dropped either would pass every sampler test.
"""

from __future__ import annotations

import numpy as np

from buffer import PERSamplerConfig, VLMTDSamplerConfig
from buffer.config import BufferConfig
from buffer.factory import make_buffer
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
