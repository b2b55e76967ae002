"""Calibration files: versioned JSON per camera id (intrinsics) and per robot/camera pair (hand-eye).

Layout, next to LeRobot's motor calibration (``<dir>/robots/<robot>/<id>.json``)::

    <dir>/cameras/<camera_id>.json                 intrinsics
    <dir>/hand_eye/<robot_id>/<camera_id>.json     T_gripper_camera or T_base_camera
    <dir>/.../history/<id>.<created>.json          files that a newer calibration replaced

``<dir>`` defaults to LeRobot's ``$HF_LEROBOT_CALIBRATION`` (``$HF_LEROBOT_HOME/calibration``,
``~/.cache/huggingface/lerobot/calibration``). Files are written atomically; a replaced file is kept.
"""

from __future__ import annotations

import datetime as dt
import hashlib
import json
import os
import re
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from calibration.errors import CalibrationError
from calibration.intrinsics import CameraIntrinsics, Undistorter

SCHEMA_VERSION = 1
"""Bumped when the file layout changes; files with another version are stale and must be redone."""
CAMERA_SCHEMA = "vlmrl.calibration.camera"
HAND_EYE_SCHEMA = "vlmrl.calibration.hand_eye"
_STD_KEYS = ("fx", "fy", "cx", "cy")
_ID = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]*$")


def default_calibration_dir() -> Path:
    """LeRobot's calibration directory (honours HF_LEROBOT_CALIBRATION and HF_LEROBOT_HOME)."""
    if os.environ.get("HF_LEROBOT_CALIBRATION"):
        return Path(os.environ["HF_LEROBOT_CALIBRATION"]).expanduser()
    home = os.environ.get("HF_LEROBOT_HOME")
    if home:
        return Path(home).expanduser() / "calibration"
    hf_home = Path(os.environ.get("HF_HOME", "~/.cache/huggingface")).expanduser()
    return hf_home / "lerobot" / "calibration"


@dataclass(frozen=True)
class CameraCalibration:
    """A camera's stored intrinsics."""

    camera_id: str
    intrinsics: CameraIntrinsics
    rms_px: float
    created_utc: str
    fingerprint: str
    """Hash of the intrinsics; hand-eye files record it to notice a later recalibration."""
    extra: dict[str, Any]
    std_px: dict[str, float] | None = None
    """One standard deviation of fx, fy, cx, cy in pixels, from the fit (None: a file without it)."""


@dataclass(frozen=True)
class HandEyeCalibration:
    """A robot/camera pair's stored hand-eye transform."""

    robot_id: str
    camera_id: str
    setup: str
    """eye_in_hand (transform = T_gripper_camera) or eye_to_hand (transform = T_base_camera)."""
    transform: np.ndarray
    created_utc: str
    extra: dict[str, Any]
    residual_mm: float | None = None
    """RMS spread of the implied board pose over the views, millimetres (the pose's uncertainty; None: a
    file without it)."""
    residual_deg: float | None = None
    """The same for rotation, degrees."""


def camera_path(camera_id: str, calibration_dir: Path | None = None) -> Path:
    """Where a camera's intrinsics file lives."""
    return (
        (calibration_dir or default_calibration_dir()) / "cameras" / f"{_check_id(camera_id, 'camera')}.json"
    )


def hand_eye_path(robot_id: str, camera_id: str, calibration_dir: Path | None = None) -> Path:
    """Where a robot/camera pair's hand-eye file lives."""
    root = calibration_dir or default_calibration_dir()
    return root / "hand_eye" / _check_id(robot_id, "robot") / f"{_check_id(camera_id, 'camera')}.json"


def save_camera(
    camera_id: str,
    intrinsics: CameraIntrinsics,
    rms_px: float,
    calibration_dir: Path | None = None,
    extra: dict[str, Any] | None = None,
    std_px: dict[str, float] | None = None,
) -> Path:
    """Writes a camera's intrinsics file (atomically, keeping any file it replaces); returns its path.

    ``std_px`` (fx, fy, cx, cy standard deviations, ``IntrinsicsResult.std_px``) is stored when given; it
    is not part of the fingerprint, so hand-eye files stay valid."""
    payload = _intrinsics_payload(intrinsics)
    document = {
        "schema": CAMERA_SCHEMA,
        "version": SCHEMA_VERSION,
        "camera_id": camera_id,
        "created_utc": _now(),
        **payload,
        "rms_px": float(rms_px),
        "fingerprint": _fingerprint(payload),
        "extra": extra or {},
    }
    if std_px is not None:
        document["std_px"] = {k: float(std_px[k]) for k in _STD_KEYS}
    return _write(camera_path(camera_id, calibration_dir), document)


