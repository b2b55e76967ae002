"""Calibrate a camera (intrinsics), a robot/camera pair (hand-eye), and match the sim camera to it.

  vlmrl calibrate camera --images DIR --camera-id front --board.kind charuco ...
  vlmrl calibrate handeye --images DIR --poses poses.json --camera-id wrist --robot-id so101_a
  vlmrl calibrate sim-camera --camera-id front --robot-id so101_a [--mjcf scene.xml --camera front]
  vlmrl calibrate board --out board.png --board.kind charuco    (a board to print)

Results go to versioned JSON files in the calibration directory (LeRobot's, by default), loaded by id;
pictures (detected corners, per-image reprojection error), a report and the resolved config go to
--out-dir. Bad input stops with one line and writes nothing.
"""

from __future__ import annotations

import contextlib
import dataclasses
import datetime as dt
import json
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Annotated, Any, Literal

import cv2
import numpy as np
import tyro
from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn
from rich.table import Table
from scipy.spatial.transform import Rotation

from calibration import (
    Board,
    BoardConfig,
    CalibrationError,
    HandEyeConfig,
    ImageReport,
    IntrinsicsConfig,
    calibrate_hand_eye,
    calibrate_intrinsics,
    estimate_board_pose,
    load_camera,
    save_camera,
    save_hand_eye,
)
from calibration.intrinsics import check_image_sizes
from calibration.plots import plot_detections, plot_reprojection_errors
from calibration.store import camera_path, hand_eye_path
from calibration.transforms import make_transform, pose_difference
from sim.rendering import select_gl_backend
from vlmrl.errors import ConfigError

IMAGE_SUFFIXES = (".png", ".jpg", ".jpeg", ".bmp", ".tif", ".tiff")


@dataclass(frozen=True, kw_only=True)
class CameraCommand:
    """Intrinsics from a folder of board images."""

    images: Path
    """Folder of board images from one camera at one resolution (png, jpg, bmp, tif)."""
    camera_id: str
    """Id the calibration is stored and loaded under (e.g. the LeRobot camera name: front, wrist)."""
    board: BoardConfig = field(default_factory=BoardConfig)
    """The board in the images."""
    intrinsics: IntrinsicsConfig = field(default_factory=IntrinsicsConfig)
    """Fit options and rejection thresholds."""
    calibration_dir: Path | None = None
    """Calibration directory; default $HF_LEROBOT_CALIBRATION or ~/.cache/huggingface/lerobot/calibration."""
    out_dir: Path | None = None
    """Where pictures, report and config go; default runs/calibrate/camera-<camera_id>-<time>."""
    dry_run: bool = False
    """Calibrate and report, but do not write the calibration file."""


@dataclass(frozen=True, kw_only=True)
class HandEyeCommand:
    """Hand-eye (eye-in-hand) or camera-to-base (eye-to-hand) from board images plus robot poses."""

    images: Path
    """Folder of board images, one per robot pose, from the calibrated camera."""
    poses: Path
    """JSON file: {"poses": {"<image file name>": 4x4 T_base_gripper in metres, ...}} (forward kinematics)."""
    camera_id: str
    """Camera whose intrinsics file (``vlmrl calibrate camera``) is used and whose pose is solved."""
    robot_id: str
    """Robot id the hand-eye file is stored under (the LeRobot robot id)."""
    board: BoardConfig = field(default_factory=BoardConfig)
    """The board in the images."""
    hand_eye: HandEyeConfig = field(default_factory=HandEyeConfig)
    """Setup (eye_in_hand / eye_to_hand), methods, refinement, acceptance."""
    calibration_dir: Path | None = None
    """Calibration directory; default $HF_LEROBOT_CALIBRATION or ~/.cache/huggingface/lerobot/calibration."""
    out_dir: Path | None = None
    """Where pictures, report and config go; default runs/calibrate/handeye-<robot_id>-<camera_id>-<time>."""
    dry_run: bool = False
    """Calibrate and report, but do not write the hand-eye file."""


