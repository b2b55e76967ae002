"""The run report's evaluation video and `vlmrl score` place clip scores on the same steps as the replay
buffer's priorities (the clip rule in buffer/clips.py)."""

from __future__ import annotations

import numpy as np

from buffer.clips import ClipRef, clip_last_step, plan_episode_clips, scores_per_step
from vlmrl.evaluation.episodes import EpisodeRecord
from vlmrl.online.report import clip_scores_for_episode
from vlmrl.pipelines.score import clip_labels, step_scores


class FirstFrameScorer:
    """Scores a clip by its first frame's value / 100, so each score names its clip."""

    def score(self, clips, prompt):
        return np.array([c.frames[0, 0, 0, 0] / 100 for c in clips], np.float32)


def test_report_curve_score_curve_and_labels_follow_the_clip_rule():
    n_rows, length, stride = 18, 4, 2
    frames = [np.full((2, 2, 3), t, np.uint8) for t in range(n_rows)]
    record = EpisodeRecord(episode_return=0.0, length=n_rows - 1, success=True, frames=frames)
    plan = plan_episode_clips(n_rows, length, stride)
    starts = [s for s, _ in plan]
    expected = scores_per_step(n_rows, starts, length, stride, [s / 100 for s in starts])
    curve = clip_scores_for_episode(record, FirstFrameScorer(), "p", length, stride)
    np.testing.assert_allclose(curve, expected, rtol=1e-6)

    refs = [ClipRef(s, 0, s, frames_, stride, "pixels/front") for s, frames_ in plan]
    np.testing.assert_allclose(step_scores(n_rows, refs, np.array([s / 100 for s in starts])), expected)
    # Success first seen at observation 9: clips whose span ends at or after it are labelled successful.
    success = (np.arange(n_rows) >= 9).astype(np.float32)
    assert clip_labels(success, refs).tolist() == [False, True, True]
    assert [clip_last_step(s, f, stride) for s, f in plan] == [6, 14, 16]
