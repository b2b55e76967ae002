"""Hand-eye calibration: the camera's pose on the gripper (eye-in-hand) or in the robot base frame
(eye-to-hand, i.e. camera-to-base extrinsics), from robot poses and board poses.

Both setups are solved as ``A_i @ X @ B_i = Y`` for all views i, with ``B_i = T_camera_board_i`` and:

- eye-in-hand: ``A_i = T_base_gripper_i``, ``X = T_gripper_camera``, ``Y = T_base_board`` (board fixed);
- eye-to-hand: ``A_i = T_gripper_base_i``, ``X = T_base_camera``, ``Y = T_gripper_board`` (board held).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

import cv2
import numpy as np
from scipy.optimize import least_squares
from scipy.spatial.transform import Rotation

from calibration.config import HandEyeConfig
from calibration.errors import CalibrationError
from calibration.transforms import invert, make_transform, orthonormalize, pose_difference

_METHODS = {
    "tsai": cv2.CALIB_HAND_EYE_TSAI,
    "park": cv2.CALIB_HAND_EYE_PARK,
    "horaud": cv2.CALIB_HAND_EYE_HORAUD,
    "andreff": cv2.CALIB_HAND_EYE_ANDREFF,
    "daniilidis": cv2.CALIB_HAND_EYE_DANIILIDIS,
}
_MIN_ROTATION_DEG = 5.0
# Ranking methods: a 1-degree error moves a point 0.1 m away by 1.745 mm.
_MM_PER_DEG = 1.745


@dataclass(frozen=True)
class MethodResult:
    """One solver's answer and how consistent it is with all views."""

    transform: np.ndarray
    residual_mm: float
    """RMS spread of the implied constant board pose Y over the views (translation, millimetres)."""
    residual_deg: float
    """The same for rotation, in degrees."""


@dataclass(frozen=True)
class HandEyeResult:
    """The solved transform, the per-method answers and their agreement."""

    setup: str
    transform: np.ndarray
    """T_gripper_camera (eye_in_hand) or T_base_camera (eye_to_hand), 4x4, metres."""
    board_transform: np.ndarray
    """The constant board pose: T_base_board (eye_in_hand) or T_gripper_board (eye_to_hand)."""
    chosen: str
    """Which solution ``transform`` is: a method name, or "refined"."""
    residual_mm: float
    residual_deg: float
    methods: dict[str, MethodResult] = field(default_factory=dict)
    agreement_mm: float = 0.0
    """Largest translation difference between any two methods, millimetres."""
    agreement_deg: float = 0.0
    """Largest rotation difference between any two methods, degrees."""
    view_errors_mm: np.ndarray = field(default_factory=lambda: np.zeros(0))
    """Per input view, how far its implied board pose lies from the consensus (translation, mm)."""
    view_errors_deg: np.ndarray = field(default_factory=lambda: np.zeros(0))
    """The same for rotation, degrees."""
    rejected: tuple[int, ...] = ()
    """Indices of views left out as outliers (a wrong robot pose, a misdetected board)."""

    @property
    def transform_name(self) -> str:
        return "T_gripper_camera" if self.setup == "eye_in_hand" else "T_base_camera"


