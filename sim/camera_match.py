"""A MuJoCo camera that sees what a calibrated real camera sees: pose, field of view and image size.

MuJoCo renders an ideal pinhole, so the sim matches the *undistorted* real frame (see
``calibration.Undistorter``, which keeps the calibrated camera matrix), or, with
``CameraRenderer(distort=True)``, the raw frame (the lens distortion is applied by a remap). Two ways
to express the calibrated camera matrix:

- ``"intrinsic"``: MuJoCo's camera intrinsics (``sensorsize``, focal lengths and principal point in
  pixels), which render fx != fy and an off-centre principal point exactly; residual 0.
- ``"crop"``: ``fovy`` only (square pixels, principal point at the image centre, as robosuite and most
  MJCF cameras). The principal-point offset that fovy cannot express is handled by rendering a larger
  image whose centre is the calibrated principal point and cropping; what remains is the sub-pixel part
  of the offset (at most half a pixel per axis) and fx - fy, both reported.

Frames: ``T_parent_camera`` is an OpenCV camera pose (z forward, y down) in the MuJoCo camera's parent
body frame, metres. MuJoCo cameras look down -z with y up; the conversion is done here.
"""

from __future__ import annotations

import math
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

import cv2
import mujoco
import numpy as np

from calibration import CameraIntrinsics, distortion_maps, load_camera, load_hand_eye
from calibration.transforms import opencv_to_mujoco_camera
from robot.frames import Crop, FrameProcessor
from sim.errors import SimError

MatchMethod = Literal["intrinsic", "crop"]
# Any sensor pixel pitch works for MuJoCo's intrinsics (only ratios matter); 1 micron keeps the numbers sane.
_PIXEL_PITCH_M = 1e-6


@dataclass(frozen=True)
class SimCamera:
    """MuJoCo camera settings reproducing a calibrated camera, and what could not be reproduced."""

    method: MatchMethod
    image_size: tuple[int, int]
    """(width, height) of the real camera's frames, and of the frames ``CameraRenderer`` returns."""
    pos: np.ndarray
    """float64[3] camera position in its parent body frame, metres (MuJoCo ``cam_pos``)."""
    quat: np.ndarray
    """float64[4] w, x, y, z orientation of the MuJoCo camera frame (``cam_quat``)."""
    fovy_deg: float
    """Vertical field of view of the rendered image, degrees (``cam_fovy``)."""
    render_size: tuple[int, int]
    """(width, height) MuJoCo renders before cropping (== image_size for "intrinsic")."""
    crop_offset_px: tuple[int, int]
    """Top-left corner (x, y) of the crop in the rendered image."""
    camera_matrix: np.ndarray
    """float64[3, 3] the calibrated camera matrix being matched."""
    sim_camera_matrix: np.ndarray
    """float64[3, 3] the camera matrix the sim really renders, after cropping."""
    dist_coeffs: np.ndarray = field(default_factory=lambda: np.zeros(5))
    """float64[5] the calibrated lens distortion; ``CameraRenderer(distort=True)`` applies it."""

    @property
    def principal_offset_px(self) -> tuple[float, float]:
        """Calibrated principal point minus the image centre: what a fovy-only camera cannot express."""
        width, height = self.image_size
        return (
            float(self.camera_matrix[0, 2] - (width - 1) / 2),
            float(self.camera_matrix[1, 2] - (height - 1) / 2),
        )

    @property
    def principal_residual_px(self) -> tuple[float, float]:
        """Rendered minus calibrated principal point after matching, pixels."""
        return (
            float(self.sim_camera_matrix[0, 2] - self.camera_matrix[0, 2]),
            float(self.sim_camera_matrix[1, 2] - self.camera_matrix[1, 2]),
        )

    @property
    def focal_residual_px(self) -> tuple[float, float]:
        """Rendered minus calibrated focal lengths (fx, fy), pixels."""
        return (
            float(self.sim_camera_matrix[0, 0] - self.camera_matrix[0, 0]),
            float(self.sim_camera_matrix[1, 1] - self.camera_matrix[1, 1]),
        )

    @property
    def intrinsics(self) -> CameraIntrinsics:
        """The pinhole camera the sim renders (after cropping)."""
        return CameraIntrinsics(self.sim_camera_matrix, np.zeros(5), self.image_size)

    def summary(self) -> dict[str, Any]:
        """Plain-JSON description: MuJoCo settings and residuals."""
        return {
            "method": self.method,
            "image_size": list(self.image_size),
            "render_size": list(self.render_size),
            "crop_offset_px": list(self.crop_offset_px),
            "pos": self.pos.tolist(),
            "quat": self.quat.tolist(),
            "fovy_deg": self.fovy_deg,
            "principal_offset_px": list(self.principal_offset_px),
            "principal_residual_px": list(self.principal_residual_px),
            "focal_residual_px": list(self.focal_residual_px),
            "camera_matrix": self.camera_matrix.tolist(),
            "dist_coeffs": self.dist_coeffs.tolist(),
        }

    def to_mjcf(self, name: str) -> str:
        """An MJCF ``<camera>`` element with these settings (for the parent body's ``<body>``).

        For "crop" the element's fovy is for ``render_size``: render at that size and crop the image size
        at ``crop_offset_px`` (``CameraRenderer`` does both).
        """
        pos = " ".join(f"{v:.6g}" for v in self.pos)
        quat = " ".join(f"{v:.8g}" for v in self.quat)
        element = f'<camera name="{name}" pos="{pos}" quat="{quat}"'
        if self.method == "crop":
            element += f' fovy="{self.fovy_deg:.8g}"'
        else:  # MJCF takes either fovy or a sensor
            fx, fy = self.camera_matrix[0, 0], self.camera_matrix[1, 1]
            ppx, ppy = _mujoco_principal(self.camera_matrix, self.image_size)
            width, height = self.image_size
            element += (
                f' resolution="{width} {height}" sensorsize="{width * _PIXEL_PITCH_M:.6g} {height * _PIXEL_PITCH_M:.6g}"'
                f' focalpixel="{fx:.6g} {fy:.6g}" principalpixel="{ppx:.6g} {ppy:.6g}"'
            )
        return element + "/>"


