import cv2
import numpy as np
import pytest

from calibration import (
    CalibrationError,
    CameraIntrinsics,
    IntrinsicsConfig,
    Undistorter,
    calibrate_intrinsics,
    distortion_maps,
    estimate_board_pose,
    undistortion_maps,
)
from calibration.transforms import invert, pose_difference


@pytest.mark.parametrize("views_fixture", ["checkerboard_views", "charuco_views"])
def test_rendered_board_recovers_known_intrinsics(views_fixture, request):
    views = request.getfixturevalue(views_fixture)
    result = calibrate_intrinsics(views.names, views.images, views.board, IntrinsicsConfig())
    got, truth = result.intrinsics, views.truth
    assert len(result.accepted) == len(views.images) >= 15
    for name in ("fx", "fy", "cx", "cy"):
        assert getattr(got, name) == pytest.approx(getattr(truth, name), rel=0.01), name
    assert result.rms_px < 0.5
    assert all(report.rms_px < 0.5 for report in result.images)
    assert got.image_size == (640, 480)
    # The fitted board poses are the poses the views were rendered from.
    for report, T_world_camera in zip(result.images, views.T_world_camera):
        T_truth = invert(T_world_camera) @ views.scene.T_world_board
        mm, deg = pose_difference(T_truth, report.T_camera_board)
        assert mm < 2.0 and deg < 0.3


def test_bad_views_are_rejected_with_reasons(checkerboard_views):
    views = checkerboard_views
    blank = np.full_like(views.images[0], 90)
    # A wavy warp (think rolling shutter on a shaking arm): the board is found but no lens explains it.
    ys, xs = np.mgrid[0:480, 0:640].astype(np.float32)
    foreign = cv2.remap(views.images[3], xs + 4.0 * np.sin(ys / 15.0), ys, cv2.INTER_LINEAR)
    names = [*views.names, "blank.png", "foreign.png"]
    result = calibrate_intrinsics(names, [*views.images, blank, foreign], views.board, IntrinsicsConfig())
    reasons = {report.name: report.reason for report in result.rejected}
    assert reasons["blank.png"] == "board not found"
    assert "outlier" in reasons["foreign.png"]
    assert set(reasons) == {"blank.png", "foreign.png"}
    assert result.intrinsics.fy == pytest.approx(views.truth.fy, rel=0.01)
    assert [report.name for report in result.images] == names


def test_too_few_views_is_one_clear_error(checkerboard_views):
    views = checkerboard_views
    with pytest.raises(CalibrationError, match=r"only 4 of 4 images show the board; need at least 10"):
        calibrate_intrinsics(views.names[:4], views.images[:4], views.board, IntrinsicsConfig())


def test_no_board_anywhere_is_one_clear_error(checkerboard_views):
    blank = [np.full((480, 640, 3), 128, np.uint8)] * 3
    with pytest.raises(CalibrationError, match="no board found in any of the 3 images"):
        calibrate_intrinsics(["a", "b", "c"], blank, checkerboard_views.board, IntrinsicsConfig())


def test_mixed_image_sizes_name_the_odd_image(checkerboard_views):
    views = checkerboard_views
    images = [*views.images[:3], views.images[3][:240, :320]]
    with pytest.raises(CalibrationError, match=r"image view03.png is 320x240 but view00.png is 640x480"):
        calibrate_intrinsics(views.names[:4], images, views.board, IntrinsicsConfig())


def test_board_pose_from_one_view(charuco_views):
    views = charuco_views
    detection = views.board.detect(views.images[5])
    assert detection is not None
    T_camera_board, rms_px = estimate_board_pose(views.truth, detection)
    T_truth = invert(views.T_world_camera[5]) @ views.scene.T_world_board
    mm, deg = pose_difference(T_truth, T_camera_board)
    assert mm < 1.0 and deg < 0.2 and rms_px < 0.3


