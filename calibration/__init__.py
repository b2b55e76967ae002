"""Camera intrinsics, hand-eye and camera-to-base extrinsics, calibration files.

Arrays in, result dataclasses out; no project imports. Frames and units: see ``calibration.transforms``.
"""

from calibration.board import Board, BoardDetection
from calibration.config import BoardConfig, HandEyeConfig, IntrinsicsConfig
from calibration.errors import CalibrationError
from calibration.handeye import HandEyeResult, calibrate_hand_eye
from calibration.intrinsics import (
    CameraIntrinsics,
    ImageReport,
    IntrinsicsResult,
    Undistorter,
    calibrate_intrinsics,
    distortion_maps,
    estimate_board_pose,
    undistortion_maps,
)
from calibration.store import (
    CameraCalibration,
    HandEyeCalibration,
    default_calibration_dir,
    load_camera,
    load_hand_eye,
    load_undistorter,
    save_camera,
    save_hand_eye,
)

__all__ = [
    "Board",
    "BoardConfig",
    "BoardDetection",
    "CalibrationError",
    "CameraCalibration",
    "CameraIntrinsics",
    "HandEyeCalibration",
    "HandEyeConfig",
    "HandEyeResult",
    "ImageReport",
    "IntrinsicsConfig",
    "IntrinsicsResult",
    "Undistorter",
    "calibrate_hand_eye",
    "calibrate_intrinsics",
    "default_calibration_dir",
    "distortion_maps",
    "estimate_board_pose",
    "load_camera",
    "load_hand_eye",
    "load_undistorter",
    "save_camera",
    "save_hand_eye",
    "undistortion_maps",
]
