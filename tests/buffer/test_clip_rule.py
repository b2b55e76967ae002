"""The clip rule (buffer/clips.py): back-to-back clips, each score judging its last frame and covering the
steps up to the next clip's first frame; the replay buffer's priorities follow the same spans."""

from __future__ import annotations

import numpy as np
import pytest
from buffer_helpers import fill_episode

from buffer.clips import clip_last_step, clip_span, covered_transitions, plan_episode_clips, scores_per_step


@pytest.mark.parametrize("n_transitions", [1, 5, 15, 16, 17, 33])
@pytest.mark.parametrize(("length", "stride"), [(8, 2), (4, 1), (1, 4), (3, 5)])
def test_every_transition_is_covered_by_exactly_one_clip_which_judges_its_last_frame(
    n_transitions, length, stride
):
    n_rows = n_transitions + 1
    plan = plan_episode_clips(n_rows, length, stride)
    covered = np.zeros(n_transitions, int)
    for start, frames in plan:
        first, stop = clip_span(start, length, stride, n_transitions)
        covered[first:stop] += 1
        last = clip_last_step(start, frames, stride)
        assert start <= last <= n_transitions  # a frame that exists (the final observation at most)
        assert frames == length or last + stride > n_transitions  # only the last clip is cut short
        np.testing.assert_array_equal(
            covered_transitions(100 + start, 100 + n_rows, length, stride), 100 + np.arange(first, stop)
        )
    np.testing.assert_array_equal(covered, np.ones(n_transitions, int))
    assert [s for s, _ in plan] == list(range(0, n_transitions, length * stride))


def test_scores_per_step_shows_each_clip_score_on_its_span():
    curve = scores_per_step(11, [0, 4, 8], 2, 2, [0.1, 0.5, 0.9])
    np.testing.assert_allclose(curve, [0.1] * 4 + [0.5] * 4 + [0.9] * 3)
    assert np.isnan(scores_per_step(5, [0], 1, 2, [0.3])[2:]).all()


def test_buffer_scores_land_on_the_spans_of_the_rule(make):
    buf = make("memory", clip_length=3, clip_stride=2)
    fill_episode(buf, 0, 14)  # 14 transitions, 15 rows
    clips = buf.new_clips()
    assert [(c.start, c.length) for c in clips] == plan_episode_clips(15, 3, 2)
    scores = np.linspace(0.2, 0.8, len(clips))
    buf.set_scores([c.clip_id for c in clips], scores, "oracle")
    stored = buf.storage.read("scores/oracle", np.arange(14))
    expected = scores_per_step(14, [c.start for c in clips], 3, 2, scores)
    np.testing.assert_allclose(stored, expected, rtol=1e-6)
