import mujoco
import numpy as np
import pytest

from calibration import (
    Board,
    BoardConfig,
    CalibrationError,
    CameraIntrinsics,
    IntrinsicsConfig,
    calibrate_intrinsics,
    load_camera,
    save_camera,
    save_hand_eye,
)
from calibration.synthetic import CAMERA, BoardScene, random_camera_poses
from calibration.transforms import invert, look_at
from sim.camera_match import CameraRenderer, apply_camera, load_sim_camera, match_camera
from sim.errors import SimError

SIZE = (640, 480)
# A calibrated camera whose principal point is well off-centre and whose pixels are not square.
CALIBRATED = CameraIntrinsics(
    np.array([[612.0, 0.0, 319.5 + 13.3], [0.0, 604.0, 239.5 - 8.6], [0.0, 0.0, 1.0]]), np.zeros(5), SIZE
)


@pytest.fixture(scope="module")
def scene():
    board = Board(
        BoardConfig(kind="charuco", squares_x=9, squares_y=6, square_size_m=0.025, marker_size_m=0.018)
    )
    scene = BoardScene(board)
    yield scene
    scene.close()


def _corner_error_px(scene, sim_camera, T_world_camera, distort=False, expect_distorted=None):
    """Largest distance between the corners the matched camera renders and the calibrated projection."""
    renderer = CameraRenderer(scene.model, CAMERA, sim_camera, distort=distort)
    try:
        mujoco.mj_forward(scene.model, scene.data)
        frame = renderer.render(scene.data)
    finally:
        renderer.close()
    assert frame.shape == (SIZE[1], SIZE[0], 3)
    detection = scene.board.detect(frame)
    assert detection is not None and len(detection.ids) == 40
    T_camera_board = invert(T_world_camera) @ scene.T_world_board
    calibrated = CameraIntrinsics(sim_camera.camera_matrix, sim_camera.dist_coeffs, SIZE)
    expect_distorted = distort if expect_distorted is None else expect_distorted
    projected = calibrated.project(detection.object_points_m, T_camera_board, distort=expect_distorted)
    return float(np.max(np.linalg.norm(projected - detection.corners_px, axis=1)))


@pytest.mark.parametrize("eye", [(0.05, -0.12, 0.42), (-0.15, 0.1, 0.38)])
def test_intrinsic_match_renders_corners_where_the_calibration_projects_them(scene, eye):
    T_world_camera = look_at(np.array(eye), np.zeros(3))
    sim_camera = match_camera(CALIBRATED, T_world_camera, "intrinsic")
    assert sim_camera.principal_residual_px == (0.0, 0.0)
    assert sim_camera.principal_offset_px == pytest.approx((13.3, -8.6))
    assert _corner_error_px(scene, sim_camera, T_world_camera) < 1.0


def test_crop_match_renders_corners_where_the_calibration_projects_them(scene):
    square = CameraIntrinsics(CALIBRATED.camera_matrix * [[604 / 612], [1], [1]], np.zeros(5), SIZE)
    square.camera_matrix[0, 2] = CALIBRATED.cx
    T_world_camera = look_at(np.array([0.08, 0.1, 0.4]), np.zeros(3))
    sim_camera = match_camera(square, T_world_camera, "crop")
    # The off-centre principal point becomes a larger render and an integer crop; half a pixel remains.
    assert sim_camera.render_size == (640 + 2 * 14, 480 + 2 * 9)
    assert all(abs(r) <= 0.5 for r in sim_camera.principal_residual_px)
    assert sim_camera.focal_residual_px == pytest.approx((0.0, 0.0))
    assert _corner_error_px(scene, sim_camera, T_world_camera) < 1.0


@pytest.mark.parametrize("method", ["intrinsic", "crop"])
def test_distorted_render_matches_the_raw_lens(scene, method):
    matrix = CALIBRATED.camera_matrix.copy()
    if method == "crop":
        matrix[0, 0] = matrix[1, 1]  # fovy-only cameras have square pixels (fx != fy is only reported)
    lens = CameraIntrinsics(matrix, np.array([-0.22, 0.09, 0.0015, -0.001, 0.0]), SIZE)
    T_world_camera = look_at(np.array([0.1, -0.05, 0.36]), np.zeros(3))
    sim_camera = match_camera(lens, T_world_camera, method)
    assert _corner_error_px(scene, sim_camera, T_world_camera, distort=True) < 1.0
    # A pinhole render misses the raw lens's corners by pixels: the check above can fail.
    assert _corner_error_px(scene, sim_camera, T_world_camera, distort=False, expect_distorted=True) > 2.0


