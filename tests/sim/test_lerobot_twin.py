"""SimSO101: the MuJoCo twin behind LeRobot's Robot API, driven through the same LeRobotEnv as a real arm."""

from pathlib import Path

import numpy as np
import pytest
from lerobot.cameras.opencv import OpenCVCameraConfig
from lerobot.robots import RobotConfig
from lerobot.robots.so_follower import SO101Follower, SO101FollowerConfig

from robot.config import SO101_JOINT_KEYS, ArmConfig, LeRobotEnvConfig, SafetyConfig, WatchdogConfig
from robot.contract import check_env
from robot.lerobot_env import LeRobotEnv
from robot.lerobot_robot import make_robot
from sim.errors import SimError
from sim.lerobot_twin import SimSO101, SimSO101Config, home_action, make_sim_so101
from sim.so101.kinematics import forward_kinematics, inverse_kinematics


@pytest.fixture
def calib(tmp_path):
    return str(tmp_path / "calibration")


def twin_env(calib, cameras=("front",), privileged_status=True, **env_overrides):
    robot = make_robot(
        ArmConfig(type="sim_so101", cameras=cameras, calibration_dir=calib),
        {"sim_so101": lambda cfg: make_sim_so101(cfg, image_size=64, control_hz=30.0, task="lift")},
    )
    cfg = LeRobotEnvConfig(
        control_hz=1000.0,
        image_size=64,
        home=home_action(),
        reset_settle_steps=2,
        keyboard_estop=False,
        watchdog=WatchdogConfig(enabled=False),
        **env_overrides,
    )
    return LeRobotEnv(robot, cfg, forward_kinematics=forward_kinematics, privileged_status=privileged_status)


def test_features_match_lerobots_so101_follower(calib):
    real = SO101Follower(
        SO101FollowerConfig(
            port="/dev/null",
            calibration_dir=Path(calib),
            cameras={"front": OpenCVCameraConfig(index_or_path=0, fps=30, width=96, height=96)},
        )
    )
    twin = SimSO101(SimSO101Config(calibration_dir=Path(calib), camera_names=("front",), image_size=96))
    assert twin.action_features == real.action_features
    assert twin.observation_features == real.observation_features
    assert list(twin.action_features) == list(SO101_JOINT_KEYS)


def test_twin_is_a_registered_lerobot_robot_config():
    assert RobotConfig.get_choice_class("sim_so101") is SimSO101Config
    assert SimSO101Config().type == "sim_so101"
    with pytest.raises(SimError, match="camera 'top'"):
        SimSO101(SimSO101Config(camera_names=("top",)))


def test_robot_api_moves_the_simulated_arm(calib):
    twin = SimSO101(
        SimSO101Config(calibration_dir=Path(calib), camera_names=("front", "wrist"), image_size=64)
    )
    with twin:
        obs = twin.get_observation()
        assert obs["front"].shape == (64, 64, 3) and obs["front"].dtype == np.uint8
        assert obs["wrist"].shape == (64, 64, 3)
        start = obs["shoulder_pan.pos"]
        target = {k: obs[k] for k in SO101_JOINT_KEYS} | {"shoulder_pan.pos": start + 20.0}
        sent = twin.send_action(target)
        assert sent["shoulder_pan.pos"] == pytest.approx(start + 20.0)
        for _ in range(15):
            twin.send_action(target)
        assert twin.get_observation()["shoulder_pan.pos"] == pytest.approx(start + 20.0, abs=1.0)
    assert not twin.is_connected


def test_lerobot_env_on_the_twin_keeps_the_env_contract_with_pixels(calib):
    env = twin_env(calib)
    spec = check_env(env, n_steps=6)
    assert spec.cameras == ("front",) and spec.obs["pixels/front"].shape == (64, 64, 3)
    assert spec.task_description
    env.close()


def test_reset_reaches_home_and_privileged_status_reaches_info(calib):
    env = twin_env(calib, cameras=())
    obs, info = env.reset(seed=3)
    home = np.array([home_action()[k] for k in SO101_JOINT_KEYS])
    assert obs["state"] == pytest.approx(home, abs=2.0)
    assert info["success"] is False and 0.0 <= info["progress"] <= 1.0
    env.close()


def test_safety_layer_with_the_twins_kinematics_keeps_the_gripper_above_the_table(calib):
    env = twin_env(calib, cameras=(), safety=SafetyConfig(workspace_min_m=(-0.45, -0.45, 0.03)))
    env.reset(seed=0)
    # Joint targets that put the tool centre point on the table surface (z = 0), 3 cm below the limit.
    q = inverse_kinematics(np.array([0.2, 0.0, 0.0]), pitch_deg=90.0)
    dive = np.array(
        [q["shoulder_pan"], q["shoulder_lift"], q["elbow_flex"], q["wrist_flex"], 0.0, 50.0], dtype=np.float32
    )
    for _ in range(30):
        _, _, _, _, info = env.step(dive)
        sent = dict(zip(SO101_JOINT_KEYS, info["sent_action"]))
        assert forward_kinematics(sent)[2] >= 0.03 - 1e-6
    assert env.safety.clip_counts["workspace"] > 0
    assert forward_kinematics(env.measured)[2] == pytest.approx(0.03, abs=0.01)  # stopped at the boundary
    env.close()


@pytest.mark.parametrize("privileged", [True, False])
def test_without_privileged_status_only_the_operators_key_ends_an_episode_as_a_success(calib, privileged):
    """Finetune's env (``privileged_status=False``): the twin's task status (here: always done) never sets
    success, progress or the reward; the success key does, as on a real arm."""
    env = twin_env(calib, cameras=(), privileged_status=privileged)
    env.robot.task_status = lambda: (True, 1.0)
    _, info = env.reset(seed=0)
    hold = env.last_sent()
    _, reward, terminated, _, info = env.step(hold)
    assert (info["success"], info["progress"], reward, terminated) == (
        (True, 1.0, 1.0, True) if privileged else (False, 0.0, 0.0, False)
    )
    if not privileged:
        env.mark_outcome(True)
        _, reward, terminated, _, info = env.step(hold)
        assert (info["success"], info["progress"], reward, terminated) == (True, 1.0, 1.0, True)
    env.close()
