"""Camera intrinsics (pinhole + distortion) from board images, with per-image reprojection errors."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

import cv2
import numpy as np

from calibration.board import Board, BoardDetection
from calibration.config import IntrinsicsConfig
from calibration.errors import CalibrationError
from calibration.transforms import make_transform

_DISTORTION_FLAGS = {
    "none": cv2.CALIB_FIX_K1 | cv2.CALIB_FIX_K2 | cv2.CALIB_FIX_K3 | cv2.CALIB_ZERO_TANGENT_DIST,
    "k1k2": cv2.CALIB_FIX_K3 | cv2.CALIB_ZERO_TANGENT_DIST,
    "k1k2p1p2": cv2.CALIB_FIX_K3,
    "k1k2p1p2k3": 0,
}


@dataclass(frozen=True)
class CameraIntrinsics:
    """A calibrated pinhole camera with OpenCV distortion (pixel centres at integer coordinates)."""

    camera_matrix: np.ndarray
    """float64[3, 3] [[fx, 0, cx], [0, fy, cy], [0, 0, 1]] in pixels."""
    dist_coeffs: np.ndarray
    """float64[5] k1, k2, p1, p2, k3."""
    image_size: tuple[int, int]
    """(width, height) in pixels of the images calibrated."""

    @property
    def fx(self) -> float:
        return float(self.camera_matrix[0, 0])

    @property
    def fy(self) -> float:
        return float(self.camera_matrix[1, 1])

    @property
    def cx(self) -> float:
        return float(self.camera_matrix[0, 2])

    @property
    def cy(self) -> float:
        return float(self.camera_matrix[1, 2])

    def crop_and_resize(self, box_xywh: tuple[int, int, int, int], size: tuple[int, int]) -> CameraIntrinsics:
        """Intrinsics of frames cropped to ``box_xywh`` (pixels) then resized to ``size`` (width, height).

        Lets the sim render observations directly at training resolution that match real frames
        processed the same way (e.g. a centre square crop resized to 128x128). Distortion is kept:
        undistort before cropping.
        """
        x0, y0, width, height = box_xywh
        if (
            width <= 0
            or height <= 0
            or x0 < 0
            or y0 < 0
            or x0 + width > self.image_size[0]
            or y0 + height > self.image_size[1]
        ):
            raise CalibrationError(
                f"crop box {box_xywh} does not fit a {self.image_size[0]}x{self.image_size[1]} image"
            )
        sx, sy = size[0] / width, size[1] / height
        # Pixel centres at integers: u' = (u - x0 + 0.5) * sx - 0.5.
        affine = np.array(
            [[sx, 0.0, (0.5 - x0) * sx - 0.5], [0.0, sy, (0.5 - y0) * sy - 0.5], [0.0, 0.0, 1.0]]
        )
        return CameraIntrinsics(
            affine @ self.camera_matrix, self.dist_coeffs.copy(), (int(size[0]), int(size[1]))
        )

    def project(self, points_m: np.ndarray, T_camera_points: np.ndarray, distort: bool = True) -> np.ndarray:
        """Projects float[N, 3] points given in a frame posed by T_camera_points into pixels float[N, 2]."""
        rvec = cv2.Rodrigues(T_camera_points[:3, :3])[0]
        dist = self.dist_coeffs if distort else np.zeros(5)
        pixels, _ = cv2.projectPoints(
            np.asarray(points_m, dtype=np.float64).reshape(-1, 1, 3),
            rvec,
            T_camera_points[:3, 3],
            self.camera_matrix,
            dist,
        )
        return pixels.reshape(-1, 2)


@dataclass(frozen=True)
class ImageReport:
    """What happened to one input image."""

    name: str
    accepted: bool
    reason: str = ""
    """Why the image was rejected (empty when accepted)."""
    n_corners: int = 0
    rms_px: float = float("nan")
    """Reprojection RMS of this image's corners under the final fit (NaN when the board was not found)."""
    detection: BoardDetection | None = None
    T_camera_board: np.ndarray | None = None
    """Board pose in the camera frame from the fit (accepted images only)."""


@dataclass(frozen=True)
class IntrinsicsResult:
    """Calibrated intrinsics plus the evidence: overall RMS and a report per image."""

    intrinsics: CameraIntrinsics
    rms_px: float
    """Reprojection RMS over all corners of the accepted images, in pixels."""
    images: list[ImageReport] = field(default_factory=list)
    std_px: dict[str, float] = field(default_factory=dict)
    """One standard deviation of fx, fy, cx, cy (pixels) as the fit estimates it (OpenCV's
    ``calibrateCameraExtended``); a parameter the fit holds fixed has 0."""

    @property
    def accepted(self) -> list[ImageReport]:
        return [report for report in self.images if report.accepted]

    @property
    def rejected(self) -> list[ImageReport]:
        return [report for report in self.images if not report.accepted]