@dataclass(frozen=True, kw_only=True)
class SimCameraCommand:
    """MuJoCo camera settings that reproduce a calibrated camera (and a preview render)."""

    camera_id: str
    """Camera whose intrinsics file is used."""
    robot_id: str
    """Robot whose hand-eye file gives the camera pose."""
    method: Literal["intrinsic", "crop"] = "intrinsic"
    """intrinsic: MuJoCo camera intrinsics (exact); crop: fovy only, render larger and crop."""
    reference_pos_m: tuple[float, float, float] = (0.0, 0.0, 0.0)
    """Position of the hand-eye reference frame (robot base, or gripper frame for a wrist camera) in the
    MuJoCo camera's parent body frame."""
    reference_quat_wxyz: tuple[float, float, float, float] = (1.0, 0.0, 0.0, 0.0)
    """Orientation of that reference frame in the parent body frame."""
    mjcf: Path | None = None
    """Optional MJCF scene to render a preview from the matched camera."""
    camera: str = "front"
    """Camera name in --mjcf to overwrite for the preview."""
    distort: bool = False
    """Render the preview with the calibrated lens distortion (like a raw frame) instead of undistorted."""
    calibration_dir: Path | None = None
    """Calibration directory; default $HF_LEROBOT_CALIBRATION or ~/.cache/huggingface/lerobot/calibration."""
    out_dir: Path | None = None
    """Where the settings, MJCF snippet, preview and config go; default runs/calibrate/sim-camera-<id>-<time>."""


@dataclass(frozen=True, kw_only=True)
class BoardCommand:
    """A printable image of the board, at the size its config says when printed at --dpi."""

    out: Path
    """PNG file to write."""
    board: BoardConfig = field(default_factory=BoardConfig)
    """The board to draw."""
    dpi: int = 300
    """Printer resolution; print at 100% scale, then measure a square and pass that as square_size_m."""
    margin_squares: float = 1.0
    """White margin around the board, in squares (detection needs a quiet border)."""


Config = (
    Annotated[CameraCommand, tyro.conf.subcommand("camera")]
    | Annotated[HandEyeCommand, tyro.conf.subcommand("handeye")]
    | Annotated[SimCameraCommand, tyro.conf.subcommand("sim-camera")]
    | Annotated[BoardCommand, tyro.conf.subcommand("board")]
)


def main(cfg: CameraCommand | HandEyeCommand | SimCameraCommand | BoardCommand) -> int:
    """Runs one calibration sub-command; returns 0 (user errors raise CalibrationError/ConfigError)."""
    if isinstance(cfg, CameraCommand):
        return run_camera(cfg)
    if isinstance(cfg, HandEyeCommand):
        return run_hand_eye(cfg)
    if isinstance(cfg, BoardCommand):
        return run_board(cfg)
    return run_sim_camera(cfg)


def run_board(cfg: BoardCommand) -> int:
    from PIL import Image

    board = Board(cfg.board)
    if cfg.dpi <= 0 or cfg.margin_squares < 0.5:
        raise ConfigError(
            f"dpi={cfg.dpi} must be positive and margin_squares={cfg.margin_squares} at least 0.5"
        )
    px_per_square = round(cfg.board.square_size_m / 0.0254 * cfg.dpi)
    if px_per_square < 20:
        raise ConfigError(
            f"square_size_m={cfg.board.square_size_m} at {cfg.dpi} dpi is only {px_per_square} px; raise --dpi"
        )
    image = board.draw(px_per_square, cfg.margin_squares)
    if board.detect(image) is None:
        raise CalibrationError(
            f"the drawn {cfg.board.kind} board is not detectable; check the board settings"
        )
    cfg.out.parent.mkdir(parents=True, exist_ok=True)
    Image.fromarray(image).save(cfg.out, dpi=(cfg.dpi, cfg.dpi))
    width_mm = image.shape[1] / cfg.dpi * 25.4
    height_mm = image.shape[0] / cfg.dpi * 25.4
    Console().print(
        f"wrote {cfg.out}: {cfg.board.squares_x}x{cfg.board.squares_y} {cfg.board.kind}, "
        f"{width_mm:.0f} x {height_mm:.0f} mm at {cfg.dpi} dpi (squares {px_per_square / cfg.dpi * 25.4:.2f} mm)"
    )
    return 0


