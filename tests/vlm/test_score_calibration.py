import itertools

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from vlm import VLMError
from vlm.score_calibration import (
    ScoreCalibration,
    expected_calibration_error,
    fit_calibration,
    roc_auc,
)


@settings(deadline=None, max_examples=60)
@given(
    st.lists(st.tuples(st.sampled_from([0.0, 0.25, 0.5, 0.9, 1.0]), st.booleans()), min_size=2, max_size=30)
)
def test_auc_equals_pairwise_ranking_probability(pairs):
    scores = np.array([s for s, _ in pairs])
    labels = np.array([lab for _, lab in pairs])
    if labels.all() or not labels.any():
        with pytest.raises(VLMError, match="both"):
            roc_auc(scores, labels)
        return
    wins = [
        1.0 if p > n else 0.5 if p == n else 0.0
        for p, n in itertools.product(scores[labels], scores[~labels])
    ]
    assert roc_auc(scores, labels) == pytest.approx(np.mean(wins))


def test_ece_of_known_bins():
    probs = np.array([0.1, 0.1, 0.9, 0.9])
    labels = np.array([0, 1, 1, 1])
    # bin 1: confidence 0.1, rate 0.5; bin 9: confidence 0.9, rate 1.0
    assert expected_calibration_error(probs, labels) == pytest.approx(0.5 * 0.4 + 0.5 * 0.1)


def test_fit_recovers_the_temperature_of_an_overconfident_scorer(tmp_path):
    rng = np.random.default_rng(0)
    z = rng.normal(0, 1.5, 6000)
    labels = rng.random(6000) < 1 / (1 + np.exp(-z))
    overconfident = 1 / (1 + np.exp(-3.0 * z))
    cal = fit_calibration(overconfident, labels, scorer_id="hf-x", prompt_hash="abc")
    assert cal.temperature == pytest.approx(3.0, rel=0.15)
    assert cal.ece < cal.ece_before and cal.ece < 0.03
    assert 0.6 < cal.auc < 0.9 and cal.accuracy > 0.6 and cal.n_clips == 6000
    # temperature keeps the ranking; the threshold lies near 0.5 for a calibrated probability
    assert abs(cal.threshold - 0.5) < 0.15
    loaded = ScoreCalibration.load(cal.save(tmp_path / "cal.json"))
    assert loaded == cal
    np.testing.assert_array_equal(
        loaded.predict(overconfident[:50]), cal.apply(overconfident[:50]) >= cal.threshold
    )


def test_separable_scores_reach_full_accuracy_and_bad_files_fail(tmp_path):
    cal = fit_calibration(np.array([0.1, 0.2, 0.3, 0.35, 0.4]), np.array([0, 0, 1, 1, 1]), scorer_id="oracle")
    assert cal.auc == 1.0 and cal.accuracy == 1.0
    assert cal.apply(np.array([0.2]))[0] < cal.threshold <= cal.apply(np.array([0.3]))[0]
    (tmp_path / "bad.json").write_text("{}")
    with pytest.raises(VLMError, match="not a score calibration file"):
        ScoreCalibration.load(tmp_path / "bad.json")
    with pytest.raises(VLMError, match=r"in \[0, 1\]"):
        fit_calibration(np.array([1.5, 0.1]), np.array([1, 0]), scorer_id="x")