def match_camera(
    intrinsics: CameraIntrinsics, T_parent_camera: np.ndarray, method: MatchMethod = "intrinsic"
) -> SimCamera:
    """Computes MuJoCo camera settings for a calibrated camera at a given pose.

    Args:
        intrinsics: Calibrated intrinsics; the distortion is carried along for ``CameraRenderer(distort=True)``.
        T_parent_camera: OpenCV camera pose in the MuJoCo camera's parent body frame (4x4, metres).
        method: "intrinsic" (exact) or "crop" (fovy only; render larger and crop).

    Raises:
        SimError: an unknown method, a non-rigid pose, or a principal point outside the image.
    """
    width, height = intrinsics.image_size
    matrix = np.asarray(intrinsics.camera_matrix, dtype=np.float64)
    dist = np.asarray(intrinsics.dist_coeffs, dtype=np.float64).reshape(-1)[:5].copy()
    fx, fy, cx, cy = matrix[0, 0], matrix[1, 1], matrix[0, 2], matrix[1, 2]
    if method not in ("intrinsic", "crop"):
        raise SimError(f"camera match method {method!r}: expected 'intrinsic' or 'crop'")
    if not (fx > 0 and fy > 0 and 0 <= cx < width and 0 <= cy < height):
        raise SimError(
            f"camera matrix fx={fx:.1f} fy={fy:.1f} cx={cx:.1f} cy={cy:.1f} does not fit a {width}x{height} image"
        )
    T = np.asarray(T_parent_camera, dtype=np.float64)
    if T.shape != (4, 4) or not np.allclose(T[:3, :3] @ T[:3, :3].T, np.eye(3), atol=1e-6):
        raise SimError("T_parent_camera must be a rigid 4x4 transform")
    T_mj = opencv_to_mujoco_camera(T)
    quat = np.zeros(4)
    mujoco.mju_mat2Quat(quat, T_mj[:3, :3].reshape(-1))

    if method == "intrinsic":
        fovy = math.degrees(2 * math.atan((height / 2) / fy))
        return SimCamera(
            method,
            (width, height),
            T_mj[:3, 3].copy(),
            quat,
            fovy,
            (width, height),
            (0, 0),
            matrix,
            matrix.copy(),
            dist,
        )

    # Render an image whose centre is the calibrated principal point, then crop the real frame from it.
    pad_x, pad_y = math.ceil(abs(cx - (width - 1) / 2)), math.ceil(abs(cy - (height - 1) / 2))
    render_size = (width + 2 * pad_x, height + 2 * pad_y)
    offset_x = round(pad_x - (cx - (width - 1) / 2))
    offset_y = round(pad_y - (cy - (height - 1) / 2))
    fovy = math.degrees(2 * math.atan((render_size[1] / 2) / fy))
    sim_matrix = np.array(
        [
            [fy, 0.0, (render_size[0] - 1) / 2 - offset_x],
            [0.0, fy, (render_size[1] - 1) / 2 - offset_y],
            [0.0, 0.0, 1.0],
        ]
    )
    return SimCamera(
        method,
        (width, height),
        T_mj[:3, 3].copy(),
        quat,
        fovy,
        render_size,
        (offset_x, offset_y),
        matrix,
        sim_matrix,
        dist,
    )