def run_camera(cfg: CameraCommand) -> int:
    console = Console()
    board = Board(cfg.board)
    target = camera_path(cfg.camera_id, cfg.calibration_dir)
    names, images = load_images(cfg.images)
    with _progress(console, "detecting board", len(names)) as advance:
        result = calibrate_intrinsics(names, images, board, cfg.intrinsics, on_image=advance)

    out_dir = _out_dir(cfg.out_dir, f"camera-{cfg.camera_id}")
    corners_png = plot_detections(images, result.images, out_dir / "corners.png")
    errors_png = plot_reprojection_errors(result.images, result.rms_px, out_dir / "reprojection_error.png")
    k = result.intrinsics
    report = {
        "camera_id": cfg.camera_id,
        "image_size": list(k.image_size),
        "camera_matrix": k.camera_matrix.tolist(),
        "dist_coeffs": k.dist_coeffs.tolist(),
        "rms_px": result.rms_px,
        "std_px": result.std_px,
        "images": [_image_row(r) for r in result.images],
    }
    _write_json(out_dir / "report.json", report)
    _write_json(out_dir / "config.json", _to_jsonable(cfg))
    if not cfg.dry_run:
        extra = {
            "board": _to_jsonable(cfg.board),
            "n_images": len(result.accepted),
            "rejected": {r.name: r.reason for r in result.rejected},
        }
        save_camera(cfg.camera_id, k, result.rms_px, cfg.calibration_dir, extra=extra, std_px=result.std_px)

    _print_image_table(console, result.images, "per-image reprojection error")
    _print_key_values(
        console,
        f"camera {cfg.camera_id}",
        {
            "image size": f"{k.image_size[0]}x{k.image_size[1]}",
            "fx, fy (px)": f"{k.fx:.2f}, {k.fy:.2f}",
            "cx, cy (px)": f"{k.cx:.2f}, {k.cy:.2f}",
            "distortion k1 k2 p1 p2 k3": " ".join(f"{v:+.4f}" for v in k.dist_coeffs),
            "RMS reprojection (px)": f"{result.rms_px:.3f}",
            "images used / rejected": f"{len(result.accepted)} / {len(result.rejected)}",
            "calibration file": "(dry run: not written)" if cfg.dry_run else str(target),
            "pictures": f"{corners_png}, {errors_png}",
        },
    )
    return 0


