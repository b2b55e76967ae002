"""Configs for board detection, intrinsic calibration and hand-eye calibration."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

HandEyeMethod = Literal["tsai", "park", "horaud", "andreff", "daniilidis"]


@dataclass(frozen=True, kw_only=True)
class BoardConfig:
    """The calibration target: a checkerboard or a ChArUco board, measured in squares."""

    kind: Literal["checkerboard", "charuco"] = "checkerboard"
    """Checkerboard (plain squares) or ChArUco (squares with ArUco markers; robust to partial views)."""
    squares_x: int = 9
    """Number of squares along the board's x axis (columns); inner corners = squares_x - 1."""
    squares_y: int = 6
    """Number of squares along the board's y axis (rows); inner corners = squares_y - 1. Use one odd and
    one even count so a checkerboard's 180-degree rotation can be told apart."""
    square_size_m: float = 0.025
    """Side of one square in metres, as measured on the printed board."""
    marker_size_m: float = 0.018
    """ChArUco only: side of one ArUco marker in metres (smaller than square_size_m)."""
    aruco_dictionary: str = "DICT_4X4_50"
    """ChArUco only: the OpenCV ArUco dictionary name (cv2.aruco.DICT_*)."""


@dataclass(frozen=True, kw_only=True)
class IntrinsicsConfig:
    """How intrinsics are fitted and which images are rejected."""

    min_images: int = 10
    """Fewest usable board views; fewer is an error (15-25 views from varied angles work well)."""
    min_corners: int = 8
    """ChArUco only: fewest detected corners for a view to count."""
    outlier_factor: float = 3.0
    """A view whose reprojection RMS exceeds outlier_factor times the median (and outlier_min_px) is
    rejected and the fit repeated without it."""
    outlier_min_px: float = 1.0
    """Views under this reprojection RMS (pixels) are never rejected as outliers."""
    distortion: Literal["none", "k1k2", "k1k2p1p2", "k1k2p1p2k3"] = "k1k2p1p2"
    """Which lens distortion coefficients are fitted (the rest are held at zero). k3 only for wide-angle
    lenses with views reaching the image corners: otherwise it overfits."""
    fix_aspect_ratio: bool = False
    """Fit a single focal length (fx = fy); good for few or near-frontal views."""


@dataclass(frozen=True, kw_only=True)
class HandEyeConfig:
    """Hand-eye calibration from robot poses and board poses."""

    setup: Literal["eye_in_hand", "eye_to_hand"] = "eye_in_hand"
    """eye_in_hand: camera on the gripper, board fixed (solves T_gripper_camera); eye_to_hand: camera
    fixed, board held by the gripper (solves T_base_camera, the camera-to-base extrinsics)."""
    methods: tuple[HandEyeMethod, ...] = ("tsai", "park", "horaud", "andreff", "daniilidis")
    """cv2.calibrateHandEye methods to run; their spread is reported as the agreement."""
    refine: bool = True
    """Refine the best closed-form solution by nonlinear least squares over all poses."""
    min_poses: int = 5
    """Fewest robot/board pose pairs; use 10+ with large rotations about different axes."""
    outlier_factor: float = 4.0
    """A view whose implied board pose is off by more than outlier_factor times the median (and
    outlier_min_mm) is left out and the solve repeated."""
    outlier_min_mm: float = 3.0
    """Views closer than this (millimetres) to the consensus are never rejected."""
    max_disagreement_mm: float = 10.0
    """Methods disagreeing by more than this (translation, millimetres) make the result an error."""
    max_disagreement_deg: float = 3.0
    """Methods disagreeing by more than this (rotation, degrees) make the result an error."""
