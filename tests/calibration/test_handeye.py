import numpy as np
import pytest
from scipy.spatial.transform import Rotation

from calibration import (
    CalibrationError,
    HandEyeConfig,
    IntrinsicsConfig,
    calibrate_hand_eye,
    calibrate_intrinsics,
)
from calibration.transforms import invert, make_transform, pose_difference

# Realistic noise (standard deviations per axis): a calibrated arm's forward kinematics (0.5 mm, 0.05 deg)
# and a board pose from one image (0.3 mm in-plane, 1 mm in depth, 0.1 deg).
ROBOT_NOISE = (0.5e-3, 0.05)
BOARD_NOISE = (np.array([0.3e-3, 0.3e-3, 1.0e-3]), 0.1)


def _perturb(T, rng, sigma_m, sigma_deg):
    rotation = Rotation.from_rotvec(np.radians(rng.normal(0, sigma_deg, 3))).as_matrix()
    return make_transform(T[:3, :3] @ rotation, T[:3, 3] + rng.normal(0, 1, 3) * sigma_m)


def _random_pose(rng, max_deg, centre, spread_m):
    rotvec = Rotation.random(random_state=rng.integers(1 << 31)).as_rotvec()
    rotvec *= np.radians(rng.uniform(0, max_deg)) / np.linalg.norm(rotvec)
    return make_transform(
        Rotation.from_rotvec(rotvec).as_matrix(), centre + rng.uniform(-spread_m, spread_m, 3)
    )


def _synthetic(setup, rng, n=30):
    """Robot and board poses for a known camera transform X, with noise on both."""
    X = make_transform(
        Rotation.from_euler("xyz", [170, 5, 92], degrees=True).as_matrix(), [0.03, -0.05, 0.08]
    )
    base_gripper, camera_board = [], []
    if setup == "eye_in_hand":
        T_base_board = make_transform(np.diag([1.0, -1.0, -1.0]), [0.35, 0.0, 0.0])
        for _ in range(n):
            A = _random_pose(rng, 40, np.array([0.3, 0.0, 0.3]), 0.08) @ make_transform(
                np.diag([1.0, -1.0, -1.0]), np.zeros(3)
            )
            B = invert(X) @ invert(A) @ T_base_board
            base_gripper.append(_perturb(A, rng, *ROBOT_NOISE))
            camera_board.append(_perturb(B, rng, BOARD_NOISE[0], BOARD_NOISE[1]))
    else:
        T_gripper_board = make_transform(np.eye(3), [0.0, 0.0, 0.06])
        X = make_transform(
            Rotation.from_euler("xyz", [-150, 0, 90], degrees=True).as_matrix(), [0.6, 0.1, 0.5]
        )
        for _ in range(n):
            A = _random_pose(rng, 40, np.array([0.3, 0.0, 0.2]), 0.08)
            B = invert(X) @ A @ T_gripper_board
            base_gripper.append(_perturb(A, rng, *ROBOT_NOISE))
            camera_board.append(_perturb(B, rng, BOARD_NOISE[0], BOARD_NOISE[1]))
    return X, base_gripper, camera_board


@pytest.mark.parametrize("setup", ["eye_in_hand", "eye_to_hand"])
@pytest.mark.parametrize("seed", [0, 1, 2])
def test_hand_eye_recovers_transform_from_noisy_poses(setup, seed):
    X, base_gripper, camera_board = _synthetic(setup, np.random.default_rng(seed))
    result = calibrate_hand_eye(base_gripper, camera_board, HandEyeConfig(setup=setup))
    mm, deg = pose_difference(X, result.transform)
    assert mm < 2.0 and deg < 0.5, (mm, deg)
    assert result.chosen == "refined"
    assert set(result.methods) == {"tsai", "park", "horaud", "andreff", "daniilidis"}
    for method in result.methods.values():
        assert pose_difference(X, method.transform)[0] < 10.0
    assert 0 < result.agreement_mm < 10.0
    assert result.transform_name == ("T_gripper_camera" if setup == "eye_in_hand" else "T_base_camera")
    # The residual reflects the injected noise: neither zero nor far above it.
    assert 0.3 < result.residual_mm < 5.0