def apply_camera(model: mujoco.MjModel, camera: str, sim_camera: SimCamera) -> int:
    """Writes the settings into a compiled model's camera (fixed mode); returns the camera id.

    Also grows the offscreen buffer when the render size needs it. Create renderers afterwards.

    Raises:
        SimError: no camera of that name.
    """
    camera_id = mujoco.mj_name2id(model, mujoco.mjtObj.mjOBJ_CAMERA, camera)
    if camera_id < 0:
        names = [model.camera(i).name for i in range(model.ncam)]
        raise SimError(f"no camera {camera!r} in the model; cameras: {names}")
    model.cam_mode[camera_id] = mujoco.mjtCamLight.mjCAMLIGHT_FIXED
    model.cam_pos[camera_id] = sim_camera.pos
    model.cam_quat[camera_id] = sim_camera.quat
    model.cam_fovy[camera_id] = sim_camera.fovy_deg
    width, height = sim_camera.image_size
    if sim_camera.method == "intrinsic":
        ppx, ppy = _mujoco_principal(sim_camera.camera_matrix, sim_camera.image_size)
        model.cam_resolution[camera_id] = (width, height)
        model.cam_sensorsize[camera_id] = (width * _PIXEL_PITCH_M, height * _PIXEL_PITCH_M)
        model.cam_intrinsic[camera_id] = (
            sim_camera.camera_matrix[0, 0] * _PIXEL_PITCH_M,
            sim_camera.camera_matrix[1, 1] * _PIXEL_PITCH_M,
            ppx * _PIXEL_PITCH_M,
            ppy * _PIXEL_PITCH_M,
        )
    else:
        model.cam_sensorsize[camera_id] = (0.0, 0.0)  # zero sensor size: MuJoCo uses fovy
    model.vis.global_.offwidth = max(model.vis.global_.offwidth, sim_camera.render_size[0])
    model.vis.global_.offheight = max(model.vis.global_.offheight, sim_camera.render_size[1])
    return int(camera_id)


def _mujoco_principal(matrix: np.ndarray, image_size: tuple[int, int]) -> tuple[float, float]:
    """MuJoCo's principalpixel for an OpenCV principal point.

    Measured with MuJoCo 3.3 (tests/sim/test_camera_match.py checks it by rendering): a principal offset
    (px, py) renders the optical axis at u = (W-1)/2 - px, v = (H-1)/2 + py.
    """
    width, height = image_size
    return float((width - 1) / 2 - matrix[0, 2]), float(matrix[1, 2] - (height - 1) / 2)


