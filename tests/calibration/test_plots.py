import cv2
import numpy as np

from calibration import IntrinsicsConfig, calibrate_intrinsics
from calibration.plots import plot_detections, plot_reprojection_errors


def test_pictures_mark_the_bad_image(checkerboard_views, tmp_path):
    views = checkerboard_views
    names = [*views.names, "blank.png"]
    images = [*views.images, np.full_like(views.images[0], 90)]
    result = calibrate_intrinsics(names, images, views.board, IntrinsicsConfig())
    corners = cv2.imread(str(plot_detections(images, result.images, tmp_path / "corners.png")))
    errors = cv2.imread(str(plot_reprojection_errors(result.images, result.rms_px, tmp_path / "errors.png")))
    assert corners is not None and errors is not None
    # 17 tiles of 320x240 in rows of four.
    assert corners.shape == (5 * 240, 4 * 320, 3)
    last_tile = corners[4 * 240 : 5 * 240, 0:320]
    first_tile = corners[0:240, 0:320]

    def red_frame(tile):
        b, g, r = tile[120, 1]
        return r > 180 and g < 80 and b < 80

    assert red_frame(last_tile) and not red_frame(first_tile)
    assert errors.shape[0] > 100 and errors.shape[1] > 300
