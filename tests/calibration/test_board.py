import cv2
import numpy as np
import pytest

from calibration import Board, BoardConfig, CalibrationError


@pytest.mark.parametrize("kind", ["checkerboard", "charuco"])
def test_drawn_board_is_detected_at_its_drawn_corners(kind):
    board = Board(BoardConfig(kind=kind, squares_x=7, squares_y=5, square_size_m=0.03, marker_size_m=0.022))
    px, margin = 60, 60
    image = board.draw(px_per_square=px, margin_squares=1.0)
    assert image.shape == (5 * px + 2 * margin, 7 * px + 2 * margin)
    detection = board.detect(image)
    assert detection is not None
    assert len(detection.ids) == 6 * 4
    # Square edges fall on pixel boundaries; OpenCV puts pixel centres at integers, hence the -0.5.
    expected = detection.object_points_m[:, :2] / 0.03 * px + margin - 0.5
    np.testing.assert_allclose(detection.corners_px, expected, atol=0.3)


def test_checkerboard_corner_order_survives_a_half_turn():
    board = Board(BoardConfig(kind="checkerboard", squares_x=9, squares_y=6))
    image = cv2.copyMakeBorder(board.draw(50, 1.0), 0, 0, 0, 0, cv2.BORDER_CONSTANT)
    upright = board.detect(image)
    turned = board.detect(np.ascontiguousarray(image[::-1, ::-1]))
    assert upright is not None and turned is not None
    height, width = image.shape
    # Corner 0 of the turned image is the same physical corner, at the rotated position.
    np.testing.assert_allclose(
        turned.corners_px[0], [width - 1, height - 1] - upright.corners_px[0], atol=0.3
    )


def test_blank_image_has_no_board():
    board = Board(BoardConfig(kind="charuco"))
    assert board.detect(np.full((240, 320, 3), 200, np.uint8)) is None
    assert Board(BoardConfig()).detect(np.full((240, 320), 200, np.uint8)) is None


@pytest.mark.parametrize(
    ("cfg", "message"),
    [
        (BoardConfig(squares_x=2), "at least 3 squares"),
        (BoardConfig(square_size_m=0.0), "square_size_m"),
        (BoardConfig(kind="charuco", marker_size_m=0.03, square_size_m=0.025), "marker_size_m"),
        (BoardConfig(kind="charuco", aruco_dictionary="DICT_NOPE"), "DICT_NOPE"),
    ],
)
def test_bad_board_config_is_one_clear_error(cfg, message):
    with pytest.raises(CalibrationError, match=message):
        Board(cfg)