def load_camera(
    camera_id: str,
    calibration_dir: Path | None = None,
    image_size: tuple[int, int] | None = None,
    max_age_days: float | None = None,
) -> CameraCalibration:
    """Loads a camera's intrinsics by id.

    Args:
        camera_id: The id used when calibrating.
        calibration_dir: Defaults to ``default_calibration_dir()``.
        image_size: When given, the (width, height) frames will have; another size is an error.
        max_age_days: When given, older files are stale.

    Raises:
        CalibrationError: missing, unreadable, stale (old schema, too old, other image size) file.
    """
    path = camera_path(camera_id, calibration_dir)
    doc = _read(path, CAMERA_SCHEMA, f"vlmrl calibrate camera --camera-id {camera_id}", max_age_days)
    try:
        matrix = np.asarray(doc["camera_matrix"], dtype=np.float64)
        dist = np.asarray(doc["dist_coeffs"], dtype=np.float64)
        size = (int(doc["image_size"][0]), int(doc["image_size"][1]))
        rms, created = float(doc["rms_px"]), str(doc["created_utc"])
        std = None
        if doc.get("std_px") is not None:
            std = {k: _uncertainty(doc["std_px"][k], path, f"std_px.{k}") for k in _STD_KEYS}
    except (KeyError, TypeError, ValueError, IndexError) as exc:
        raise CalibrationError(f"calibration file {path} is malformed: {exc!r}") from None
    if matrix.shape != (3, 3) or dist.shape != (5,):
        raise CalibrationError(
            f"calibration file {path}: camera_matrix must be 3x3 and dist_coeffs 5 numbers"
        )
    if image_size is not None and tuple(image_size) != size:
        raise CalibrationError(
            f"calibration file {path} is for {size[0]}x{size[1]} images but frames are "
            f"{image_size[0]}x{image_size[1]}: recalibrate at this resolution"
        )
    intrinsics = CameraIntrinsics(matrix, dist, size)
    return CameraCalibration(
        camera_id,
        intrinsics,
        rms,
        created,
        _fingerprint(_intrinsics_payload(intrinsics)),
        doc.get("extra", {}),
        std,
    )


def load_undistorter(
    camera_id: str, calibration_dir: Path | None = None, image_size: tuple[int, int] | None = None
) -> Undistorter:
    """The undistortion for a camera's incoming frames, by id (maps built once; keeps the camera matrix,
    so undistorted frames match the sim camera built from the same file).

    Raises:
        CalibrationError: missing or stale file, or frames of another size.
    """
    return Undistorter(load_camera(camera_id, calibration_dir, image_size=image_size).intrinsics)


def save_hand_eye(
    robot_id: str,
    camera_id: str,
    setup: str,
    transform: np.ndarray,
    camera: CameraCalibration,
    calibration_dir: Path | None = None,
    extra: dict[str, Any] | None = None,
    residual: tuple[float, float] | None = None,
) -> Path:
    """Writes a hand-eye file, recording which intrinsics it was computed with; returns its path.

    ``residual`` (millimetres, degrees: ``HandEyeResult.residual_mm``, ``residual_deg``) is stored as the
    transform's uncertainty when given."""
    if setup not in ("eye_in_hand", "eye_to_hand"):
        raise CalibrationError(f"hand-eye setup {setup!r}: expected eye_in_hand or eye_to_hand")
    document = {
        "schema": HAND_EYE_SCHEMA,
        "version": SCHEMA_VERSION,
        "robot_id": robot_id,
        "camera_id": camera_id,
        "created_utc": _now(),
        "setup": setup,
        "transform_name": "T_gripper_camera" if setup == "eye_in_hand" else "T_base_camera",
        "transform": np.asarray(transform, dtype=np.float64).tolist(),
        "camera_fingerprint": camera.fingerprint,
        "extra": extra or {},
    }
    if residual is not None:
        document["residual_mm"], document["residual_deg"] = float(residual[0]), float(residual[1])
    return _write(hand_eye_path(robot_id, camera_id, calibration_dir), document)


