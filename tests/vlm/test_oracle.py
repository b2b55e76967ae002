import numpy as np
import pytest

from vlm import Clip, OracleConfig, VLMError, make_scorer


def _clip(progress, success=None):
    progress = np.asarray(progress, np.float32)
    info = {"progress": progress}
    if success is not None:
        info["success"] = np.asarray(success, bool)
    return Clip(np.zeros((len(progress), 8, 8, 3), np.uint8), info)


def test_oracle_reduces_progress():
    clips = [_clip([0.1, 0.9, 0.4]), _clip([0.0, 0.2, 1.0])]
    for reduce, expected in (("last", [0.4, 1.0]), ("max", [0.9, 1.0]), ("mean", [1.4 / 3, 0.4])):
        scores = make_scorer(OracleConfig(reduce=reduce)).score(clips, "ignored")
        assert scores.dtype == np.float32
        np.testing.assert_allclose(scores, expected, rtol=1e-6)


def test_oracle_success_signal_and_ids_are_labelled():
    scorer = make_scorer(OracleConfig(signal="success", reduce="max"))
    np.testing.assert_array_equal(scorer.score([_clip([0, 0], [0, 1]), _clip([0, 0], [0, 0])], ""), [1, 0])
    assert scorer.scorer_id == "oracle-success"
    assert make_scorer(OracleConfig()).scorer_id == "oracle"
    assert make_scorer(OracleConfig(noise=0.2)).scorer_id == "oracle-noise0.2"


def test_oracle_label_noise_flips_at_the_configured_rate():
    clips = [_clip([1.0])] * 4000
    scores = make_scorer(OracleConfig(noise=0.2, seed=3)).score(clips, "")
    assert set(np.unique(scores)) == {0.0, 1.0}
    assert abs((scores == 0).mean() - 0.2) < 0.03
    again = make_scorer(OracleConfig(noise=0.2, seed=3)).score(clips, "")
    np.testing.assert_array_equal(scores, again)


def test_oracle_without_privileged_info_says_so():
    with pytest.raises(VLMError, match=r"info\['progress'\]"):
        make_scorer(OracleConfig()).score([np.zeros((2, 4, 4, 3), np.uint8)], "")
    with pytest.raises(VLMError, match="noise"):
        make_scorer(OracleConfig(noise=1.5))
