"""Calibration boards: their 3D corner layout, detection in images, and a printable drawing.

Board frame (both kinds): origin at the board's outer top-left corner as drawn, x along the columns,
y down the rows, z into the board; corners lie at z = 0, in metres.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property

import cv2
import numpy as np

from calibration.config import BoardConfig
from calibration.errors import CalibrationError

_SUBPIX_CRITERIA = (cv2.TERM_CRITERIA_EPS + cv2.TERM_CRITERIA_MAX_ITER, 50, 1e-3)


@dataclass(frozen=True)
class BoardDetection:
    """Board corners found in one image."""

    corners_px: np.ndarray
    """float32[N, 2] image coordinates (OpenCV: pixel centres at integers, x right, y down)."""
    object_points_m: np.ndarray
    """float32[N, 3] the same corners in the board frame."""
    ids: np.ndarray
    """int32[N] corner ids (row-major over the inner corners)."""


class Board:
    """A checkerboard or ChArUco board described by a BoardConfig."""

    def __init__(self, cfg: BoardConfig) -> None:
        if cfg.squares_x < 3 or cfg.squares_y < 3:
            raise CalibrationError(
                f"board squares_x={cfg.squares_x}, squares_y={cfg.squares_y}: need at least 3 squares each way"
            )
        if cfg.square_size_m <= 0:
            raise CalibrationError(f"board square_size_m={cfg.square_size_m}: must be positive")
        if cfg.kind == "charuco":
            if not 0 < cfg.marker_size_m < cfg.square_size_m:
                raise CalibrationError(
                    f"board marker_size_m={cfg.marker_size_m}: must be positive and smaller than "
                    f"square_size_m={cfg.square_size_m}"
                )
            if not hasattr(cv2.aruco, cfg.aruco_dictionary):
                raise CalibrationError(
                    f"board aruco_dictionary={cfg.aruco_dictionary!r} is not a cv2.aruco.DICT_* name"
                )
        self.cfg = cfg

    @property
    def inner_corners(self) -> tuple[int, int]:
        """Inner corner grid (columns, rows)."""
        return self.cfg.squares_x - 1, self.cfg.squares_y - 1

    @cached_property
    def object_points_m(self) -> np.ndarray:
        """float32[(squares_x-1)*(squares_y-1), 3]: every inner corner in the board frame, row-major."""
        nx, ny = self.inner_corners
        xs, ys = np.meshgrid(np.arange(1, nx + 1), np.arange(1, ny + 1))
        points = np.stack([xs.ravel(), ys.ravel(), np.zeros(nx * ny)], axis=1) * self.cfg.square_size_m
        return points.astype(np.float32)

    @cached_property
    def _charuco(self) -> cv2.aruco.CharucoBoard:
        dictionary = cv2.aruco.getPredefinedDictionary(getattr(cv2.aruco, self.cfg.aruco_dictionary))
        return cv2.aruco.CharucoBoard(
            (self.cfg.squares_x, self.cfg.squares_y),
            self.cfg.square_size_m,
            self.cfg.marker_size_m,
            dictionary,
        )

    def detect(self, image: np.ndarray) -> BoardDetection | None:
        """Finds the board in an image (uint8 HxW or HxWx3 RGB); None when it is not found."""
        gray = image if image.ndim == 2 else cv2.cvtColor(image, cv2.COLOR_RGB2GRAY)
        if self.cfg.kind == "charuco":
            return self._detect_charuco(gray)
        return self._detect_checkerboard(gray)

    def _detect_checkerboard(self, gray: np.ndarray) -> BoardDetection | None:
        pattern = self.inner_corners
        flags = cv2.CALIB_CB_ADAPTIVE_THRESH | cv2.CALIB_CB_NORMALIZE_IMAGE | cv2.CALIB_CB_FAST_CHECK
        found, corners = cv2.findChessboardCorners(gray, pattern, flags=flags)
        if not found:
            return None
        corners = cv2.cornerSubPix(gray, corners, (5, 5), (-1, -1), _SUBPIX_CRITERIA).reshape(-1, 2)
        corners = self._orient_checkerboard(gray, corners)
        ids = np.arange(len(corners), dtype=np.int32)
        return BoardDetection(corners.astype(np.float32), self.object_points_m, ids)

    def _orient_checkerboard(self, gray: np.ndarray, corners: np.ndarray) -> np.ndarray:
        """Puts corner 0 next to the board's first (dark) square.

        OpenCV may return the grid starting from either end; board poses (hand-eye) need one answer.
        With an odd total of squares across both axes the first and last inner squares differ in colour.
        """
        nx, ny = self.inner_corners
        grid = corners.reshape(ny, nx, 2)
        first = grid[:2, :2].reshape(-1, 2).mean(axis=0)
        last = grid[-2:, -2:].reshape(-1, 2).mean(axis=0)
        if (nx + ny) % 2 == 1 and _intensity(gray, first) > _intensity(gray, last):
            return corners[::-1].copy()
        return corners

    def _detect_charuco(self, gray: np.ndarray) -> BoardDetection | None:
        detector = cv2.aruco.CharucoDetector(self._charuco)
        corners, ids, _, _ = detector.detectBoard(gray)
        if ids is None or len(ids) < 4:
            return None
        ids = ids.reshape(-1).astype(np.int32)
        # The ChArUco detector's corners sit half a pixel off (measured on drawn and rendered boards with
        # OpenCV 4.11); a plain sub-pixel pass on the image puts them back on the saddle points.
        corners = cv2.cornerSubPix(gray, corners.astype(np.float32), (5, 5), (-1, -1), _SUBPIX_CRITERIA)
        object_points = np.asarray(self._charuco.getChessboardCorners(), dtype=np.float32)[ids]
        return BoardDetection(corners.reshape(-1, 2).astype(np.float32), object_points, ids)

    def draw(self, px_per_square: int = 80, margin_squares: float = 1.0) -> np.ndarray:
        """A printable uint8 HxW image of the board with a white margin (square (0, 0) is dark)."""
        margin = round(margin_squares * px_per_square)
        width = self.cfg.squares_x * px_per_square + 2 * margin
        height = self.cfg.squares_y * px_per_square + 2 * margin
        if self.cfg.kind == "charuco":
            return self._charuco.generateImage((width, height), marginSize=margin, borderBits=1)
        image = np.full((height, width), 255, dtype=np.uint8)
        for row in range(self.cfg.squares_y):
            for col in range(self.cfg.squares_x):
                if (row + col) % 2 == 0:
                    y0, x0 = margin + row * px_per_square, margin + col * px_per_square
                    image[y0 : y0 + px_per_square, x0 : x0 + px_per_square] = 0
        return image


def _intensity(gray: np.ndarray, point: np.ndarray) -> float:
    x = int(np.clip(round(float(point[0])), 0, gray.shape[1] - 1))
    y = int(np.clip(round(float(point[1])), 0, gray.shape[0] - 1))
    return float(gray[max(y - 1, 0) : y + 2, max(x - 1, 0) : x + 2].mean())
