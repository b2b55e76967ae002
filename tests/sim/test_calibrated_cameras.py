"""The twin renders calibrated cameras (``SimConfig.camera_calibration``) as the real arm's env sees them."""

from __future__ import annotations

import math
from pathlib import Path

import mujoco
import numpy as np
import pytest
from scipy.spatial.transform import Rotation

from calibration import CameraIntrinsics, load_camera, save_camera, save_hand_eye
from calibration.transforms import look_at, make_transform
from robot.frames import FrameProcessor
from sim import SimConfig, make_env
from sim.camera_match import CameraRenderer, match_camera
from sim.errors import SimError

# A real 640x480 camera: off-centre principal point, fx != fy, a visible lens distortion.
REAL = CameraIntrinsics(
    np.array([[520.0, 0.0, 319.5 + 14.0], [0.0, 515.0, 239.5 - 9.0], [0.0, 0.0, 1.0]]),
    np.array([-0.18, 0.04, 0.001, -0.001, 0.0]),
    (640, 480),
)
T_BASE_FRONT = look_at(np.array([0.42, 0.22, 0.33]), np.array([0.16, 0.0, 0.04]))
"""OpenCV front camera pose in the robot base frame (eye_to_hand), away from the twin's own camera."""
T_GRIPPER_WRIST = make_transform(
    Rotation.from_euler("xyz", [0, 40, 0], degrees=True).as_matrix(), np.array([-0.05, 0.0, 0.04])
)


@pytest.fixture
def calibration_dir(tmp_path: Path) -> Path:
    """Files as `vlmrl calibrate camera` and `vlmrl calibrate handeye` write them."""
    save_camera("front_cam", REAL, 0.2, tmp_path)
    save_camera("wrist_cam", REAL, 0.2, tmp_path)
    save_hand_eye(
        "arm", "front_cam", "eye_to_hand", T_BASE_FRONT, load_camera("front_cam", tmp_path), tmp_path
    )
    save_hand_eye(
        "arm", "wrist_cam", "eye_in_hand", T_GRIPPER_WRIST, load_camera("wrist_cam", tmp_path), tmp_path
    )
    return tmp_path


def _env(size: int = 64, **kwargs):
    env = make_env(SimConfig(task="lift", image_size=size, **kwargs))
    env.reset(seed=3)
    return env


def _pixel_intrinsics(model: mujoco.MjModel, camera: str) -> tuple[float, float, float, float]:
    """fx, fy and MuJoCo's principal offsets of a camera, in pixels of its resolution."""
    i = model.camera(camera).id
    per_px = model.cam_sensorsize[i] / model.cam_resolution[i]
    fx, fy, px, py = model.cam_intrinsic[i]
    return fx / per_px[0], fy / per_px[1], px / per_px[0], py / per_px[1]


@pytest.mark.parametrize(("size", "crop"), [(64, "center_square"), (48, "none")])
def test_intrinsics_become_those_of_the_real_observation(calibration_dir, size, crop):
    plain = _env(size)
    env = _env(
        size,
        camera_calibration={"front": "front_cam"},
        calibration_dir=str(calibration_dir),
        camera_crop=crop,
    )
    before, model = plain.unwrapped.sim.model.camera("front"), env.unwrapped.sim.model
    # The real env undistorts (keeping the matrix), crops (x0, y0, w, h) and resizes to size x size.
    x0, y0, w, h = (80, 0, 480, 480) if crop == "center_square" else (0, 0, 640, 480)
    sx, sy = size / w, size / h
    fx, fy = REAL.fx * sx, REAL.fy * sy
    cx, cy = (REAL.cx - x0 + 0.5) * sx - 0.5, (REAL.cy - y0 + 0.5) * sy - 0.5
    cam = model.camera("front")
    assert tuple(model.cam_resolution[cam.id]) == (size, size)
    assert cam.fovy[0] == pytest.approx(math.degrees(2 * math.atan(size / 2 / fy)), rel=1e-6)
    assert before.fovy[0] == pytest.approx(42.0)
    centre = (size - 1) / 2
    # MuJoCo's principal offsets: x mirrored, y as is (sim.camera_match._mujoco_principal, checked by rendering).
    np.testing.assert_allclose(
        _pixel_intrinsics(model, "front"), (fx, fy, centre - cx, cy - centre), rtol=1e-5
    )
    assert env.unwrapped.calibrated_cameras["front"].principal_offset_px == pytest.approx(
        (cx - centre, cy - centre)
    )
    # No hand-eye file named: the twin's pose is kept, only the lens changes.
    np.testing.assert_allclose(cam.pos, before.pos, atol=1e-9)
    np.testing.assert_allclose(np.abs(cam.quat @ before.quat), 1.0, atol=1e-9)
    frame, plain_frame = env.unwrapped.render(), plain.unwrapped.render()
    assert frame.shape == plain_frame.shape == (size, size, 3)
    assert np.abs(frame.astype(int) - plain_frame.astype(int)).mean() > 3.0
    env.close()
    plain.close()