def test_crop_match_reports_what_fovy_cannot_express():
    sim_camera = match_camera(CALIBRATED, np.eye(4), "crop")
    assert sim_camera.focal_residual_px == pytest.approx((604.0 - 612.0, 0.0))
    assert sim_camera.principal_offset_px == pytest.approx((13.3, -8.6))
    assert sim_camera.principal_residual_px[0] == pytest.approx(-0.3, abs=1e-9)
    assert sim_camera.principal_residual_px[1] == pytest.approx(-0.4, abs=1e-9)
    summary = sim_camera.summary()
    assert summary["method"] == "crop" and summary["crop_offset_px"] == [1, 18]


def test_calibrated_off_centre_camera_is_reproduced_by_the_sim(scene):
    """Chain: a 'real' camera with an off-centre principal point photographs the board from 16 poses;
    intrinsics are calibrated from those images; the fovy-only sim camera (crop) reproduces them."""
    rng = np.random.default_rng(11)
    real = CameraIntrinsics(
        np.array([[590.0, 0.0, 319.5 - 11.0], [0.0, 590.0, 239.5 + 6.0], [0.0, 0.0, 1.0]]), np.zeros(5), SIZE
    )
    poses = random_camera_poses(16, rng)
    renderer = CameraRenderer(scene.model, CAMERA, match_camera(real, poses[0], "intrinsic"))
    images = []
    for pose in poses:
        apply_camera(scene.model, CAMERA, match_camera(real, pose, "intrinsic"))
        mujoco.mj_forward(scene.model, scene.data)
        images.append(renderer.render(scene.data))
    renderer.close()
    result = calibrate_intrinsics([f"{i}" for i in range(16)], images, scene.board, IntrinsicsConfig())
    calibrated = result.intrinsics
    for name in ("fx", "fy", "cx", "cy"):
        assert getattr(calibrated, name) == pytest.approx(getattr(real, name), rel=0.01), name
    T_world_camera = look_at(np.array([-0.05, 0.12, 0.4]), np.zeros(3))
    sim_camera = match_camera(calibrated, T_world_camera, "crop")
    assert sim_camera.principal_offset_px[0] == pytest.approx(-11.0, abs=1.0)
    assert _corner_error_px(scene, sim_camera, T_world_camera) < 1.0


def test_sim_camera_from_calibration_files(tmp_path):
    T_base_camera = look_at(np.array([0.5, 0.0, 0.4]), np.array([0.2, 0.0, 0.0]))
    save_camera("front", CALIBRATED, 0.2, tmp_path)
    save_hand_eye("so101", "front", "eye_to_hand", T_base_camera, load_camera("front", tmp_path), tmp_path)
    T_world_base = np.eye(4)
    T_world_base[:3, 3] = [0.0, 0.1, 0.02]
    sim_camera = load_sim_camera("front", "so101", tmp_path, T_parent_reference=T_world_base)
    np.testing.assert_allclose(sim_camera.pos, [0.5, 0.1, 0.42])
    # MJCF round trip: the element compiles to the same camera.
    xml = f"<mujoco><worldbody>{sim_camera.to_mjcf('front')}</worldbody></mujoco>"
    model = mujoco.MjModel.from_xml_string(xml)
    np.testing.assert_allclose(model.cam_pos[0], sim_camera.pos, atol=1e-6)
    np.testing.assert_allclose(np.abs(model.cam_quat[0] @ sim_camera.quat), 1.0, atol=1e-6)
    written = mujoco.MjModel.from_xml_string('<mujoco><worldbody><camera name="front"/></worldbody></mujoco>')
    apply_camera(written, "front", sim_camera)
    np.testing.assert_allclose(written.cam_intrinsic[0], model.cam_intrinsic[0], rtol=1e-5)
    np.testing.assert_allclose(written.cam_sensorsize[0], model.cam_sensorsize[0], rtol=1e-5)
    with pytest.raises(CalibrationError, match="no calibration file"):
        load_sim_camera("wrist", "so101", tmp_path)
    with pytest.raises(SimError, match="needs a pose"):
        load_sim_camera("front", None, tmp_path)


def test_bad_inputs_are_clear_errors(scene):
    with pytest.raises(SimError, match="method 'stretch'"):
        match_camera(CALIBRATED, np.eye(4), "stretch")  # type: ignore[arg-type]
    with pytest.raises(SimError, match="does not fit a 640x480 image"):
        match_camera(
            CameraIntrinsics(np.array([[500.0, 0, 900], [0, 500, 240], [0, 0, 1]]), np.zeros(5), SIZE),
            np.eye(4),
        )
    with pytest.raises(SimError, match="rigid"):
        match_camera(CALIBRATED, np.eye(4) * 2)
    with pytest.raises(SimError, match="no camera 'top'"):
        apply_camera(scene.model, "top", match_camera(CALIBRATED, np.eye(4)))