def run_hand_eye(cfg: HandEyeCommand) -> int:
    console = Console()
    board = Board(cfg.board)
    target = hand_eye_path(cfg.robot_id, cfg.camera_id, cfg.calibration_dir)
    names, images = load_images(cfg.images)
    poses = load_robot_poses(cfg.poses, names)
    image_size = check_image_sizes(names, images)
    camera = load_camera(cfg.camera_id, cfg.calibration_dir, image_size=image_size)

    reports: dict[str, ImageReport] = {}
    used: list[str] = []
    with _progress(console, "board poses", len(names)) as advance:
        for name, image in zip(names, images):
            detection = board.detect(image)
            if detection is None or len(detection.ids) < 6:
                reports[name] = ImageReport(
                    name, accepted=False, reason="board not found", detection=detection
                )
            else:
                T_camera_board, rms_px = estimate_board_pose(camera.intrinsics, detection)
                reports[name] = ImageReport(
                    name, True, "", len(detection.ids), rms_px, detection, T_camera_board
                )
                used.append(name)
            advance(name)
    if len(used) < cfg.hand_eye.min_poses:
        raise CalibrationError(
            f"the board was found in only {len(used)} of {len(names)} images in {cfg.images}; "
            f"hand-eye needs at least {cfg.hand_eye.min_poses}"
        )
    camera_board = [pose for name in used if (pose := reports[name].T_camera_board) is not None]
    result = calibrate_hand_eye([poses[name] for name in used], camera_board, cfg.hand_eye)
    view_error_mm = dict(zip(used, result.view_errors_mm.tolist()))
    for i in result.rejected:
        reports[used[i]] = dataclasses.replace(
            reports[used[i]], accepted=False, reason=f"hand-eye outlier, {view_error_mm[used[i]]:.1f} mm off"
        )
    n_used = len(used) - len(result.rejected)

    out_dir = _out_dir(cfg.out_dir, f"handeye-{cfg.robot_id}-{cfg.camera_id}")
    ordered = [reports[name] for name in names]
    corners_png = plot_detections(images, ordered, out_dir / "corners.png")
    pose_rms = [r.rms_px for r in ordered if r.accepted]
    errors_png = plot_reprojection_errors(
        ordered, float(np.sqrt(np.mean(np.square(pose_rms)))), out_dir / "reprojection_error.png"
    )
    methods = {
        name: {
            "transform": m.transform.tolist(),
            "residual_mm": m.residual_mm,
            "residual_deg": m.residual_deg,
        }
        for name, m in result.methods.items()
    }
    summary = {
        "chosen": result.chosen,
        "residual_mm": result.residual_mm,
        "residual_deg": result.residual_deg,
        "agreement_mm": result.agreement_mm,
        "agreement_deg": result.agreement_deg,
        "n_poses": n_used,
        "board_transform": result.board_transform.tolist(),
    }
    report = {
        "robot_id": cfg.robot_id,
        "camera_id": cfg.camera_id,
        "setup": result.setup,
        result.transform_name: result.transform.tolist(),
        **summary,
        "methods": methods,
        "images": [{**_image_row(r), "hand_eye_error_mm": view_error_mm.get(r.name)} for r in ordered],
    }
    _write_json(out_dir / "report.json", report)
    _write_json(out_dir / "config.json", _to_jsonable(cfg))
    if not cfg.dry_run:
        save_hand_eye(
            cfg.robot_id,
            cfg.camera_id,
            result.setup,
            result.transform,
            camera,
            cfg.calibration_dir,
            extra=summary,
            residual=(result.residual_mm, result.residual_deg),
        )

    _print_image_table(console, ordered, "board pose per image (RMS: board pose fit)")
    table = Table(title=f"hand-eye methods ({result.setup}; {n_used} poses)")
    for column in ("method", "x y z (mm)", "vs chosen (mm / deg)", "residual (mm / deg)"):
        table.add_column(column)
    for name, m in result.methods.items():
        mm, deg = pose_difference(m.transform, result.transform)
        xyz = " ".join(f"{v * 1000:.1f}" for v in m.transform[:3, 3])
        table.add_row(name, xyz, f"{mm:.2f} / {deg:.3f}", f"{m.residual_mm:.2f} / {m.residual_deg:.3f}")
    console.print(table)
    xyz = " ".join(f"{v * 1000:.1f}" for v in result.transform[:3, 3])
    _print_key_values(
        console,
        f"{result.transform_name} for {cfg.robot_id}/{cfg.camera_id}",
        {
            "translation (mm)": xyz,
            "rotation (rpy deg)": " ".join(f"{v:.2f}" for v in _rpy_deg(result.transform)),
            "solution": result.chosen,
            "residual (mm / deg)": f"{result.residual_mm:.2f} / {result.residual_deg:.3f}",
            "methods agree within (mm / deg)": f"{result.agreement_mm:.2f} / {result.agreement_deg:.3f}",
            "images used / rejected": f"{n_used} / {len(names) - n_used}",
            "hand-eye file": "(dry run: not written)" if cfg.dry_run else str(target),
            "pictures": f"{corners_png}, {errors_png}",
        },
    )
    return 0