def test_front_camera_renders_what_the_real_env_observes(calibration_dir):
    """The real arm's pipeline, simulated: a distorted 640x480 frame from the calibrated pose goes through
    the robot env's FrameProcessor (undistort, centre crop, resize); the twin renders the same picture."""
    common = dict(camera_calibration={"front": "front_cam"}, calibration_dir=str(calibration_dir))
    env = _env(**common, calibration_robot_id="arm")
    plain, real_world = _env(), _env(cameras=())
    action = np.zeros(6, np.float32)
    action[0] = 40.0  # pan the arm: the frames are compared after a few steps of motion
    frames = []
    for e in (env, plain, real_world):
        for _ in range(3):
            obs = e.step(action)[0]
        frames.append(obs.get("pixels/front"))
    twin, plain_frame = frames[0].astype(int), frames[1].astype(int)
    model, data = env.unwrapped.sim.model, env.unwrapped.sim.data
    np.testing.assert_allclose(data.cam_xpos[model.camera("front").id], T_BASE_FRONT[:3, 3], atol=1e-9)
    forward = -data.cam_xmat[model.camera("front").id].reshape(3, 3)[:, 2]  # MuJoCo cameras look down -z
    np.testing.assert_allclose(forward, T_BASE_FRONT[:3, 2], atol=1e-9)

    sim = real_world.unwrapped.sim
    sim.model.light_castshadow[:] = 0  # the twin renders without shadows
    lens = CameraRenderer(sim.model, "front", match_camera(REAL, T_BASE_FRONT), distort=True)
    mujoco.mj_forward(sim.model, sim.data)
    raw = lens.render(sim.data)
    lens.close()
    observe = FrameProcessor.from_calibration(
        "front", "front_cam", (480, 640), 64, "center_square", str(calibration_dir)
    )
    real = observe(raw).astype(int)
    error = np.abs(twin - real).mean()
    # Measured 1.7 levels; the same frame one pixel off is > 4, the twin's own camera ~17.
    assert error < 3.0
    assert np.abs(np.roll(twin, 1, axis=1) - real).mean() > error + 1.0
    assert np.abs(plain_frame - real).mean() > 10.0
    for e in (env, plain, real_world):
        e.close()


def test_wrist_camera_rides_at_the_hand_eye_pose_from_the_tool_centre_point(calibration_dir):
    env = _env(
        cameras=("wrist",),
        camera_calibration={"wrist": "wrist_cam"},
        calibration_robot_id="arm",
        calibration_dir=str(calibration_dir),
    )
    obs = env.step(np.array([20.0, 10.0, 5.0, -30.0, 15.0, 50.0], np.float32))[0]
    model, data = env.unwrapped.sim.model, env.unwrapped.sim.data
    tcp, camera = model.site("tcp").id, model.camera("wrist").id
    T_world_tcp = make_transform(data.site_xmat[tcp].reshape(3, 3), data.site_xpos[tcp])
    T_world_camera = T_world_tcp @ T_GRIPPER_WRIST
    np.testing.assert_allclose(data.cam_xpos[camera], T_world_camera[:3, 3], atol=1e-9)
    np.testing.assert_allclose(-data.cam_xmat[camera].reshape(3, 3)[:, 2], T_world_camera[:3, 2], atol=1e-9)
    assert obs["pixels/wrist"].shape == (64, 64, 3)
    env.close()


def _write(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    return path


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"camera_calibration": {"front": "nope"}}, "camera_calibration front=nope: no calibration file"),
        ({"camera_calibration": {"front": "garbled"}}, "cameras/garbled.json is unreadable"),
        (
            {"camera_calibration": {"front": "front_cam"}, "calibration_robot_id": "other"},
            "hand_eye/other/front_cam.json",
        ),
        (
            {"camera_calibration": {"front": "wrist_cam"}, "calibration_robot_id": "arm"},
            "is eye_in_hand, but the front camera needs eye_to_hand",
        ),
        ({"camera_calibration": {"wrist": "wrist_cam"}}, "names cameras ['wrist'] that are not rendered"),
        ({"camera_calibration": {"top": "front_cam"}, "cameras": ("top",)}, "unknown so101 camera 'top'"),
        ({"camera_calibration": {"front": ""}}, "must map camera names to non-empty calibration camera ids"),
        ({"camera_calibration": {"front": "../front_cam"}}, "camera id '../front_cam': use letters"),
        ({"camera_calibration": "front=front_cam"}, "must map camera names"),
        ({"calibration_robot_id": "arm"}, "calibration_robot_id places calibrated cameras"),
        ({"camera_calibration": {"front": "front_cam"}, "camera_crop": "middle"}, "camera_crop must be"),
        (
            {
                "suite": "robosuite",
                "task": "Lift",
                "cameras": ("agentview",),
                "camera_calibration": {"agentview": "front_cam"},
            },
            "camera_calibration is supported by the so101 suite only, not 'robosuite'",
        ),
    ],
)
def test_bad_calibration_is_one_clear_line(calibration_dir, kwargs, message):
    _write(calibration_dir / "cameras" / "garbled.json", "{not json")
    cfg = SimConfig(**{"task": "lift", "image_size": 32, "calibration_dir": str(calibration_dir), **kwargs})
    with pytest.raises(SimError) as error:
        make_env(cfg).close()
    assert message in str(error.value)
    assert "\n" not in str(error.value)