def check_image_sizes(names: Sequence[str], images: Sequence[np.ndarray]) -> tuple[int, int]:
    """Returns the common (width, height); raises CalibrationError naming the first image that differs."""
    if not images:
        raise CalibrationError("no images given")
    height, width = images[0].shape[:2]
    for name, image in zip(names, images):
        if image.shape[:2] != (height, width):
            raise CalibrationError(
                f"image {name} is {image.shape[1]}x{image.shape[0]} but {names[0]} is {width}x{height}; "
                "all images must come from one camera at one resolution"
            )
    return width, height


def calibrate_intrinsics(
    names: Sequence[str],
    images: Sequence[np.ndarray],
    board: Board,
    cfg: IntrinsicsConfig,
    on_image: Callable[[str], None] | None = None,
) -> IntrinsicsResult:
    """Detects the board in every image and fits the camera matrix and distortion.

    Args:
        names: One name per image (file names), used in reports and errors.
        images: uint8 HxW or HxWx3 (RGB) images, all the same size.
        board: The calibration board.
        cfg: Fit options and rejection thresholds.
        on_image: Called with each image's name after detection (progress bars).

    Raises:
        CalibrationError: mixed image sizes, or fewer than ``cfg.min_images`` usable views.
    """
    if len(names) != len(images) or len(set(names)) != len(names):
        raise CalibrationError(
            f"need one unique name per image (got {len(set(names))} names for {len(images)} images)"
        )
    image_size = check_image_sizes(names, images)
    reports: dict[str, ImageReport] = {}
    detections: dict[str, BoardDetection] = {}
    min_corners = max(cfg.min_corners, 6) if board.cfg.kind == "charuco" else 0
    for name, image in zip(names, images):
        detection = board.detect(image)
        if detection is None:
            reports[name] = ImageReport(name, accepted=False, reason="board not found")
        elif len(detection.ids) < min_corners:
            reports[name] = ImageReport(
                name,
                accepted=False,
                reason=f"only {len(detection.ids)} corners (need {min_corners})",
                n_corners=len(detection.ids),
                detection=detection,
            )
        else:
            detections[name] = detection
        if on_image is not None:
            on_image(name)
    _require_enough(detections, len(names), cfg)

    intrinsics, rms, poses, errors, std = _fit(detections, image_size, cfg)
    median = float(np.median(list(errors.values())))
    threshold = max(cfg.outlier_factor * median, cfg.outlier_min_px)
    outliers = {name for name, err in errors.items() if err > threshold}
    if outliers and len(detections) - len(outliers) >= cfg.min_images:
        for name in outliers:
            reports[name] = ImageReport(
                name,
                accepted=False,
                reason=f"reprojection RMS {errors[name]:.2f} px > {threshold:.2f} px (outlier)",
                n_corners=len(detections[name].ids),
                rms_px=errors[name],
                detection=detections.pop(name),
            )
        intrinsics, rms, poses, errors, std = _fit(detections, image_size, cfg)
    for name, detection in detections.items():
        reports[name] = ImageReport(
            name,
            accepted=True,
            n_corners=len(detection.ids),
            rms_px=errors[name],
            detection=detection,
            T_camera_board=poses[name],
        )
    return IntrinsicsResult(intrinsics, rms, [reports[name] for name in names], std)


def _require_enough(detections: dict[str, BoardDetection], n_images: int, cfg: IntrinsicsConfig) -> None:
    if len(detections) < cfg.min_images:
        if not detections:
            raise CalibrationError(
                f"no board found in any of the {n_images} images (check the board settings)"
            )
        raise CalibrationError(
            f"only {len(detections)} of {n_images} images show the board; need at least {cfg.min_images} "
            "(take more views, or lower min_images)"
        )


def _fit(
    detections: dict[str, BoardDetection], image_size: tuple[int, int], cfg: IntrinsicsConfig
) -> tuple[CameraIntrinsics, float, dict[str, np.ndarray], dict[str, float], dict[str, float]]:
    names = list(detections)
    object_points = [detections[name].object_points_m.reshape(-1, 1, 3) for name in names]
    image_points = [detections[name].corners_px.reshape(-1, 1, 2) for name in names]
    flags = _DISTORTION_FLAGS[cfg.distortion]
    camera_matrix = np.eye(3)
    if cfg.fix_aspect_ratio:
        flags |= cv2.CALIB_FIX_ASPECT_RATIO
    criteria = (cv2.TERM_CRITERIA_COUNT + cv2.TERM_CRITERIA_EPS, 100, 1e-9)
    try:
        # The extended fit also estimates each parameter's standard deviation (the sim sizes its camera
        # randomisation from them, issue #19).
        rms, fitted_matrix, dist, rvecs, tvecs, std_intrinsics, _, _ = cv2.calibrateCameraExtended(
            object_points,
            image_points,
            image_size,
            camera_matrix,
            np.zeros(5),
            flags=flags,
            criteria=criteria,
        )
    except cv2.error as exc:
        message = str(exc).strip().splitlines()[-1]
        raise CalibrationError(
            f"the intrinsic fit failed on {len(names)} views ({message}); take more varied views"
        ) from None
    intrinsics = CameraIntrinsics(np.asarray(fitted_matrix), np.asarray(dist).reshape(-1)[:5], image_size)
    poses, errors = {}, {}
    for name, rvec, tvec in zip(names, rvecs, tvecs):
        poses[name] = make_transform(rvec, tvec)
        projected = intrinsics.project(detections[name].object_points_m, poses[name])
        residual = projected - detections[name].corners_px
        errors[name] = float(np.sqrt(np.mean(np.sum(residual**2, axis=1))))
    std = {k: float(v) for k, v in zip(("fx", "fy", "cx", "cy"), np.asarray(std_intrinsics).reshape(-1))}
    return intrinsics, float(rms), poses, errors, std