class CameraRenderer:
    """Renders a matched camera at the real camera's image size (cropping when the match needs it).

    With ``distort=True`` frames get the calibrated lens distortion, like the raw real frames; without it
    they match real frames undistorted by ``calibration.Undistorter``.
    """

    def __init__(
        self, model: mujoco.MjModel, camera: str, sim_camera: SimCamera, distort: bool = False
    ) -> None:
        self.camera_id = apply_camera(model, camera, sim_camera)
        self.sim_camera = sim_camera
        self._maps = None
        if distort and np.any(sim_camera.dist_coeffs):
            lens = CameraIntrinsics(sim_camera.camera_matrix, sim_camera.dist_coeffs, sim_camera.image_size)
            self._maps = distortion_maps(lens)
        width, height = sim_camera.render_size
        try:
            self._renderer = mujoco.Renderer(model, height=height, width=width)
        except Exception as error:
            raise SimError(
                f"cannot create a {width}x{height} MUJOCO_GL={os.environ.get('MUJOCO_GL', '(unset)')} rendering "
                f"context ({error}); set MUJOCO_GL=egl or MUJOCO_GL=osmesa"
            ) from None

    def render(self, data: mujoco.MjData) -> np.ndarray:
        """uint8[H, W, 3] RGB at the real camera's size, row 0 at the top."""
        self._renderer.update_scene(data, camera=self.camera_id)
        frame = self._renderer.render()
        x, y = self.sim_camera.crop_offset_px
        width, height = self.sim_camera.image_size
        frame = frame[y : y + height, x : x + width]
        if self._maps is not None:
            return cv2.remap(
                frame, self._maps[0], self._maps[1], cv2.INTER_LINEAR, borderMode=cv2.BORDER_REPLICATE
            )
        return frame.copy()

    def close(self) -> None:
        """Frees the GL context."""
        self._renderer.close()


def observation_intrinsics(
    intrinsics: CameraIntrinsics, size: int, crop: Crop = "center_square"
) -> CameraIntrinsics:
    """The pinhole camera of a robot env's ``size`` x ``size`` observations of a calibrated camera.

    ``robot.frames.FrameProcessor.from_calibration`` undistorts each frame (keeping the calibrated camera
    matrix), crops it as ``crop`` and resizes it; this is the camera those observations are taken with.
    """
    width, height = intrinsics.image_size
    box = FrameProcessor("", size, crop).crop_box(height, width)
    square = intrinsics.crop_and_resize(box, (size, size))
    return CameraIntrinsics(square.camera_matrix, np.zeros(5), square.image_size)


def load_sim_camera(
    camera_id: str,
    robot_id: str | None = None,
    calibration_dir: Path | None = None,
    method: MatchMethod = "intrinsic",
    T_parent_reference: np.ndarray | None = None,
    T_reference_camera: np.ndarray | None = None,
    observation_size: int | None = None,
    crop: Crop = "center_square",
) -> SimCamera:
    """Builds a matched camera from calibration files, by id.

    Args:
        camera_id: Intrinsics file id (``vlmrl calibrate camera --camera-id``).
        robot_id: Hand-eye file id; the pose comes from ``<robot_id>/<camera_id>`` (T_base_camera for a
            fixed camera, T_gripper_camera for a wrist camera). Without it, pass T_reference_camera.
        calibration_dir: Defaults to LeRobot's calibration directory.
        method: "intrinsic" or "crop".
        T_parent_reference: Pose of the hand-eye reference frame (robot base, or gripper frame for a wrist
            camera) in the MuJoCo camera's parent body frame; identity when they coincide.
        T_reference_camera: Use this pose instead of a hand-eye file.
        observation_size: When given, match the robot env's square observations of the camera (undistorted,
            cropped as ``crop``, resized to this side; see ``observation_intrinsics``) instead of its frames.
        crop: How those observations are cropped (``LeRobotEnvConfig.camera_crop``).

    Raises:
        CalibrationError: missing or stale calibration files.
        SimError: neither robot_id nor T_reference_camera given.
    """
    camera = load_camera(camera_id, calibration_dir)
    if T_reference_camera is None:
        if robot_id is None:
            raise SimError("a sim camera needs a pose: give robot_id (hand-eye file) or T_reference_camera")
        T_reference_camera = load_hand_eye(robot_id, camera_id, calibration_dir).transform
    T_parent = np.eye(4) if T_parent_reference is None else np.asarray(T_parent_reference, dtype=np.float64)
    intrinsics = camera.intrinsics
    if observation_size is not None:
        intrinsics = observation_intrinsics(intrinsics, observation_size, crop)
    return match_camera(intrinsics, T_parent @ T_reference_camera, method)