def calibrate_hand_eye(
    T_base_gripper: Sequence[np.ndarray], T_camera_board: Sequence[np.ndarray], cfg: HandEyeConfig
) -> HandEyeResult:
    """Solves hand-eye calibration with several OpenCV methods, reports agreement, optionally refines.

    Args:
        T_base_gripper: Robot gripper poses in the base frame (forward kinematics), one per view.
        T_camera_board: Board poses in the camera frame (``estimate_board_pose``), one per view.
        cfg: Setup (eye_in_hand / eye_to_hand), methods, refinement and acceptance thresholds.

    Raises:
        CalibrationError: mismatched or too few poses, too little rotation, or methods that disagree.
    """
    if len(T_base_gripper) != len(T_camera_board):
        raise CalibrationError(
            f"{len(T_base_gripper)} robot poses but {len(T_camera_board)} board poses; need one of each per view"
        )
    if len(T_base_gripper) < max(cfg.min_poses, 3):
        raise CalibrationError(
            f"only {len(T_base_gripper)} poses; hand-eye needs at least {max(cfg.min_poses, 3)}"
        )
    if not cfg.methods:
        raise CalibrationError("hand-eye methods is empty; choose at least one of " + ", ".join(_METHODS))
    A = [np.asarray(t, dtype=np.float64) for t in T_base_gripper]
    if cfg.setup == "eye_to_hand":
        A = [invert(t) for t in A]
    B = [np.asarray(t, dtype=np.float64) for t in T_camera_board]
    _check_rotation(A)

    X, chosen, methods = _solve(A, B, cfg)
    view_mm, view_deg = _view_errors(A, X, B)
    threshold = max(cfg.outlier_factor * float(np.median(view_mm)), cfg.outlier_min_mm)
    rejected = tuple(int(i) for i in np.flatnonzero(view_mm > threshold))
    if rejected and len(A) - len(rejected) >= max(cfg.min_poses, 3):
        keep = [i for i in range(len(A)) if i not in rejected]
        X, chosen, methods = _solve([A[i] for i in keep], [B[i] for i in keep], cfg)
        view_mm, view_deg = _view_errors(A, X, B)
        Y, residual_mm, residual_deg = _consistency([A[i] for i in keep], X, [B[i] for i in keep])
    else:
        rejected = ()
        Y, residual_mm, residual_deg = _consistency(A, X, B)
    agreement_mm, agreement_deg = _agreement([m.transform for m in methods.values()])
    if agreement_mm > cfg.max_disagreement_mm or agreement_deg > cfg.max_disagreement_deg:
        raise CalibrationError(
            f"hand-eye methods disagree by {agreement_mm:.1f} mm / {agreement_deg:.2f} deg (limits "
            f"{cfg.max_disagreement_mm} mm / {cfg.max_disagreement_deg} deg): use more poses with larger rotations"
        )
    return HandEyeResult(
        setup=cfg.setup,
        transform=X,
        board_transform=Y,
        chosen=chosen,
        residual_mm=residual_mm,
        residual_deg=residual_deg,
        methods=methods,
        agreement_mm=agreement_mm,
        agreement_deg=agreement_deg,
        view_errors_mm=view_mm,
        view_errors_deg=view_deg,
        rejected=rejected,
    )


def _solve(
    A: list[np.ndarray], B: list[np.ndarray], cfg: HandEyeConfig
) -> tuple[np.ndarray, str, dict[str, MethodResult]]:
    """Every configured OpenCV method, then the most consistent one (refined when asked)."""
    methods: dict[str, MethodResult] = {}
    for name in cfg.methods:
        rotation, translation = cv2.calibrateHandEye(
            [a[:3, :3] for a in A],
            [a[:3, 3] for a in A],
            [b[:3, :3] for b in B],
            [b[:3, 3] for b in B],
            method=_METHODS[name],
        )
        X = make_transform(orthonormalize(rotation), translation)
        methods[name] = MethodResult(X, *_consistency(A, X, B)[1:])
    chosen = min(methods, key=lambda n: methods[n].residual_mm + methods[n].residual_deg * _MM_PER_DEG)
    X = methods[chosen].transform
    if cfg.refine:
        return _refine(A, X, B), "refined", methods
    return X, chosen, methods


def _view_errors(A: list[np.ndarray], X: np.ndarray, B: list[np.ndarray]) -> tuple[np.ndarray, np.ndarray]:
    """Per view: how far its implied board pose A_i X B_i lies from the consensus (mm, deg)."""
    Y = _mean_transform([a @ X @ b for a, b in zip(A, B)])
    diffs = np.array([pose_difference(Y, a @ X @ b) for a, b in zip(A, B)])
    return diffs[:, 0], diffs[:, 1]


