"""Twin cameras that see what calibrated real cameras see (``SimConfig.camera_calibration``).

On the real arm, ``robot.frames.FrameProcessor`` undistorts each calibrated camera's frames, crops and
resizes them; here the twin's camera gets the pinhole camera of exactly those observations
(``sim.camera_match.load_sim_camera``) and, given hand-eye files, the calibrated pose.
"""

from __future__ import annotations

import math
from pathlib import Path

import mujoco
import numpy as np

from calibration import CalibrationError, load_camera, load_hand_eye
from calibration.store import hand_eye_path
from calibration.transforms import make_transform, mujoco_to_opencv_camera
from sim.camera_match import SimCamera, apply_camera, load_sim_camera
from sim.config import SimConfig
from sim.errors import SimError
from sim.randomization import CameraUncertainty

HAND_EYE_SETUP = {"front": "eye_to_hand", "wrist": "eye_in_hand"}
"""The hand-eye calibration each twin camera's pose comes from: the front camera stands on the table
(T_base_camera), the wrist camera rides on the gripper (T_gripper_camera)."""


def apply_camera_calibration(model: mujoco.MjModel, cfg: SimConfig) -> dict[str, SimCamera]:
    """Re-points the twin cameras ``cfg.camera_calibration`` names; call before creating renderers.

    Args:
        model: The twin's compiled model (changed in place; positions update at the next ``mj_forward``).
        cfg: ``camera_calibration``, ``calibration_robot_id``, ``calibration_dir``, ``camera_crop`` and
            ``image_size`` are read.

    Returns:
        Camera name -> the matched camera now in the model.

    Raises:
        SimError: one line naming the entry: a missing, stale or malformed calibration file, or a
            hand-eye file of the other setup (eye_in_hand for the front camera, say).
    """
    calibration_dir = Path(cfg.calibration_dir).expanduser() if cfg.calibration_dir else None
    matched = {}
    for camera, camera_id in cfg.camera_calibration.items():
        try:
            sim_camera = _match(model, camera, camera_id, cfg, calibration_dir)
            apply_camera(model, camera, sim_camera)
        except (CalibrationError, SimError) as error:
            raise SimError(f"camera_calibration {camera}={camera_id}: {error}") from None
        matched[camera] = sim_camera
    return matched


def calibration_uncertainty(cfg: SimConfig, matched: dict[str, SimCamera]) -> dict[str, CameraUncertainty]:
    """Per calibrated camera, the standard deviations its calibration files store (issue #19): the field
    of view's from the intrinsic fit's fy (``std_px``), the pose's from the hand-eye residual (only when
    ``calibration_robot_id`` places the camera). Files without them leave that part None.

    Args:
        cfg: As for ``apply_camera_calibration``.
        matched: Its result (the rendered field of view of each camera).
    """
    calibration_dir = Path(cfg.calibration_dir).expanduser() if cfg.calibration_dir else None
    out = {}
    for camera, sim_camera in matched.items():
        camera_id = cfg.camera_calibration[camera]
        try:
            calibration = load_camera(camera_id, calibration_dir)
            hand_eye = (
                load_hand_eye(cfg.calibration_robot_id, camera_id, calibration_dir)
                if cfg.calibration_robot_id is not None
                else None
            )
        except CalibrationError as error:
            raise SimError(f"camera_calibration {camera}={camera_id}: {error}") from None
        fovy_deg = None
        if calibration.std_px is not None:
            # fovy = 2 atan(c / fy) for the rendered image's half height c, so d fovy = -sin(fovy) dfy / fy
            # (cropping and resizing scale fy and c alike).
            relative = calibration.std_px["fy"] / calibration.intrinsics.fy
            fovy_deg = math.degrees(math.sin(math.radians(sim_camera.fovy_deg)) * relative)
        pos_m = rot_deg = None
        if hand_eye is not None and hand_eye.residual_mm is not None:
            pos_m, rot_deg = hand_eye.residual_mm / 1000.0, hand_eye.residual_deg
        out[camera] = CameraUncertainty(pos_m=pos_m, rot_deg=rot_deg, fovy_deg=fovy_deg)
    return out


def _match(
    model: mujoco.MjModel, camera: str, camera_id: str, cfg: SimConfig, calibration_dir: Path | None
) -> SimCamera:
    if camera not in HAND_EYE_SETUP:
        raise SimError(
            f"no calibrated pose convention for so101 camera {camera!r}; expected one of {list(HAND_EYE_SETUP)}"
        )
    T_parent_reference = None
    if cfg.calibration_robot_id is None:  # intrinsics only: the reference is the camera's own pose
        cam = model.camera(camera)
        T_reference_camera = mujoco_to_opencv_camera(_transform(cam.quat, cam.pos))
    else:
        hand_eye = load_hand_eye(cfg.calibration_robot_id, camera_id, calibration_dir)
        if hand_eye.setup != HAND_EYE_SETUP[camera]:
            path = hand_eye_path(cfg.calibration_robot_id, camera_id, calibration_dir)
            raise SimError(
                f"hand-eye file {path} is {hand_eye.setup}, but the {camera} camera needs {HAND_EYE_SETUP[camera]}"
            )
        T_reference_camera = hand_eye.transform
        # Reference frames in the camera's parent body: the base body in the world, the tool centre
        # point (a site with the gripper body's axes) in the gripper body.
        ref = model.body("base") if camera == "front" else model.site("tcp")
        T_parent_reference = _transform(ref.quat, ref.pos)
    return load_sim_camera(
        camera_id,
        None,
        calibration_dir,
        "intrinsic",
        T_parent_reference=T_parent_reference,
        T_reference_camera=T_reference_camera,
        observation_size=cfg.image_size,
        crop=cfg.camera_crop,
    )


def _transform(quat_wxyz: np.ndarray, pos_m: np.ndarray) -> np.ndarray:
    rotation = np.zeros(9)
    mujoco.mju_quat2Mat(rotation, np.asarray(quat_wxyz, dtype=np.float64))
    return make_transform(rotation.reshape(3, 3), np.asarray(pos_m, dtype=np.float64))