def test_undistortion_maps_send_each_pixel_to_its_distorted_source():
    matrix = np.array([[500.0, 0, 330], [0, 505.0, 235], [0, 0, 1]])
    lens = CameraIntrinsics(matrix, np.array([-0.25, 0.08, 0.001, -0.0005, 0.0]), (640, 480))
    map_x, map_y, pinhole = undistortion_maps(lens)
    np.testing.assert_allclose(pinhole.camera_matrix, matrix)
    rays = np.array([[0.2, -0.15, 1.0], [-0.3, 0.2, 1.0], [0.0, 0.0, 1.0]])
    ideal = pinhole.project(rays, np.eye(4))
    distorted = lens.project(rays, np.eye(4))
    for (u, v), (xd, yd) in zip(np.round(ideal).astype(int), distorted):
        # Rounding the ideal pixel moves the source by up to ~0.5 px times the local magnification.
        assert abs(map_x[v, u] - xd) < 1.0 and abs(map_y[v, u] - yd) < 1.0
    undistort = Undistorter(lens)
    assert undistort(np.zeros((480, 640, 3), np.uint8)).shape == (480, 640, 3)
    with pytest.raises(CalibrationError, match="frame is 320x240 but the camera was calibrated at 640x480"):
        undistort(np.zeros((240, 320, 3), np.uint8))


def test_distortion_maps_invert_the_undistortion_maps():
    lens = CameraIntrinsics(
        np.array([[480.0, 0, 322], [0, 482.0, 236], [0, 0, 1]]),
        np.array([-0.3, 0.1, 0.0, 0.0, 0.0]),
        (640, 480),
    )
    ideal_x, ideal_y = distortion_maps(lens)
    rays = np.array([[0.3, -0.2, 1.0], [-0.4, 0.25, 1.0], [0.05, 0.1, 1.0]])
    distorted = lens.project(rays, np.eye(4))
    ideal = lens.project(rays, np.eye(4), distort=False)
    for (u, v), (x, y) in zip(np.round(distorted).astype(int), ideal):
        assert abs(ideal_x[v, u] - x) < 1.0 and abs(ideal_y[v, u] - y) < 1.0
    # Distorting then undistorting a smooth image gives it back away from the borders.
    image = np.tile(np.linspace(0, 255, 640, dtype=np.float32), (480, 1))
    there = cv2.remap(image, ideal_x, ideal_y, cv2.INTER_LINEAR)
    map_x, map_y, _ = undistortion_maps(lens)
    back = cv2.remap(there, map_x, map_y, cv2.INTER_LINEAR)
    assert np.max(np.abs(back - image)[120:360, 160:480]) < 1.0


def test_duplicate_names_are_rejected(checkerboard_views):
    views = checkerboard_views
    with pytest.raises(CalibrationError, match="one unique name per image"):
        calibrate_intrinsics(["a", "a"], views.images[:2], views.board, IntrinsicsConfig())


def test_crop_and_resize_intrinsics_match_resized_frames():
    lens = CameraIntrinsics(np.array([[600.0, 0, 331], [0, 596.0, 233], [0, 0, 1]]), np.zeros(5), (640, 480))
    small = lens.crop_and_resize((80, 0, 480, 480), (128, 128))
    assert small.image_size == (128, 128)
    # A bright pixel block moves exactly as the new camera matrix says after a real crop + resize.
    frame = np.zeros((480, 640), np.float32)
    frame[300:315, 400:415] = 1.0
    resized = cv2.resize(frame[0:480, 80:560], (128, 128), interpolation=cv2.INTER_AREA)
    ys, xs = np.nonzero(resized > 0)
    weights = resized[ys, xs]
    centre = np.array([(xs * weights).sum(), (ys * weights).sum()]) / weights.sum()
    ray = np.array([[(407 - lens.cx) / lens.fx, (307 - lens.cy) / lens.fy, 1.0]])
    np.testing.assert_allclose(small.project(ray, np.eye(4))[0], centre, atol=0.05)
    with pytest.raises(CalibrationError, match="crop box"):
        lens.crop_and_resize((200, 0, 480, 480), (128, 128))
