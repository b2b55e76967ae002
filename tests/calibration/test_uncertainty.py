"""Calibration files store their uncertainty: the intrinsic fit's standard deviations, the hand-eye residual
(the twin sizes its camera randomisation from them, issue #19)."""

import json

import numpy as np
import pytest

from calibration import (
    CalibrationError,
    CameraIntrinsics,
    IntrinsicsConfig,
    calibrate_intrinsics,
    load_camera,
    load_hand_eye,
    save_camera,
    save_hand_eye,
)
from calibration.store import camera_path, hand_eye_path

LENS = CameraIntrinsics(np.array([[600.0, 0, 320.0], [0, 598.0, 240.0], [0, 0, 1]]), np.zeros(5), (640, 480))
STD = {"fx": 0.8, "fy": 0.7, "cx": 0.5, "cy": 0.4}


def test_the_intrinsic_fit_estimates_standard_deviations_that_shrink_with_more_views(checkerboard_views):
    views, cfg = checkerboard_views, IntrinsicsConfig(min_images=5, distortion="k1k2")
    few = calibrate_intrinsics(views.names[:6], views.images[:6], views.board, cfg)
    many = calibrate_intrinsics(views.names, views.images, views.board, cfg)
    assert set(many.std_px) == {"fx", "fy", "cx", "cy"}
    assert all(0 < many.std_px[k] < 0.01 * many.intrinsics.fx for k in many.std_px)
    assert many.std_px["fy"] < few.std_px["fy"] and many.std_px["cx"] < few.std_px["cx"]


def test_uncertainty_round_trips_and_files_without_it_still_load(tmp_path):
    save_camera("front", LENS, 0.2, tmp_path)
    assert load_camera("front", tmp_path).std_px is None
    fingerprint = load_camera("front", tmp_path).fingerprint
    save_camera("front", LENS, 0.2, tmp_path, std_px=STD)
    camera = load_camera("front", tmp_path)
    assert camera.std_px == STD
    assert camera.fingerprint == fingerprint  # the uncertainty does not invalidate hand-eye files
    save_hand_eye("arm", "front", "eye_to_hand", np.eye(4), camera, tmp_path, residual=(1.5, 0.3))
    hand_eye = load_hand_eye("arm", "front", tmp_path)
    assert (hand_eye.residual_mm, hand_eye.residual_deg) == (1.5, 0.3)
    # Files `vlmrl calibrate handeye` wrote before kept the residual in `extra`; none at all: None.
    save_hand_eye(
        "arm",
        "front",
        "eye_to_hand",
        np.eye(4),
        camera,
        tmp_path,
        extra={"residual_mm": 2.0, "residual_deg": 0.5},
    )
    assert load_hand_eye("arm", "front", tmp_path).residual_mm == 2.0
    save_hand_eye("arm", "front", "eye_to_hand", np.eye(4), camera, tmp_path)
    assert load_hand_eye("arm", "front", tmp_path).residual_deg is None


@pytest.mark.parametrize(
    ("kind", "key", "value", "message"),
    [
        (
            "camera",
            "std_px",
            {"fx": -1.0, "fy": 1.0, "cx": 1.0, "cy": 1.0},
            "std_px.fx must be a finite number >= 0",
        ),
        ("camera", "std_px", {"fx": 1.0}, "is malformed"),
        ("hand_eye", "residual_mm", "big", "residual_mm must be a finite number >= 0"),
    ],
)
def test_a_bad_stored_uncertainty_is_one_line(tmp_path, kind, key, value, message):
    save_camera("front", LENS, 0.2, tmp_path, std_px=STD)
    save_hand_eye(
        "arm", "front", "eye_to_hand", np.eye(4), load_camera("front", tmp_path), tmp_path, residual=(1, 1)
    )
    path = camera_path("front", tmp_path) if kind == "camera" else hand_eye_path("arm", "front", tmp_path)
    doc = json.loads(path.read_text())
    doc[key] = value
    path.write_text(json.dumps(doc))
    with pytest.raises(CalibrationError, match=message) as error:
        load_hand_eye("arm", "front", tmp_path) if kind == "hand_eye" else load_camera("front", tmp_path)
    assert "\n" not in str(error.value)
