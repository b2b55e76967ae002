"""LeRobotEnv around LeRobot's real SO101Follower, with the Feetech motor bus patched below the robot.

As LeRobot's own tests do (tests/robots/test_so100_follower.py), the serial bus is replaced, but here
at the level of ``FeetechMotorsBus`` methods, so SO101Follower.connect/configure/get_observation/
send_action/disconnect and the bus's own connect and torque_disabled run unchanged, and the test
asserts the bus calls they make.
"""

import os
import signal
import time

import numpy as np
import pytest
from lerobot.motors.feetech import OperatingMode

from robot.config import SO101_HOME, SO101_JOINT_KEYS, ArmConfig, LeRobotEnvConfig, WatchdogConfig
from robot.contract import check_env
from robot.errors import ActionError, RobotError
from robot.lerobot_env import LeRobotEnv
from robot.lerobot_robot import make_robot
from robot.signals import interrupt_on_signals


def make_env(tmp_path, watchdog=False, **overrides):
    """The adapter at 500 Hz; the watchdog only where a test is about it (a loaded CI core can pause
    the test itself for a few 2 ms periods)."""
    robot = make_robot(
        ArmConfig(type="so101_follower", port="/dev/ttyFAKE0", cameras=(), calibration_dir=str(tmp_path))
    )
    cfg = LeRobotEnvConfig(
        control_hz=500.0 if not watchdog else 20.0,
        reset_settle_steps=1,
        keyboard_estop=False,
        watchdog=WatchdogConfig(enabled=watchdog),
        **overrides,
    )
    return LeRobotEnv(robot, cfg, clip_log=str(tmp_path / "clips.jsonl"))


def measured(env):
    return np.array([env.measured[k] for k in SO101_JOINT_KEYS], dtype=np.float32)


def test_make_robot_builds_lerobots_own_follower_and_rejects_bad_configs(bus, tmp_path):
    robot = make_robot(ArmConfig(type="so101_follower", port="/dev/ttyFAKE0", cameras=()))
    assert type(robot).__name__ == "SOFollower" and robot.config.use_degrees
    assert list(robot.action_features) == list(SO101_JOINT_KEYS)
    with pytest.raises(RobotError, match=r"needs --robot\.port"):
        make_robot(ArmConfig(type="so101_follower"))
    with pytest.raises(RobotError, match="not a LeRobot robot type"):
        make_robot(ArmConfig(type="so999_follower", port="/dev/null"))
    with pytest.raises(RobotError, match="one OpenCV index"):
        make_robot(
            ArmConfig(type="so101_follower", port="/dev/null", cameras=("front",), camera_sources=("0", "1"))
        )


def test_real_follower_behind_the_adapter_keeps_the_env_contract(bus, tmp_path):
    env = make_env(tmp_path)
    spec = check_env(env, n_steps=5)
    assert spec.action_shape == (6,) and spec.cameras == ()
    assert set(spec.obs) == {"state", *SO101_JOINT_KEYS}
    env.close()


def test_connect_configures_motors_and_reset_drives_home_through_the_bus(bus, tmp_path):
    env = make_env(tmp_path)
    obs, info = env.reset(seed=0)
    assert ("connect", True) in bus.calls
    modes = [c for c in bus.calls if c[:2] == ("write", "Operating_Mode")]
    assert [c[2] for c in modes] == [k.removesuffix(".pos") for k in SO101_JOINT_KEYS] and all(
        c[3] == OperatingMode.POSITION.value for c in modes
    )
    # From elbow_flex=20 to home 0 at 8 deg per step: 12, 4, 0, then one settle step.
    assert [g["elbow_flex"] for g in bus.goals()] == pytest.approx([12.0, 4.0, 0.0, 0.0])
    assert obs["state"] == pytest.approx([SO101_HOME[k] for k in SO101_JOINT_KEYS])
    assert obs["elbow_flex.pos"].dtype == np.float32 and obs["elbow_flex.pos"].shape == (1,)
    assert info == {"success": False, "progress": 0.0}
    env.close()
    assert bus.calls[-1] == ("disconnect", True)


def test_step_sends_clipped_goals_and_reads_present_position(bus, tmp_path):
    env = make_env(tmp_path)
    env.reset(seed=0)
    n_reads = sum(c[:2] == ("sync_read", "Present_Position") for c in bus.calls)
    huge = np.array([1e9, -1e9, 50.0, 0.0, 0.0, 1e9], dtype=np.float32)
    obs, reward, terminated, truncated, info = env.step(huge)
    goal = bus.goals()[-1]
    assert goal == pytest.approx(
        {
            "shoulder_pan": 8.0,
            "shoulder_lift": -8.0,
            "elbow_flex": 8.0,
            "wrist_flex": 0.0,
            "wrist_roll": 0.0,
            "gripper": 25.0,
        }
    )
    assert sum(c[:2] == ("sync_read", "Present_Position") for c in bus.calls) == n_reads + 1
    assert obs["state"] == pytest.approx([8.0, -8.0, 8.0, 0.0, 0.0, 25.0])
    assert set(info["safety"]) == {"max_lead", "max_step"}  # 1e9 is first held near the arm
    assert info["sent_action"] == pytest.approx([8.0, -8.0, 8.0, 0.0, 0.0, 25.0])
    assert (reward, terminated, truncated) == (0.0, False, False)
    env.close()


