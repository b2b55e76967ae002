import numpy as np
import pytest

from calibration.intrinsics import CameraIntrinsics
from calibration.store import load_undistorter, save_camera
from robot.errors import RobotError
from robot.frames import FrameProcessor


def striped(h=480, w=640):
    frame = np.zeros((h, w, 3), np.uint8)
    frame[:, :, 2] = 200  # blue everywhere
    frame[:, : (w - h) // 2] = (200, 0, 0)  # red outside the centre square
    frame[:, w - (w - h) // 2 :] = (200, 0, 0)
    return frame


def test_centre_square_crop_keeps_the_aspect_ratio():
    out = FrameProcessor("front", 64)(striped())
    assert out.shape == (64, 64, 3) and out.dtype == np.uint8
    assert out[:, :, 0].max() == 0 and out[:, :, 2].min() == 200  # no red: the sides were cropped
    squeezed = FrameProcessor("front", 64, crop="none")(striped())
    assert squeezed[:, 0, 0].min() == 200  # the whole frame, squeezed


def test_undistortion_from_a_calibration_file_runs_first(tmp_path):
    k = np.array([[500.0, 0, 320], [0, 500.0, 240], [0, 0, 1]])
    save_camera("cam0", CameraIntrinsics(k, np.array([-0.3, 0.1, 0, 0, 0]), (640, 480)), 0.2, tmp_path)
    rng = np.random.default_rng(0)
    frame = rng.integers(0, 255, (480, 640, 3), dtype=np.uint8)
    proc = FrameProcessor.from_calibration("front", "cam0", (480, 640), 96, calibration_dir=str(tmp_path))
    expected = FrameProcessor("front", 96)(load_undistorter("cam0", tmp_path, image_size=(640, 480))(frame))
    np.testing.assert_array_equal(proc(frame), expected)
    assert not np.array_equal(proc(frame), FrameProcessor("front", 96)(frame))


def test_bad_frames_are_refused():
    with pytest.raises(RobotError, match="lacks camera 'front'"):
        FrameProcessor("front", 64)(None)
    with pytest.raises(RobotError, match="expected \\(H, W, 3\\)"):
        FrameProcessor("front", 64)(np.zeros((4, 4)))
