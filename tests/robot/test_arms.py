"""Arm descriptions (robot/arms.py): the SO-101 is one entry whose values the shared defaults derive from;
the SO-100 and Koch are entries whose keys match LeRobot's own drivers; teleop and the env config take
an arm's keys, limits and leader from its entry."""

from __future__ import annotations

import pytest

from robot.arms import ARMS, KOCH, SO100, SO101, ArmDescription, arm_for, leader_modules
from robot.config import (
    SO101_HOME,
    SO101_JOINT_KEYS,
    SO101_JOINT_LIMITS,
    SO101_MAX_STEP,
    ArmConfig,
    LeRobotEnvConfig,
    SafetyConfig,
    env_config_for_arm,
)
from robot.contract import JOINT_KEYS, JOINT_NAMES
from robot.errors import RobotError
from robot.teleop import KeyboardJog, LeaderArm, leader_type_for


def test_so101_defaults_are_the_so101_entry_with_the_values_they_always_had():
    assert SO101_JOINT_KEYS == JOINT_KEYS == SO101.keys
    assert JOINT_NAMES == (
        "shoulder_pan",
        "shoulder_lift",
        "elbow_flex",
        "wrist_flex",
        "wrist_roll",
        "gripper",
    )
    assert SO101_JOINT_LIMITS == {
        "shoulder_pan.pos": (-110.0, 110.0),
        "shoulder_lift.pos": (-100.0, 100.0),
        "elbow_flex.pos": (-97.0, 97.0),
        "wrist_flex.pos": (-95.0, 95.0),
        "wrist_roll.pos": (-157.0, 157.0),
        "gripper.pos": (0.0, 100.0),
    }
    assert list(SO101_MAX_STEP.values()) == [8.0, 8.0, 8.0, 10.0, 10.0, 15.0]
    assert SO101_HOME["gripper.pos"] == 10.0 and SafetyConfig().joint_limits == SO101_JOINT_LIMITS


@pytest.mark.parametrize("arm", list(ARMS.values()), ids=list(ARMS))
def test_every_arm_is_consistent(arm: ArmDescription):
    assert len(set(arm.keys)) == len(arm.motors)
    for key, (low, high) in arm.joint_limits().items():
        assert low < high and low <= arm.home_pose()[key] <= high
    assert all(step > 0 for step in arm.max_step)
    for robot_type in arm.follower_types:
        assert arm_for(robot_type) is arm
    if arm.leader_type:
        assert leader_modules()[arm.leader_type] == arm.leader_module == LeaderArm.MODULES[arm.leader_type]


def test_a_description_with_missing_entries_is_refused():
    with pytest.raises(RobotError, match="one entry per motor"):
        ArmDescription(
            name="x", motors=("a", "b"), limits=((0, 1),), max_step=(1, 1), home=(0, 0),
            follower_types=("x",), follower_module="m",
        )  # fmt: skip


@pytest.mark.parametrize(("robot_type", "arm"), [("so100_follower", SO100), ("koch_follower", KOCH)])
def test_arm_keys_are_the_keys_lerobots_own_driver_declares(robot_type, arm, tmp_path):
    from robot.lerobot_robot import make_robot

    robot = make_robot(ArmConfig(type=robot_type, port="/dev/ttyFAKE0", calibration_dir=str(tmp_path)))
    assert tuple(robot.action_features) == arm.keys
    assert all(k in robot.observation_features for k in arm.keys)


def test_env_config_takes_the_arms_limits_unless_the_user_set_them():
    koch = env_config_for_arm(LeRobotEnvConfig(), "koch_follower")
    assert koch.safety.joint_limits == KOCH.joint_limits() and koch.home == KOCH.home_pose()
    custom = {k: (-10.0, 10.0) for k in KOCH.keys}
    kept = env_config_for_arm(LeRobotEnvConfig(safety=SafetyConfig(joint_limits=custom)), "koch_follower")
    assert kept.safety.joint_limits == custom and kept.safety.max_step == KOCH.max_steps()
    base = LeRobotEnvConfig()
    assert env_config_for_arm(base, "so101_follower") is base and env_config_for_arm(base, "my_arm") is base


def test_leader_type_follows_the_follower_and_jog_keys_follow_joint_order():
    assert leader_type_for("so101_follower") == "so101_leader"
    assert leader_type_for("sim_so101") == "so101_leader"
    assert leader_type_for("koch_follower") == "koch_leader"
    with pytest.raises(RobotError, match="no known leader arm"):
        leader_type_for("my_arm")
    keys = ("base.pos", "elbow.pos", "gripper.pos")  # any arm: the n-th joint gets the n-th key pair
    jog = KeyboardJog(keys, {k: 2.0 for k in keys}, listen=False)
    jog.press("w")
    jog.press("h")
    assert jog.action({"base.pos": 0.0, "elbow.pos": 5.0, "gripper.pos": 50.0}) == {
        "base.pos": 0.0,
        "elbow.pos": 7.0,
        "gripper.pos": 50.0,
    }
