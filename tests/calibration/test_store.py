import json

import numpy as np
import pytest

from calibration import (
    CalibrationError,
    CameraIntrinsics,
    default_calibration_dir,
    load_camera,
    load_hand_eye,
    load_undistorter,
    save_camera,
    save_hand_eye,
)
from calibration.store import SCHEMA_VERSION, camera_path, hand_eye_path

MATRIX = np.array([[600.0, 0, 321.2], [0, 598.0, 242.7], [0, 0, 1]])
LENS = CameraIntrinsics(MATRIX, np.array([-0.1, 0.02, 0.0, 0.001, 0.0]), (640, 480))


def test_camera_round_trip_by_id(tmp_path):
    path = save_camera("front", LENS, 0.21, tmp_path, extra={"board": "9x6"})
    assert path == tmp_path / "cameras" / "front.json"
    doc = json.loads(path.read_text())
    assert doc["schema"] == "vlmrl.calibration.camera" and doc["version"] == SCHEMA_VERSION
    loaded = load_camera("front", tmp_path, image_size=(640, 480))
    np.testing.assert_array_equal(loaded.intrinsics.camera_matrix, MATRIX)
    np.testing.assert_array_equal(loaded.intrinsics.dist_coeffs, LENS.dist_coeffs)
    assert loaded.intrinsics.image_size == (640, 480)
    assert loaded.rms_px == 0.21 and loaded.extra == {"board": "9x6"}


def test_default_dir_follows_lerobot(monkeypatch, tmp_path):
    monkeypatch.delenv("HF_LEROBOT_CALIBRATION", raising=False)
    monkeypatch.delenv("HF_LEROBOT_HOME", raising=False)
    monkeypatch.setenv("HF_HOME", str(tmp_path / "hf"))
    assert default_calibration_dir() == tmp_path / "hf" / "lerobot" / "calibration"
    monkeypatch.setenv("HF_LEROBOT_HOME", str(tmp_path / "lr"))
    assert default_calibration_dir() == tmp_path / "lr" / "calibration"
    monkeypatch.setenv("HF_LEROBOT_CALIBRATION", str(tmp_path / "cal"))
    assert camera_path("wrist") == tmp_path / "cal" / "cameras" / "wrist.json"
    assert hand_eye_path("so101", "wrist") == tmp_path / "cal" / "hand_eye" / "so101" / "wrist.json"


def test_missing_file_names_the_file_and_the_fix(tmp_path):
    with pytest.raises(
        CalibrationError,
        match=r"no calibration file .*cameras/top.json; create it with `vlmrl calibrate camera",
    ):
        load_camera("top", tmp_path)


def test_stale_and_broken_files_are_clear_errors(tmp_path):
    path = save_camera("front", LENS, 0.2, tmp_path)
    doc = json.loads(path.read_text())
    path.write_text(json.dumps({**doc, "version": SCHEMA_VERSION - 1}))
    with pytest.raises(CalibrationError, match=r"is stale \(schema version 0"):
        load_camera("front", tmp_path)
    path.write_text(json.dumps({**doc, "created_utc": "2020-01-01T00:00:00.000000Z"}))
    with pytest.raises(CalibrationError, match=r"is stale \(.* days old, limit 30\)"):
        load_camera("front", tmp_path, max_age_days=30)
    path.write_text(json.dumps(doc))
    with pytest.raises(CalibrationError, match="is for 640x480 images but frames are 1280x720"):
        load_camera("front", tmp_path, image_size=(1280, 720))
    path.write_text("{not json")
    with pytest.raises(CalibrationError, match="unreadable"):
        load_camera("front", tmp_path)
    path.write_text(json.dumps({**doc, "camera_matrix": [[1, 2]]}))
    with pytest.raises(CalibrationError, match="must be 3x3"):
        load_camera("front", tmp_path)


def test_bad_id_cannot_escape_the_directory(tmp_path):
    with pytest.raises(CalibrationError, match=r"camera id '\.\./x'"):
        save_camera("../x", LENS, 0.2, tmp_path)


def test_recalibration_keeps_the_old_file(tmp_path):
    save_camera("front", LENS, 0.2, tmp_path)
    save_camera("front", LENS, 0.3, tmp_path)
    history = list((tmp_path / "cameras" / "history").glob("front.*.json"))
    assert len(history) == 1 and json.loads(history[0].read_text())["rms_px"] == 0.2
    assert load_camera("front", tmp_path).rms_px == 0.3
    assert not list((tmp_path / "cameras").glob("*.tmp"))


def test_hand_eye_round_trip_and_staleness(tmp_path):
    save_camera("wrist", LENS, 0.2, tmp_path)
    camera = load_camera("wrist", tmp_path)
    T = np.eye(4)
    T[:3, 3] = [0.01, 0.02, 0.05]
    save_hand_eye("so101_a", "wrist", "eye_in_hand", T, camera, tmp_path, extra={"residual_mm": 0.4})
    loaded = load_hand_eye("so101_a", "wrist", tmp_path)
    np.testing.assert_array_equal(loaded.transform, T)
    assert loaded.setup == "eye_in_hand" and loaded.extra["residual_mm"] == 0.4
    # Recalibrating the camera invalidates the hand-eye result computed with the old intrinsics.
    save_camera(
        "wrist", CameraIntrinsics(MATRIX * [[1.01], [1], [1]], LENS.dist_coeffs, (640, 480)), 0.2, tmp_path
    )
    with pytest.raises(CalibrationError, match="stale: camera 'wrist' was recalibrated after it"):
        load_hand_eye("so101_a", "wrist", tmp_path)
    with pytest.raises(CalibrationError, match=r"no calibration file .*hand_eye/so101_b/wrist\.json"):
        load_hand_eye("so101_b", "wrist", tmp_path)


def test_undistorter_by_id(tmp_path):
    save_camera("front", LENS, 0.2, tmp_path)
    undistort = load_undistorter("front", tmp_path, image_size=(640, 480))
    np.testing.assert_array_equal(undistort.intrinsics.camera_matrix, MATRIX)
    frame = np.zeros((480, 640, 3), np.uint8)
    frame[200:280, 300:340] = 255
    out = undistort(frame)
    assert out.shape == frame.shape and out[240, 320].tolist() == [255, 255, 255]
    with pytest.raises(CalibrationError, match="is for 640x480 images"):
        load_undistorter("front", tmp_path, image_size=(320, 240))