def run_sim_camera(cfg: SimCameraCommand) -> int:
    if cfg.mjcf is not None:
        select_gl_backend()  # before mujoco is imported: MuJoCo fixes its GL backend on import
    from sim.camera_match import CameraRenderer, load_sim_camera

    console = Console()
    quat = np.asarray(cfg.reference_quat_wxyz, dtype=np.float64)
    if not np.isclose(np.linalg.norm(quat), 1.0, atol=1e-3):
        raise ConfigError(f"reference_quat_wxyz {cfg.reference_quat_wxyz} is not a unit quaternion")
    import mujoco

    rotation = np.zeros(9)
    mujoco.mju_quat2Mat(rotation, quat)
    T_parent_reference = make_transform(rotation.reshape(3, 3), np.asarray(cfg.reference_pos_m))
    sim_camera = load_sim_camera(
        cfg.camera_id, cfg.robot_id, cfg.calibration_dir, cfg.method, T_parent_reference=T_parent_reference
    )
    model = None
    if cfg.mjcf is not None:
        if not cfg.mjcf.is_file():
            raise ConfigError(f"--mjcf {cfg.mjcf}: no such file")
        try:
            model = mujoco.MjModel.from_xml_path(str(cfg.mjcf))
        except ValueError as exc:
            raise ConfigError(f"--mjcf {cfg.mjcf}: {str(exc).splitlines()[0]}") from None
        if mujoco.mj_name2id(model, mujoco.mjtObj.mjOBJ_CAMERA, cfg.camera) < 0:
            raise ConfigError(f"--mjcf {cfg.mjcf} has no camera {cfg.camera!r}")

    out_dir = _out_dir(cfg.out_dir, f"sim-camera-{cfg.camera_id}")
    summary = {"camera_id": cfg.camera_id, "robot_id": cfg.robot_id, **sim_camera.summary()}
    _write_json(out_dir / "sim_camera.json", summary)
    (out_dir / "camera.xml").write_text(sim_camera.to_mjcf(cfg.camera) + "\n")
    _write_json(out_dir / "config.json", _to_jsonable(cfg))
    preview = None
    if model is not None:
        data = mujoco.MjData(model)
        mujoco.mj_forward(model, data)
        renderer = CameraRenderer(model, cfg.camera, sim_camera, distort=cfg.distort)
        try:
            frame = renderer.render(data)
        finally:
            renderer.close()
        preview = out_dir / "preview.png"
        cv2.imwrite(str(preview), cv2.cvtColor(frame, cv2.COLOR_RGB2BGR))

    offset, residual, focal = (
        sim_camera.principal_offset_px,
        sim_camera.principal_residual_px,
        sim_camera.focal_residual_px,
    )
    handling = (
        "MuJoCo camera intrinsics (exact)"
        if cfg.method == "intrinsic"
        else f"render {sim_camera.render_size[0]}x{sim_camera.render_size[1]}, crop at {sim_camera.crop_offset_px}"
    )
    _print_key_values(
        console,
        f"sim camera for {cfg.camera_id} ({cfg.method})",
        {
            "image size": f"{sim_camera.image_size[0]}x{sim_camera.image_size[1]}",
            "pos (m)": " ".join(f"{v:.4f}" for v in sim_camera.pos),
            "quat (wxyz)": " ".join(f"{v:.5f}" for v in sim_camera.quat),
            "fovy (deg)": f"{sim_camera.fovy_deg:.3f}",
            "principal point offset (px)": f"{offset[0]:+.2f}, {offset[1]:+.2f}",
            "handled by": handling,
            "principal point residual (px)": f"{residual[0]:+.2f}, {residual[1]:+.2f}",
            "focal residual fx, fy (px)": f"{focal[0]:+.2f}, {focal[1]:+.2f}",
            "MJCF": sim_camera.to_mjcf(cfg.camera),
            "written": f"{out_dir}/sim_camera.json, camera.xml" + (f", {preview.name}" if preview else ""),
        },
    )
    return 0


def load_images(folder: Path) -> tuple[list[str], list[np.ndarray]]:
    """Reads every image in a folder (sorted by name) as RGB; raises CalibrationError on bad input."""
    if not folder.is_dir():
        raise CalibrationError(f"image folder {folder} does not exist")
    paths = sorted(p for p in folder.iterdir() if p.suffix.lower() in IMAGE_SUFFIXES)
    if not paths:
        raise CalibrationError(f"no images ({', '.join(IMAGE_SUFFIXES)}) in {folder}")
    images = []
    for path in paths:
        image = cv2.imread(str(path), cv2.IMREAD_COLOR)
        if image is None:
            raise CalibrationError(f"image {path} cannot be read")
        images.append(cv2.cvtColor(image, cv2.COLOR_BGR2RGB))
    return [p.name for p in paths], images


