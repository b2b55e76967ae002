"""LeRobotEnv on LeRobot's SO101Follower with only the serial port simulated (issue #15, item 9).

The other robot tests patch ``FeetechMotorsBus.sync_read``/``sync_write``: the very layer where LeRobot
turns ticks into degrees with the arm's calibration. Here the patch sits below it (`fake_feetech`: the
serial port of a chain of simulated STS3215 servos), so the calibration file, the sign-magnitude homing
offsets in the servos' EEPROM, LeRobot's calibration check, and the tick <-> degree conversion all run,
and the expected values are computed by hand from the calibration.
"""

from __future__ import annotations

import dataclasses
import logging

import numpy as np
import pytest

from robot.config import SO101_JOINT_KEYS, ArmConfig, LeRobotEnvConfig, WatchdogConfig
from robot.lerobot_env import LeRobotEnv
from robot.lerobot_robot import make_robot
from tests.robot import fake_feetech

MAX_RES = fake_feetech.RESOLUTION - 1
CALIBRATION = {
    name: {
        "id": i + 1,
        "drive_mode": 0,
        "homing_offset": (-1) ** i * (150 + 40 * i),  # negative offsets exercise the sign-magnitude bit
        "range_min": 700 + 37 * i,
        "range_max": 3300 - 23 * i,
    }
    for i, name in enumerate(fake_feetech.SO101_MOTORS)
}
TICKS = {
    "shoulder_pan": 2400,
    "shoulder_lift": 1500,
    "elbow_flex": 2900,
    "wrist_flex": 2000,
    "wrist_roll": 1100,
    "gripper": 1900,
}


def degrees(motor: str, ticks: int) -> float:
    """LeRobot's use_degrees convention, by hand: 0 at the middle of the calibrated range, 4095 ticks a turn;
    the gripper in percent of its range."""
    cal = CALIBRATION[motor]
    if motor == "gripper":
        return (ticks - cal["range_min"]) / (cal["range_max"] - cal["range_min"]) * 100
    return (ticks - (cal["range_min"] + cal["range_max"]) / 2) * 360 / MAX_RES


def goal_ticks(motor: str, value: float) -> int:
    cal = CALIBRATION[motor]
    if motor == "gripper":
        return int(value / 100 * (cal["range_max"] - cal["range_min"]) + cal["range_min"])
    return int(value * MAX_RES / 360 + (cal["range_min"] + cal["range_max"]) / 2)


@pytest.fixture
def arm(tmp_path, monkeypatch):
    fake_feetech.write_calibration(tmp_path / "calib", "arm1", CALIBRATION)
    servos = fake_feetech.so101_servos(CALIBRATION)
    for motor, ticks in TICKS.items():
        servos[CALIBRATION[motor]["id"]].set("Present_Position", ticks)
    port = fake_feetech.install(monkeypatch, servos)
    robot = make_robot(
        ArmConfig(
            type="so101_follower",
            port="/dev/ttyFAKE0",
            id="arm1",
            cameras=(),
            calibration_dir=str(tmp_path / "calib"),
        )
    )
    cfg = LeRobotEnvConfig(
        control_hz=500.0,
        home={},
        reset_settle_steps=0,
        keyboard_estop=False,
        watchdog=WatchdogConfig(enabled=False),
    )
    env = LeRobotEnv(robot, cfg)
    yield env, port, servos
    env.close()


def test_observations_are_the_servo_ticks_through_the_calibration(arm) -> None:
    env, _, servos = arm
    obs, _ = env.reset()
    for key in SO101_JOINT_KEYS:
        motor = key.removesuffix(".pos")
        assert obs[key][0] == pytest.approx(degrees(motor, TICKS[motor]), abs=1e-4), key
    # The EEPROM kept the calibration LeRobot checked at connect (homing offsets sign-magnitude encoded).
    assert servos[1].get("Homing_Offset") == 150 and servos[2].get("Homing_Offset") == (1 << 11) | 190
    assert all(s.get("Torque_Enable") == 1 for s in servos.values())


def test_actions_in_degrees_reach_the_servos_as_calibrated_ticks(arm) -> None:
    env, port, _ = arm
    obs, _ = env.reset()
    start = np.array([obs[k][0] for k in SO101_JOINT_KEYS])
    action = start + np.array([5.0, -4.0, 3.0, -2.0, 6.0, 10.0])  # within the per-step limits
    obs, *_ = env.step(action.astype(np.float32))
    sent = port.goal_writes[-1]
    for i, key in enumerate(SO101_JOINT_KEYS):
        motor = key.removesuffix(".pos")
        expected = goal_ticks(motor, float(np.float32(action[i])))
        assert abs(sent[CALIBRATION[motor]["id"]] - expected) <= 1, key
        # The servo moved there, and reading it back gives the commanded value (to a tick).
        assert obs[key][0] == pytest.approx(action[i], abs=360 / MAX_RES + 0.1), key
    moved = sent[1] - TICKS["shoulder_pan"]
    assert moved == pytest.approx(5.0 * MAX_RES / 360, abs=1)  # +5 degrees is +57 ticks, not -57


def test_a_missing_servo_fails_the_connect_with_lerobots_motor_check(tmp_path, monkeypatch) -> None:
    fake_feetech.write_calibration(tmp_path / "calib", "arm1", CALIBRATION)
    servos = fake_feetech.so101_servos(CALIBRATION)
    del servos[4]
    fake_feetech.install(monkeypatch, servos)
    robot = make_robot(
        ArmConfig(
            type="so101_follower",
            port="/dev/ttyFAKE0",
            id="arm1",
            cameras=(),
            calibration_dir=str(tmp_path / "calib"),
        )
    )
    env = LeRobotEnv(
        robot, LeRobotEnvConfig(home={}, keyboard_estop=False, watchdog=WatchdogConfig(enabled=False))
    )
    with pytest.raises(RuntimeError, match=r"Missing motor IDs:\n  - 4"):
        env.reset()
    env.close()  # disconnecting cannot reach servo 4 either: logged, not raised over the connect error


def test_safety_clips_are_one_warning_per_episode_with_the_detail_in_the_clip_log(arm, caplog) -> None:
    """Issue #15 (item 7): finetune printed one WARNING per clamp (hundreds per episode)."""
    env, _, _ = arm
    env.cfg = dataclasses.replace(env.cfg, max_episode_steps=3)
    obs, _ = env.reset()
    far = np.array([obs[k][0] for k in SO101_JOINT_KEYS], np.float32) + 40.0  # beyond one step's limit
    with caplog.at_level(logging.DEBUG):
        done = False
        while not done:
            _, _, terminated, truncated, _ = env.step(far)
            done = terminated or truncated
    warnings = [r for r in caplog.records if r.levelno >= logging.WARNING]
    assert len(warnings) == 1 and warnings[0].name == "robot.lerobot_env"
    assert "episode of 3 steps: " in warnings[0].message and "max_step 3" in warnings[0].message
    assert sum(r.name == "robot.safety" for r in caplog.records) == 3  # each clip at DEBUG