def test_one_method_without_refinement_is_that_method():
    _, base_gripper, camera_board = _synthetic("eye_in_hand", np.random.default_rng(3))
    result = calibrate_hand_eye(base_gripper, camera_board, HandEyeConfig(methods=("park",), refine=False))
    assert result.chosen == "park"
    np.testing.assert_allclose(result.transform, result.methods["park"].transform)
    assert result.agreement_mm == 0.0


def test_pure_translations_are_rejected():
    rng = np.random.default_rng(4)
    poses = [make_transform(np.eye(3), rng.uniform(-0.1, 0.1, 3)) for _ in range(8)]
    with pytest.raises(CalibrationError, match="barely rotate"):
        calibrate_hand_eye(poses, poses, HandEyeConfig())


def test_mismatched_and_too_few_poses_are_rejected():
    poses = [np.eye(4)] * 6
    with pytest.raises(CalibrationError, match="6 robot poses but 5 board poses"):
        calibrate_hand_eye(poses, poses[:5], HandEyeConfig())
    with pytest.raises(CalibrationError, match="only 3 poses"):
        calibrate_hand_eye(poses[:3], poses[:3], HandEyeConfig())


def test_eye_in_hand_from_rendered_views(checkerboard_views):
    """End to end: a camera on a gripper photographs a fixed board; images -> intrinsics -> hand-eye."""
    views = checkerboard_views
    rng = np.random.default_rng(5)
    X = make_transform(Rotation.from_euler("xyz", [3, -4, 90], degrees=True).as_matrix(), [0.02, -0.04, 0.09])
    intrinsics = calibrate_intrinsics(views.names, views.images, views.board, IntrinsicsConfig())
    base_gripper = [_perturb(T @ invert(X), rng, *ROBOT_NOISE) for T in views.T_world_camera]
    camera_board = [report.T_camera_board for report in intrinsics.images]
    result = calibrate_hand_eye(base_gripper, camera_board, HandEyeConfig())
    mm, deg = pose_difference(X, result.transform)
    assert mm < 2.0 and deg < 0.5, (mm, deg)
    assert pose_difference(result.board_transform, views.scene.T_world_board)[0] < 3.0


def test_eye_to_hand_from_rendered_views(charuco_views):
    """End to end: a fixed camera photographs a board held by the gripper (camera-to-base extrinsics)."""
    views = charuco_views
    rng = np.random.default_rng(6)
    X = make_transform(
        Rotation.from_euler("xyz", [-140, 2, 95], degrees=True).as_matrix(), [0.55, 0.12, 0.45]
    )
    T_gripper_board = make_transform(np.diag([1.0, -1.0, -1.0]), [0.0, 0.0, 0.04])
    intrinsics = calibrate_intrinsics(views.names, views.images, views.board, IntrinsicsConfig())
    camera_board = [report.T_camera_board for report in intrinsics.images]
    # The views fix where the board was relative to the camera; the gripper must have been here for that.
    truth = [invert(T_world_camera) @ views.scene.T_world_board for T_world_camera in views.T_world_camera]
    base_gripper = [_perturb(X @ T @ invert(T_gripper_board), rng, *ROBOT_NOISE) for T in truth]
    result = calibrate_hand_eye(base_gripper, camera_board, HandEyeConfig(setup="eye_to_hand"))
    mm, deg = pose_difference(X, result.transform)
    assert mm < 2.0 and deg < 0.5, (mm, deg)
    assert pose_difference(result.board_transform, T_gripper_board)[0] < 3.0


@pytest.mark.parametrize("setup", ["eye_in_hand", "eye_to_hand"])
def test_a_wrong_robot_pose_is_left_out(setup):
    X, base_gripper, camera_board = _synthetic(setup, np.random.default_rng(8))
    base_gripper[7] = base_gripper[7] @ make_transform(np.eye(3), np.array([0.03, -0.02, 0.0]))
    result = calibrate_hand_eye(base_gripper, camera_board, HandEyeConfig(setup=setup))
    assert result.rejected == (7,)
    assert result.view_errors_mm[7] > 20.0 and np.median(result.view_errors_mm) < 3.0
    mm, deg = pose_difference(X, result.transform)
    assert mm < 2.0 and deg < 0.5, (mm, deg)
    clean = calibrate_hand_eye(*_synthetic(setup, np.random.default_rng(8))[1:], HandEyeConfig(setup=setup))
    assert clean.rejected == ()