def load_hand_eye(
    robot_id: str, camera_id: str, calibration_dir: Path | None = None, max_age_days: float | None = None
) -> HandEyeCalibration:
    """Loads a hand-eye transform; stale when the camera was recalibrated since (or by schema/age).

    Raises:
        CalibrationError: missing, unreadable or stale file, or a missing camera file.
    """
    path = hand_eye_path(robot_id, camera_id, calibration_dir)
    command = f"vlmrl calibrate handeye --robot-id {robot_id} --camera-id {camera_id}"
    doc = _read(path, HAND_EYE_SCHEMA, command, max_age_days)
    camera = load_camera(camera_id, calibration_dir)
    if doc.get("camera_fingerprint") != camera.fingerprint:
        raise CalibrationError(
            f"calibration file {path} is stale: camera {camera_id!r} was recalibrated after it; rerun `{command}`"
        )
    try:
        transform = np.asarray(doc["transform"], dtype=np.float64)
        setup, created = str(doc["setup"]), str(doc["created_utc"])
        # Files written before the residual had its own keys kept it in ``extra`` (vlmrl calibrate handeye).
        extra = doc["extra"] if isinstance(doc.get("extra"), dict) else {}
        residual = [doc.get(k, extra.get(k)) for k in ("residual_mm", "residual_deg")]
        residual_mm, residual_deg = (
            (_uncertainty(residual[0], path, "residual_mm"), _uncertainty(residual[1], path, "residual_deg"))
            if None not in residual
            else (None, None)
        )
    except (KeyError, TypeError, ValueError) as exc:
        raise CalibrationError(f"calibration file {path} is malformed: {exc!r}") from None
    if transform.shape != (4, 4) or not np.all(np.isfinite(transform)):
        raise CalibrationError(f"calibration file {path}: transform must be a finite 4x4 matrix")
    return HandEyeCalibration(
        robot_id, camera_id, setup, transform, created, doc.get("extra", {}), residual_mm, residual_deg
    )


def _uncertainty(value: Any, path: Path, key: str) -> float:
    """A stored standard deviation or residual: a finite number >= 0."""
    if isinstance(value, bool) or not isinstance(value, int | float) or not np.isfinite(value) or value < 0:
        raise CalibrationError(f"calibration file {path}: {key} must be a finite number >= 0, got {value!r}")
    return float(value)


def _check_id(value: str, what: str) -> str:
    if not _ID.match(value):
        raise CalibrationError(
            f"{what} id {value!r}: use letters, digits, '_', '-' or '.' (no path separators)"
        )
    return value


def _now() -> str:
    return dt.datetime.now(dt.UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def _intrinsics_payload(intrinsics: CameraIntrinsics) -> dict[str, Any]:
    return {
        "image_size": [int(intrinsics.image_size[0]), int(intrinsics.image_size[1])],
        "camera_matrix": np.asarray(intrinsics.camera_matrix, dtype=np.float64).tolist(),
        "dist_coeffs": np.asarray(intrinsics.dist_coeffs, dtype=np.float64).reshape(-1)[:5].tolist(),
    }


def _fingerprint(payload: dict[str, Any]) -> str:
    return hashlib.sha256(json.dumps(payload, sort_keys=True).encode()).hexdigest()[:16]


def _write(path: Path, document: dict[str, Any]) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    if path.exists():
        # Keep the replaced calibration: a bad recalibration must not destroy a good one.
        history = path.parent / "history"
        history.mkdir(exist_ok=True)
        stamp = dt.datetime.now(dt.UTC).strftime("%Y%m%dT%H%M%S%f")
        os.replace(path, history / f"{path.stem}.{stamp}.json")
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.stem}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "w") as handle:
            json.dump(document, handle, indent=2)
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    return path


def _read(path: Path, schema: str, command: str, max_age_days: float | None) -> dict[str, Any]:
    if not path.is_file():
        raise CalibrationError(f"no calibration file {path}; create it with `{command}`")
    try:
        doc = json.loads(path.read_text())
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise CalibrationError(f"calibration file {path} is unreadable: {exc}") from None
    if not isinstance(doc, dict) or doc.get("schema") != schema:
        raise CalibrationError(f"calibration file {path} is not a {schema} file")
    if doc.get("version") != SCHEMA_VERSION:
        raise CalibrationError(
            f"calibration file {path} is stale (schema version {doc.get('version')}, this vlmrl reads "
            f"{SCHEMA_VERSION}); rerun `{command}`"
        )
    if max_age_days is not None:
        try:
            created = dt.datetime.strptime(doc["created_utc"], "%Y-%m-%dT%H:%M:%S.%fZ").replace(tzinfo=dt.UTC)
        except (KeyError, TypeError, ValueError):
            raise CalibrationError(f"calibration file {path} has no valid created_utc") from None
        age_days = (dt.datetime.now(dt.UTC) - created).total_seconds() / 86400.0
        if age_days > max_age_days:
            raise CalibrationError(
                f"calibration file {path} is stale ({age_days:.0f} days old, limit {max_age_days:g}); rerun `{command}`"
            )
    return doc
