"""Rigid transforms as 4x4 homogeneous matrices (metres), named ``T_<to>_<from>``.

``T_base_camera`` maps points in the camera frame to the base frame. Camera frames follow OpenCV:
x right, y down, z forward (out of the lens).
"""

from __future__ import annotations

import cv2
import numpy as np


def make_transform(rotation: np.ndarray, translation_m: np.ndarray) -> np.ndarray:
    """Builds a 4x4 transform from a 3x3 rotation matrix (or a Rodrigues vector) and a translation."""
    rotation = np.asarray(rotation, dtype=np.float64)
    if rotation.shape != (3, 3):
        rotation = cv2.Rodrigues(rotation.reshape(3, 1))[0]
    transform = np.eye(4)
    transform[:3, :3] = rotation
    transform[:3, 3] = np.asarray(translation_m, dtype=np.float64).reshape(3)
    return transform


def invert(transform: np.ndarray) -> np.ndarray:
    """Inverse of a rigid 4x4 transform (no general matrix inverse)."""
    rotation, translation = transform[:3, :3], transform[:3, 3]
    inverse = np.eye(4)
    inverse[:3, :3] = rotation.T
    inverse[:3, 3] = -rotation.T @ translation
    return inverse


def rotation_angle_deg(rotation: np.ndarray) -> float:
    """Angle of a 3x3 rotation matrix in degrees (0..180)."""
    cos = (np.trace(rotation) - 1.0) / 2.0
    return float(np.degrees(np.arccos(np.clip(cos, -1.0, 1.0))))


def pose_difference(a: np.ndarray, b: np.ndarray) -> tuple[float, float]:
    """Translation (millimetres) and rotation (degrees) between two 4x4 transforms."""
    translation_mm = float(np.linalg.norm(a[:3, 3] - b[:3, 3]) * 1000.0)
    return translation_mm, rotation_angle_deg(a[:3, :3].T @ b[:3, :3])


def orthonormalize(rotation: np.ndarray) -> np.ndarray:
    """Nearest rotation matrix (SVD), to clean up accumulated numerical drift."""
    u, _, vt = np.linalg.svd(rotation)
    fixed = u @ vt
    if np.linalg.det(fixed) < 0:
        u[:, -1] *= -1
        fixed = u @ vt
    return fixed


# OpenCV cameras look down +z with y down; MuJoCo cameras look down -z with y up: flip y and z.
_CV_TO_MJ = np.diag([1.0, -1.0, -1.0])


def opencv_to_mujoco_camera(T_parent_camera_cv: np.ndarray) -> np.ndarray:
    """Re-expresses an OpenCV camera pose (4x4) as the pose of the equivalent MuJoCo camera frame."""
    T = np.array(T_parent_camera_cv, dtype=np.float64)
    T[:3, :3] = T[:3, :3] @ _CV_TO_MJ
    return T


def mujoco_to_opencv_camera(T_parent_camera_mj: np.ndarray) -> np.ndarray:
    """Inverse of ``opencv_to_mujoco_camera``."""
    return opencv_to_mujoco_camera(T_parent_camera_mj)


def look_at(eye_m: np.ndarray, target_m: np.ndarray, up: np.ndarray | None = None) -> np.ndarray:
    """OpenCV camera pose (4x4, camera-to-world) at ``eye_m`` looking at ``target_m``, image-up near ``up``."""
    up = np.array([0.0, 0.0, 1.0]) if up is None else np.asarray(up, dtype=np.float64)
    z = np.asarray(target_m, dtype=np.float64) - np.asarray(eye_m, dtype=np.float64)
    z /= np.linalg.norm(z)
    x = np.cross(z, up)
    if np.linalg.norm(x) < 1e-9:
        x = np.cross(z, np.array([0.0, 1.0, 0.0]))
    x /= np.linalg.norm(x)
    y = np.cross(z, x)
    return make_transform(np.stack([x, y, z], axis=1), eye_m)