def _check_rotation(A: list[np.ndarray]) -> None:
    largest = max(pose_difference(A[0], a)[1] for a in A[1:])
    if largest < _MIN_ROTATION_DEG:
        raise CalibrationError(
            f"robot poses barely rotate (largest {largest:.1f} deg from the first); hand-eye needs rotations "
            "of 15+ deg about at least two axes"
        )


def _mean_transform(transforms: list[np.ndarray]) -> np.ndarray:
    rotation = orthonormalize(np.sum([t[:3, :3] for t in transforms], axis=0))
    return make_transform(rotation, np.mean([t[:3, 3] for t in transforms], axis=0))


def _consistency(A: list[np.ndarray], X: np.ndarray, B: list[np.ndarray]) -> tuple[np.ndarray, float, float]:
    Ys = [a @ X @ b for a, b in zip(A, B)]
    Y = _mean_transform(Ys)
    diffs = np.array([pose_difference(Y, y) for y in Ys])
    return Y, float(np.sqrt(np.mean(diffs[:, 0] ** 2))), float(np.sqrt(np.mean(diffs[:, 1] ** 2)))


def _agreement(transforms: list[np.ndarray]) -> tuple[float, float]:
    worst_mm, worst_deg = 0.0, 0.0
    for i, a in enumerate(transforms):
        for b in transforms[i + 1 :]:
            mm, deg = pose_difference(a, b)
            worst_mm, worst_deg = max(worst_mm, mm), max(worst_deg, deg)
    return worst_mm, worst_deg


def _to_params(T: np.ndarray) -> np.ndarray:
    return np.concatenate([Rotation.from_matrix(T[:3, :3]).as_rotvec(), T[:3, 3]])


def _from_params(p: np.ndarray) -> np.ndarray:
    return make_transform(Rotation.from_rotvec(p[:3]).as_matrix(), p[3:])


def _prediction_errors(
    A_inv: list[np.ndarray], X: np.ndarray, Y: np.ndarray, B: list[np.ndarray]
) -> np.ndarray:
    """float[N, 6]: per view, the measured board pose's error against the one X and Y predict, in the
    camera frame (translation in millimetres, rotation vector in radians)."""
    X_inv = invert(X)
    errors = np.empty((len(B), 6))
    for i, (a_inv, b) in enumerate(zip(A_inv, B)):
        predicted = X_inv @ a_inv @ Y
        errors[i, :3] = (predicted[:3, 3] - b[:3, 3]) * 1000.0
        errors[i, 3:] = Rotation.from_matrix(predicted[:3, :3] @ b[:3, :3].T).as_rotvec()
    return errors


def _refine(A: list[np.ndarray], X: np.ndarray, B: list[np.ndarray]) -> np.ndarray:
    """Refines X and Y jointly by weighted least squares on the board pose each view predicts.

    Each of the six error components (camera-frame x, y, z and rotation) is weighted by the inverse of
    its spread under the closed-form solution: board poses from images are far less certain in depth
    than across the image, and the data, not a guess, should say by how much.
    """
    Y, _, _ = _consistency(A, X, B)
    A_inv = [invert(a) for a in A]
    for _ in range(2):
        sigma = np.sqrt(np.mean(_prediction_errors(A_inv, X, Y, B) ** 2, axis=0))
        sigma = np.maximum(sigma, [1e-3, 1e-3, 1e-3, 1e-6, 1e-6, 1e-6])

        def residuals(p: np.ndarray, sigma: np.ndarray = sigma) -> np.ndarray:
            return (_prediction_errors(A_inv, _from_params(p[:6]), _from_params(p[6:]), B) / sigma).ravel()

        solution = least_squares(residuals, np.concatenate([_to_params(X), _to_params(Y)]), method="lm")
        X, Y = _from_params(solution.x[:6]), _from_params(solution.x[6:])
    return X