def estimate_board_pose(intrinsics: CameraIntrinsics, detection: BoardDetection) -> tuple[np.ndarray, float]:
    """Board pose T_camera_board (4x4) from one detection with known intrinsics, and its RMS (pixels)."""
    ok, rvec, tvec = cv2.solvePnP(
        detection.object_points_m,
        detection.corners_px,
        intrinsics.camera_matrix,
        intrinsics.dist_coeffs,
        flags=cv2.SOLVEPNP_ITERATIVE,
    )
    if not ok:
        raise CalibrationError("solvePnP failed to find the board pose")
    pose = make_transform(rvec, tvec)
    residual = intrinsics.project(detection.object_points_m, pose) - detection.corners_px
    return pose, float(np.sqrt(np.mean(np.sum(residual**2, axis=1))))


def undistortion_maps(
    intrinsics: CameraIntrinsics, alpha: float | None = None
) -> tuple[np.ndarray, np.ndarray, CameraIntrinsics]:
    """Remap tables that undistort frames, plus the pinhole intrinsics of the undistorted image.

    Use as ``cv2.remap(frame, map_x, map_y, cv2.INTER_LINEAR)``; build once per camera, not per frame.
    ``alpha`` None keeps the calibrated camera matrix (what the matched sim camera renders); 0 zooms to
    keep only valid pixels, 1 keeps every source pixel (black borders).
    """
    new_matrix = intrinsics.camera_matrix
    if alpha is not None:
        new_matrix, _ = cv2.getOptimalNewCameraMatrix(
            intrinsics.camera_matrix,
            intrinsics.dist_coeffs,
            intrinsics.image_size,
            alpha,
            intrinsics.image_size,
        )
    map_x, map_y = cv2.initUndistortRectifyMap(
        intrinsics.camera_matrix,
        intrinsics.dist_coeffs,
        np.eye(3),
        np.asarray(new_matrix),
        intrinsics.image_size,
        cv2.CV_32FC1,
    )
    return map_x, map_y, CameraIntrinsics(new_matrix, np.zeros(5), intrinsics.image_size)


def distortion_maps(intrinsics: CameraIntrinsics) -> tuple[np.ndarray, np.ndarray]:
    """Remap tables that turn an ideal pinhole image (camera matrix unchanged) into a distorted one.

    The inverse of ``undistortion_maps``: ``cv2.remap(pinhole, map_x, map_y, cv2.INTER_LINEAR)`` makes a
    simulated frame look like the raw frame of the calibrated lens.
    """
    width, height = intrinsics.image_size
    xs, ys = np.meshgrid(np.arange(width, dtype=np.float64), np.arange(height, dtype=np.float64))
    distorted = np.stack([xs.ravel(), ys.ravel()], axis=1).reshape(-1, 1, 2)
    criteria = (cv2.TERM_CRITERIA_COUNT | cv2.TERM_CRITERIA_EPS, 20, 1e-6)
    ideal = cv2.undistortPointsIter(
        distorted,
        intrinsics.camera_matrix,
        intrinsics.dist_coeffs,
        np.eye(3),
        intrinsics.camera_matrix,
        criteria,
    ).reshape(height, width, 2)
    return ideal[..., 0].astype(np.float32), ideal[..., 1].astype(np.float32)


class Undistorter:
    """Undistorts frames of one calibrated camera (maps built once); ``intrinsics`` is the output camera."""

    def __init__(self, intrinsics: CameraIntrinsics, alpha: float | None = None) -> None:
        map_x, map_y, self.intrinsics = undistortion_maps(intrinsics, alpha)
        # Fixed-point maps remap about twice as fast as float ones, at 1/32 px interpolation steps.
        self._maps = cv2.convertMaps(map_x, map_y, cv2.CV_16SC2)

    def __call__(self, frame: np.ndarray) -> np.ndarray:
        """Undistorts one uint8 HxW(x3) frame of the calibrated size."""
        width, height = self.intrinsics.image_size
        if frame.shape[:2] != (height, width):
            raise CalibrationError(
                f"frame is {frame.shape[1]}x{frame.shape[0]} but the camera was calibrated at {width}x{height}"
            )
        return cv2.remap(frame, self._maps[0], self._maps[1], cv2.INTER_LINEAR)
