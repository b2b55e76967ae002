"""Camera frames from a robot to policy observations: undistort (calibration), centre crop, resize.

The twin renders square, distortion-free frames at the training size; a real camera gives e.g. 640x480
frames through a lens. Undistorting with the camera's calibration (``calibration.load_undistorter``, the
same file the sim camera is built from), cropping the centre square and resizing makes the two match
(``CameraIntrinsics.crop_and_resize`` gives the intrinsics of exactly this processing).
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Literal

import numpy as np

from robot.errors import RobotError

Crop = Literal["center_square", "none"]


class FrameProcessor:
    """uint8 HxWx3 camera frame -> uint8 ``size``x``size``x3 observation (or the camera size when None).

    Args:
        camera: name, for error messages.
        size: output side in pixels (None: keep the frame size, no crop).
        crop: ``center_square`` keeps the aspect ratio; ``none`` squeezes the whole frame.
        undistort: a frame -> frame undistortion (see `from_calibration`), applied first.
    """

    def __init__(
        self,
        camera: str,
        size: int | None,
        crop: Crop = "center_square",
        undistort: Callable[[np.ndarray], np.ndarray] | None = None,
    ) -> None:
        self.camera, self.size, self.crop, self.undistort = camera, size, crop, undistort

    @classmethod
    def from_calibration(
        cls,
        camera: str,
        camera_id: str,
        frame_hw: tuple[int, int],
        size: int | None,
        crop: Crop = "center_square",
        calibration_dir: str | None = None,
    ) -> FrameProcessor:
        """A processor that first undistorts with the calibration file of ``camera_id``.

        Raises:
            CalibrationError: a missing or stale file, or one for another frame size.
        """
        from calibration.store import load_undistorter

        directory = Path(calibration_dir) if calibration_dir else None
        undistorter = load_undistorter(camera_id, directory, image_size=(frame_hw[1], frame_hw[0]))
        return cls(camera, size, crop, undistorter)

    def crop_box(self, height: int, width: int) -> tuple[int, int, int, int]:
        """(x0, y0, width, height) of the crop applied to a frame of this size."""
        if self.size is None or self.crop == "none":
            return 0, 0, width, height
        side = min(height, width)
        return (width - side) // 2, (height - side) // 2, side, side

    def __call__(self, image: object) -> np.ndarray:
        if image is None:
            raise RobotError(f"robot observation lacks camera {self.camera!r}")
        frame = np.asarray(image)
        if frame.ndim != 3 or frame.shape[2] != 3:
            raise RobotError(
                f"camera {self.camera!r} gave a frame of shape {frame.shape}; expected (H, W, 3)"
            )
        if frame.dtype != np.uint8:
            frame = np.clip(frame, 0, 255).astype(np.uint8)
        if self.undistort is not None:
            frame = self.undistort(frame)
        if self.size is None:
            return np.ascontiguousarray(frame)
        x0, y0, w, h = self.crop_box(*frame.shape[:2])
        frame = frame[y0 : y0 + h, x0 : x0 + w]
        if frame.shape[:2] != (self.size, self.size):
            import cv2

            frame = cv2.resize(frame, (self.size, self.size), interpolation=cv2.INTER_AREA)
        return np.ascontiguousarray(frame)
