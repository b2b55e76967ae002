"""vlmrl score --fit-score-calibration / --score-calibration on episodes recorded with the twin."""

import json

import numpy as np
import pytest
import zarr

from buffer import BufferConfig, make_buffer
from robot.config import ArmConfig, LeRobotEnvConfig, WatchdogConfig
from vlm import ScoreCalibration, VLMError, prompt_hash
from vlm.config import OracleConfig
from vlm.score_calibration import expected_calibration_error
from vlmrl import cli
from vlmrl.errors import ConfigError
from vlmrl.pipelines import record, score

CLIPS = ["--clip-length", "1", "--clip-stride", "4"]


@pytest.fixture(scope="module")
def store(tmp_path_factory):
    """Twin `lift` episodes of the scripted expert: 5 that lift the cube (success ends them, after 20 to
    23 steps) and 3 on the same placements cut off after 10 steps (failures)."""
    root = tmp_path_factory.mktemp("twin")
    for steps, episodes in ((40, 5), (10, 3)):
        cfg = record.Config(
            robot=ArmConfig(type="sim_so101", cameras=("front",), calibration_dir=str(root / "calib")),
            env=LeRobotEnvConfig(
                control_hz=1000.0,
                max_episode_steps=steps,
                image_size=16,
                reset_settle_steps=1,
                keyboard_estop=False,
                watchdog=WatchdogConfig(enabled=False),
            ),
            twin_control_hz=20.0,
            task="lift",
            out_dir=root / "rec",
            source="scripted",
            episodes=episodes,
            export_lerobot=False,
        )
        assert record.main(cfg) == 0
    return root / "rec" / "episodes.zarr"


def stored_scores(store, scorer_id):
    """Clip scores of ``scorer_id`` at every clip's first row (clip length 1, stride 4), episode order."""
    meta = zarr.open_group(str(store), mode="r").attrs["vlmrl_buffer"]
    spec = {k: (tuple(s), np.dtype(d)) for k, (s, d) in meta["env"]["obs_spec"].items()}
    buf = make_buffer(
        BufferConfig(storage="zarr", capacity_steps=meta["capacity"], clip_length=1, clip_stride=4),
        spec,
        meta["env"]["action_dim"],
        tuple(meta["env"]["info_keys"]),
        path=str(store),
    )
    try:
        table = buf.storage.episodes()
        rows = [
            np.arange(start, end - 1, 4)
            for start, end in (table.bounds(e) for e in range(table.first, table.first + table.count))
        ]
        return buf.storage.read(f"scores/{scorer_id}", np.concatenate(rows))
    finally:
        buf.close()


def labels_of(store):
    """Clip labels as the pipeline draws them (success by the end of the steps each clip covers)."""
    source = score.EpisodeSource(store, score.Config(episodes=store, clip_length=1, clip_stride=4))
    try:
        clips_of: dict = {}
        for ref in source.buffer.new_clips():
            clips_of.setdefault(ref.episode, []).append(ref)
        labels = score.episode_labels(source, clips_of, source.episodes())
        return np.concatenate(list(labels.values()))
    finally:
        source.close()


def test_fit_on_twin_episodes_then_apply_maps_the_stored_scores_by_the_temperature(store, tmp_path, capsys):
    cal_path = tmp_path / "cal.json"
    fit = ["score", str(store), *CLIPS, "--out-dir", str(tmp_path / "fit")]
    noisy = ["scorer:oracle", "--scorer.noise", "0.1"]
    assert cli.main([*fit, *noisy, "--fit-score-calibration", str(cal_path)]) == 0
    out = capsys.readouterr().out
    assert "calibration of oracle-noise0.1 on" in out and "ECE" in out
    cal = ScoreCalibration.load(cal_path)
    summary = json.loads((tmp_path / "fit" / "summary.json").read_text())
    assert cal.scorer_id == "oracle-noise0.1" and cal.prompt_hash == prompt_hash(summary["prompt"])
    figures = summary["calibration"]
    # 8 episodes, one clip per 4 steps; success labels the last clip of each episode that lifted the cube.
    assert figures["clips"] == cal.n_clips == 39 and figures["successes"] == 5
    assert figures["ece_after"] == cal.ece <= cal.ece_before == figures["ece_before"]
    assert figures["accuracy_after"] >= figures["accuracy_before"]
    assert "## Score calibration" in (tmp_path / "fit" / "summary.md").read_text()
    raw = stored_scores(store, "oracle-noise0.1")
    assert len(raw) == 39
    # The figures are those of the stored raw scores (the noise flips the same clips on every run).
    assert cal.ece_before == pytest.approx(expected_calibration_error(raw, labels_of(store)))

    apply = ["score", str(store), *CLIPS, "--out-dir", str(tmp_path / "apply")]
    assert cli.main([*apply, *noisy, "--score-calibration", str(cal_path)]) == 0
    calibrated_id = f"oracle-noise0.1-cal{cal.temperature:.4g}"
    assert json.loads((tmp_path / "apply" / "summary.json").read_text())["scorer_id"] == calibrated_id
    calibrated = stored_scores(store, calibrated_id)
    clipped = np.clip(raw.astype(np.float64), 1e-6, 1 - 1e-6)
    logit = np.log(clipped) - np.log1p(-clipped)
    np.testing.assert_allclose(calibrated, 1 / (1 + np.exp(-logit / cal.temperature)), atol=1e-5)
    assert not np.allclose(calibrated, raw, atol=1e-2)
    np.testing.assert_array_equal(stored_scores(store, "oracle-noise0.1"), raw)  # raw scores kept


