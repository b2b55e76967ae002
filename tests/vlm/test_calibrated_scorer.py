"""CalibratedScorer / apply_calibration: scores through a fitted temperature, refusals in one line."""

import numpy as np
import pytest

from vlm import OracleConfig, ScoreCalibration, VLMError, apply_calibration, make_scorer, prompt_hash

PROMPT = "In the last frame, has the robot lifted the cube? Answer yes or no."


def calibration(tmp_path, scorer_id="oracle", prompt=PROMPT, temperature=2.0):
    return ScoreCalibration(
        scorer_id=scorer_id,
        prompt_hash=prompt_hash(prompt),
        temperature=temperature,
        threshold=0.5,
        auc=0.9,
        accuracy=0.9,
        ece=0.05,
        ece_before=0.2,
        n_clips=40,
    ).save(tmp_path / "cal.json")


def test_scores_go_through_the_temperature_under_their_own_id(tmp_path, clip_factory):
    raw_scorer = make_scorer(OracleConfig(reduce="last"))
    scorer = apply_calibration(make_scorer(OracleConfig(reduce="last")), calibration(tmp_path), PROMPT)
    clips = clip_factory(n=4)  # progress at the last frame: 0.25, 0.5, 0.75, 1.0
    raw = raw_scorer.score(clips, PROMPT).astype(np.float64)
    logit = np.log(np.clip(raw, 1e-6, 1 - 1e-6)) - np.log1p(-np.clip(raw, 1e-6, 1 - 1e-6))
    np.testing.assert_allclose(scorer.score(clips, PROMPT), 1 / (1 + np.exp(-logit / 2.0)), atol=1e-6)
    assert scorer.score(clips, PROMPT)[1] == pytest.approx(0.5)  # T keeps 0.5 and the ranking
    assert scorer.scorer_id == "oracle-cal2" and scorer.model_id == raw_scorer.model_id
    with pytest.raises(VLMError, match="fitted for prompt hash"):
        scorer.score(clips, "Is the cube in the bin?")
    scorer.close()


def test_a_calibration_of_another_scorer_or_prompt_or_no_file_is_refused(tmp_path):
    noisy = make_scorer(OracleConfig(noise=0.2))
    with pytest.raises(VLMError, match=r"calibrates scorer 'oracle', not 'oracle-noise0.2'") as err:
        apply_calibration(noisy, calibration(tmp_path), PROMPT)
    assert "\n" not in str(err.value)
    with pytest.raises(VLMError, match="fitted for another prompt") as err:
        apply_calibration(
            noisy, calibration(tmp_path, scorer_id="oracle-noise0.2"), "Is the cube in the bin?"
        )
    assert "\n" not in str(err.value)
    with pytest.raises(VLMError, match="no score calibration file"):
        apply_calibration(noisy, tmp_path / "missing.json", PROMPT)
    with pytest.raises(VLMError, match="temperature must be a positive number"):
        apply_calibration(noisy, calibration(tmp_path, scorer_id="oracle-noise0.2", temperature=0.0), PROMPT)