def load_robot_poses(path: Path, names: Sequence[str]) -> dict[str, np.ndarray]:
    """Reads {"poses": {image name: 4x4 T_base_gripper}} and checks there is one rigid pose per image."""
    try:
        doc = json.loads(path.read_text())
    except FileNotFoundError:
        raise CalibrationError(f"poses file {path} does not exist") from None
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise CalibrationError(f"poses file {path} is not valid JSON: {exc}") from None
    poses_doc = doc.get("poses") if isinstance(doc, dict) else None
    if not isinstance(poses_doc, dict):
        raise CalibrationError(
            f'poses file {path}: expected {{"poses": {{"<image name>": 4x4 matrix, ...}}}}'
        )
    poses = {}
    for name in names:
        if name not in poses_doc:
            raise CalibrationError(f"poses file {path} has no pose for image {name}")
        try:
            pose = np.asarray(poses_doc[name], dtype=np.float64)
        except (TypeError, ValueError):
            pose = np.zeros(0)
        rigid = (
            pose.shape == (4, 4)
            and np.all(np.isfinite(pose))
            and np.allclose(pose[:3, :3] @ pose[:3, :3].T, np.eye(3), atol=1e-4)
            and np.allclose(pose[3], [0, 0, 0, 1])
        )
        if not rigid:
            raise CalibrationError(
                f"poses file {path}: pose for {name} is not a rigid 4x4 transform (metres)"
            )
        poses[name] = pose
    return poses


def _out_dir(out_dir: Path | None, stem: str) -> Path:
    if out_dir is None:
        out_dir = Path("runs/calibrate") / f"{stem}-{dt.datetime.now().strftime('%Y%m%d-%H%M%S')}"
    out_dir.mkdir(parents=True, exist_ok=True)
    return out_dir


@contextlib.contextmanager
def _progress(console: Console, description: str, total: int) -> Iterator[Callable[[str], None]]:
    """A rich progress bar; yields ``advance(name)`` to call once per item."""
    columns = (TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn())
    with Progress(*columns, console=console, transient=True) as progress:
        task = progress.add_task(description, total=total)
        yield lambda _name: progress.advance(task)


def _image_row(report: ImageReport) -> dict[str, Any]:
    return {
        "image": report.name,
        "accepted": report.accepted,
        "reason": report.reason,
        "corners": report.n_corners,
        "rms_px": None if np.isnan(report.rms_px) else report.rms_px,
    }


def _print_image_table(console: Console, reports: Sequence[ImageReport], title: str) -> None:
    table = Table(title=title)
    for column in ("image", "corners", "RMS (px)", "status"):
        table.add_column(column)
    for r in reports:
        status = "[green]used[/green]" if r.accepted else f"[red]rejected: {r.reason}[/red]"
        table.add_row(r.name, str(r.n_corners), "-" if np.isnan(r.rms_px) else f"{r.rms_px:.3f}", status)
    console.print(table)


def _print_key_values(console: Console, title: str, rows: dict[str, str]) -> None:
    table = Table(title=title, show_header=False)
    table.add_column(style="bold")
    table.add_column()
    for key, value in rows.items():
        table.add_row(key, value)
    console.print(table)


def _rpy_deg(transform: np.ndarray) -> np.ndarray:
    return Rotation.from_matrix(transform[:3, :3]).as_euler("xyz", degrees=True)


def _to_jsonable(value: Any) -> Any:
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return {f.name: _to_jsonable(getattr(value, f.name)) for f in dataclasses.fields(value)}
    if isinstance(value, Path):
        return str(value)
    if isinstance(value, tuple | list):
        return [_to_jsonable(v) for v in value]
    return value


def _write_json(path: Path, document: Any) -> None:
    path.write_text(json.dumps(document, indent=2) + "\n")