def test_a_calibration_of_another_scorer_or_prompt_is_refused_in_one_line(store, tmp_path, capsys):
    cal_path = ScoreCalibration(
        scorer_id="oracle-noise0.1",
        prompt_hash="0123456789ab",
        temperature=2.0,
        threshold=0.5,
        auc=0.8,
        accuracy=0.8,
        ece=0.1,
        ece_before=0.2,
        n_clips=30,
    ).save(tmp_path / "cal.json")
    base = ["score", str(store), *CLIPS, "--out-dir", str(tmp_path / "r")]
    assert cli.main([*base, "scorer:oracle", "--score-calibration", str(cal_path)]) == 1
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "calibrates scorer 'oracle-noise0.1', not 'oracle'" in err
    noisy = ["scorer:oracle", "--scorer.noise", "0.1", "--score-calibration", str(cal_path)]
    assert cli.main([*base, *noisy]) == 1
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "fitted for another prompt" in err
    with pytest.raises(VLMError, match="no score calibration file"):
        score.main(score.Config(episodes=store, score_calibration=tmp_path / "missing.json"))


def synthetic_store(path, info_keys, reached):
    """Two 6-step episodes with ``info_keys``; ``reached[i]``: episode i ends in success."""
    obs = {"state": ((6,), np.dtype(np.float32)), "pixels/front": ((8, 8, 3), np.dtype(np.uint8))}
    buf = make_buffer(BufferConfig(storage="zarr", capacity_steps=64), obs, 6, info_keys, path=str(path))
    for success in reached:
        progress = np.linspace(0, 1.0 if success else 0.5, 7).astype(np.float32)
        info = {"success": (progress >= 1).astype(np.float32), "progress": progress}
        buf.add_episode(
            obs={"state": np.zeros((7, 6), np.float32), "pixels/front": np.zeros((7, 8, 8, 3), np.uint8)},
            action=np.zeros((6, 6), np.float32),
            reward=np.zeros(6, np.float32),
            terminated=np.eye(1, 6, 5, dtype=bool)[0],
            truncated=np.zeros(6, bool),
            info={k: info[k] for k in info_keys},
        )
    buf.close()
    zarr.open_group(str(path), mode="a").attrs["vlmrl_record"] = {"task_description": "Reach the ball."}
    return path


@pytest.mark.parametrize(
    ("info_keys", "reached", "message"),
    [
        (("progress",), (True, False), "stores no per-step success info"),
        (("success", "progress"), (False, False), "labelled failure .* needs successful clips"),
        (("success", "progress"), (True, True), "needs failed clips"),
    ],
    ids=["no-success-info", "only-failures", "only-successes"],
)
def test_data_that_cannot_be_calibrated_fails_before_scoring(tmp_path, info_keys, reached, message):
    store = synthetic_store(tmp_path / "episodes.zarr", info_keys, reached)
    # One clip per episode, covering its 6 steps: labelled by whether the episode succeeded.
    cfg = score.Config(
        episodes=store, clip_length=1, clip_stride=6, fit_score_calibration=tmp_path / "c.json"
    )
    with pytest.raises(ConfigError, match=message):
        score.main(cfg)
    assert not (tmp_path / "c.json").exists() and not (tmp_path / "episodes.zarr-report").exists()


def test_fitting_and_applying_at_once_is_refused(tmp_path):
    with pytest.raises(ConfigError, match="drop --score-calibration"):
        score.main(
            score.Config(
                episodes=tmp_path,
                scorer=OracleConfig(),
                score_calibration=tmp_path / "a.json",
                fit_score_calibration=tmp_path / "b.json",
            )
        )


def test_a_calibration_that_makes_ece_worse_is_applied_with_a_warning(tmp_path, capsys):
    """Issue 15 item 7: a calibration whose ECE after fitting exceeds its ECE before was applied silently."""
    from vlm import make_prompt

    store = synthetic_store(tmp_path / "episodes.zarr", ("success", "progress"), (True, False))
    fields = dict(
        scorer_id="oracle", prompt_hash=prompt_hash(make_prompt("Reach the ball.")), temperature=2.0
    )
    figures = dict(threshold=0.5, auc=0.8, accuracy=0.8, n_clips=30)
    worse = ScoreCalibration(**fields, **figures, ece=0.3, ece_before=0.1).save(tmp_path / "worse.json")
    better = ScoreCalibration(**fields, **figures, ece=0.1, ece_before=0.3).save(tmp_path / "better.json")
    for path, warned in ((worse, True), (better, False)):
        cfg = score.Config(episodes=store, clip_length=1, clip_stride=6, score_calibration=path)
        assert score.main(cfg) == 0
        out = capsys.readouterr().out
        assert (
            "makes the expected calibration error worse on its own clips (0.100 -> 0.300)" in out
        ) is warned