def test_nan_action_is_refused_without_moving_and_logged(bus, tmp_path):
    env = make_env(tmp_path)
    env.reset(seed=0)
    before = len(bus.goals())
    with pytest.raises(ActionError, match="NaN or inf"):
        env.step(np.array([np.nan, 0, 0, 0, 0, 0], dtype=np.float32))
    with pytest.raises(ActionError, match="shape"):
        env.step(np.zeros(7, dtype=np.float32))
    assert len(bus.goals()) == before
    assert "non_finite" in (tmp_path / "clips.jsonl").read_text()
    env.close()


def test_outcome_marks_end_the_episode_and_truncation_counts_steps(bus, tmp_path):
    env = make_env(tmp_path, max_episode_steps=3)
    hold = env.reset(seed=0)[0]["state"]
    env.mark_outcome(success=True)
    _, reward, terminated, truncated, info = env.step(hold)
    assert (reward, terminated, truncated, info["success"], info["progress"]) == (1.0, True, False, True, 1.0)
    env.reset(seed=0)
    flags = [env.step(hold)[3] for _ in range(3)]
    assert flags == [False, False, True]
    env.reset(seed=0)
    env.truncate_now()
    _, _, terminated, truncated, info = env.step(hold)
    assert (terminated, truncated, info["success"]) == (False, True, False)
    env.close()


def test_emergency_stop_holds_the_measured_pose_and_latches(bus, tmp_path):
    env = make_env(tmp_path)
    env.reset(seed=0)
    env.step(np.array([5.0, 0, 0, 0, 0, 10.0], dtype=np.float32))
    env.emergency_stop("operator pressed stop")
    assert bus.goals()[-1] == pytest.approx({m: v for m, v in bus.present.items()})
    with pytest.raises(RobotError, match="operator pressed stop"):
        env.step(np.zeros(6, dtype=np.float32))
    with pytest.raises(RobotError, match="robot stopped"):
        env.reset(seed=0)
    env.close()
    assert bus.calls[-1] == ("disconnect", True)


def test_torque_off_stop_mode_disconnects_with_torque_disabled(bus, tmp_path):
    env = make_env(tmp_path, stop_mode="torque_off")
    env.reset(seed=0)
    env.emergency_stop()
    assert bus.calls[-1] == ("disconnect", True)  # LeRobot's bus disables torque on this flag
    assert not env.robot.is_connected
    env.close()


def test_watchdog_stops_the_arm_when_the_bus_read_stalls(bus, tmp_path):
    # The first step arms the watchdog and its bus read stalls; no step depends on the test process
    # keeping real time (the bound of two periods is checked with a simulated clock in test_watchdog).
    env = make_env(tmp_path, watchdog=True)
    env.reset(seed=0)
    writes_before_stall = len(bus.goals())

    def stall():
        deadline = time.monotonic() + 10.0
        while env.stopped is None and time.monotonic() < deadline:
            time.sleep(0.001)

    bus.on_read = stall
    with pytest.raises(RobotError, match="stale observation"):
        env.step(np.asarray(measured(env)))
    bus.on_read = None
    assert env.stopped.startswith("stale observation")
    assert len(bus.goals()) == writes_before_stall + 1  # the command of the stalled step, nothing after
    with pytest.raises(RobotError, match="robot stopped"):
        env.step(np.asarray(measured(env)))
    env.close()


def test_sigint_in_the_loop_holds_and_disconnects(bus, tmp_path):
    env = make_env(tmp_path)
    env.reset(seed=0)
    target = np.array([30.0, 0, 0, 0, 0, 10.0], dtype=np.float32)
    with pytest.raises(KeyboardInterrupt), interrupt_on_signals(), env:
        for i in range(10):
            if i == 2:
                os.kill(os.getpid(), signal.SIGINT)
            env.step(target)
    assert bus.calls[-1] == ("disconnect", True)
    assert bus.goals()[-1] == pytest.approx(bus.present)
    assert bus.goals()[-1]["shoulder_pan"] < 30.0  # interrupted on the way, held where it was


def test_bus_error_stops_the_robot_and_close_still_disconnects(bus, tmp_path):
    env = make_env(tmp_path)
    env.reset(seed=0)
    bus.fail_write = ConnectionError("Failed to sync write 'Goal_Position'")
    with pytest.raises(ConnectionError):
        env.step(np.asarray(measured(env)))
    assert "ConnectionError" in env.stopped
    bus.fail_write = None
    env.close()
    assert bus.calls[-1] == ("disconnect", True)


def test_overruns_are_counted_and_reported(bus, tmp_path):
    clock = {"t": 0.0}
    robot = make_robot(
        ArmConfig(type="so101_follower", port="/dev/ttyFAKE0", cameras=(), calibration_dir=str(tmp_path))
    )
    cfg = LeRobotEnvConfig(control_hz=10.0, reset_settle_steps=0, keyboard_estop=False)

    def sleep(dt):
        clock["t"] += dt

    env = LeRobotEnv(robot, cfg, clock=lambda: clock["t"], sleep=sleep)
    env.reset(seed=0)
    state = np.asarray(measured(env))
    env.step(state)
    bus.on_read = lambda: sleep(0.12)  # a slow read makes the next deadline late
    env.step(state)
    bus.on_read = None
    _, _, _, _, info = env.step(state)
    assert info["overruns"] == 1
    assert env.metrics()["overruns"] == 1 and env.metrics()["max_lateness_s"] == pytest.approx(0.02)
    assert env.stopped is None
    env.close()


def test_threads_stop_on_close(bus, tmp_path):
    env = make_env(tmp_path, watchdog=True)
    env.reset(seed=0)
    thread = env.watchdog._thread
    assert thread is not None and thread.is_alive()
    env.close()
    env.close()
    assert not thread.is_alive()
