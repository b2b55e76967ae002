"""vlmrl.loop.sources: a joint-delta policy's actions to the arm's joint targets and back (what finetune stores)."""

import dataclasses

import numpy as np
import pytest

from robot.config import SO101_JOINT_KEYS, ArmConfig, LeRobotEnvConfig, SafetyConfig, WatchdogConfig
from robot.lerobot_env import LeRobotEnv
from robot.lerobot_robot import make_robot
from sim.lerobot_twin import home_action, make_sim_so101
from vlmrl.loop.sources import agent_action, arm_targets

SCALE = [8.0] * 5 + [25.0]


def twin_env(tmp_path, safety=None, max_windup_deg=0.0):
    robot = make_robot(
        ArmConfig(type="sim_so101", cameras=(), calibration_dir=str(tmp_path)),
        {"sim_so101": lambda cfg: make_sim_so101(cfg, image_size=32, control_hz=30.0, task="reach")},
    )
    cfg = LeRobotEnvConfig(
        control_hz=1000.0,
        image_size=32,
        home=home_action(),
        reset_settle_steps=1,
        keyboard_estop=False,
        watchdog=WatchdogConfig(enabled=False),
        safety=safety or SafetyConfig(),
        max_windup_deg=max_windup_deg,
    )
    return LeRobotEnv(robot, cfg)


def test_absolute_actions_are_sent_and_stored_as_they_are():
    action = np.array([1.0, -2.0, 3.0, 4.0, 5.0, 6.0], np.float32)
    assert arm_targets(None, action, None) is action
    assert agent_action(action, None, None) is action


def test_the_stored_delta_is_the_sent_change_over_the_scale_clipped():
    previous = np.array([0.0, 10.0, -10.0, 0.0, 0.0, 20.0], np.float32)
    sent = np.array([4.0, 2.0, -10.0, 20.0, -30.0, 32.5], np.float32)  # joints 3 and 4 moved past one step
    stored = agent_action(sent, previous, SCALE)
    assert stored.dtype == np.float32
    assert stored == pytest.approx([0.5, -1.0, 0.0, 1.0, -1.0, 0.5])


def test_a_delta_action_round_trips_through_the_arm(tmp_path):
    env = twin_env(tmp_path)
    try:
        env.reset(seed=0)
        action = np.array([0.5, -0.25, 0.0, 0.75, -0.5, -0.4], np.float32)  # within the joint limits
        unclipped = 0
        for _ in range(3):
            previous = env.last_sent()
            targets = arm_targets(env, action, SCALE)
            assert targets == pytest.approx(previous + action * np.array(SCALE), abs=1e-4)
            _, _, _, _, info = env.step(targets)
            stored = agent_action(info["sent_action"], previous, SCALE)
            assert stored == pytest.approx(
                np.clip((info["sent_action"] - previous) / np.array(SCALE), -1, 1), abs=1e-6
            )
            assert np.all(np.abs(stored) <= 1.0)
            if not info["safety"]:  # nothing held back: the agent's own action comes back
                assert stored == pytest.approx(action, abs=1e-4)
                unclipped += 1
        assert unclipped
    finally:
        env.close()


def test_a_step_the_safety_layer_holds_back_is_stored_as_the_delta_applied(tmp_path):
    pan = SO101_JOINT_KEYS[0]
    safety = SafetyConfig()
    safety = dataclasses.replace(safety, max_step={**safety.max_step, pan: 2.0})
    env = twin_env(tmp_path, safety)
    try:
        env.reset(seed=0)
        previous = env.last_sent()
        action = np.array([1.0, 0, 0, 0, 0, 0], np.float32)  # 8 degrees asked, 2 let through
        _, _, _, _, info = env.step(arm_targets(env, action, SCALE))
        assert info["safety"]
        assert agent_action(info["sent_action"], previous, SCALE) == pytest.approx(
            [0.25, 0, 0, 0, 0, 0], abs=1e-4
        )
    finally:
        env.close()


@pytest.mark.parametrize("bound", [0.0, 4.0])
def test_the_arm_joints_targets_stay_within_the_windup_bound_of_the_measured_joints(tmp_path, bound):
    """``--env.max-windup-deg`` (the twin's ``--sim.max-windup-deg``): the arm joints move from the last command
    but never further than the bound from where they are measured; the gripper is not bounded."""
    env = twin_env(tmp_path, max_windup_deg=bound)
    try:
        env.reset(seed=0)
        action = np.ones(6, np.float32)  # one full step up on every joint: 8 degrees (gripper 25)
        last, measured = env.last_sent(), env.measured
        targets = env.delta_targets(action, SCALE)
        reach = last + np.array(SCALE)
        for i, key in enumerate(SO101_JOINT_KEYS):
            if bound and key != "gripper.pos":
                assert targets[i] == pytest.approx(min(reach[i], measured[key] + bound), abs=1e-4)
            else:
                assert targets[i] == pytest.approx(
                    min(reach[i], 100.0 if key == "gripper.pos" else 1e9), abs=1e-4
                )
    finally:
        env.close()
