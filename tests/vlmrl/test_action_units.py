"""vlmrl.loop.arm_actions: a joint-delta or end-effector policy's actions to the arm's joint targets and back
(what finetune stores)."""

import dataclasses

import numpy as np
import pytest

from robot.config import SO101_JOINT_KEYS, ArmConfig, LeRobotEnvConfig, SafetyConfig, WatchdogConfig
from robot.lerobot_env import LeRobotEnv
from robot.lerobot_robot import make_robot
from sim.lerobot_twin import home_action, make_sim_so101
from sim.so101.kinematics import forward_kinematics
from vlmrl.loop.arm_actions import EndEffectorDeltas, JointDeltas, agent_action, arm_targets

SCALE = [8.0] * 5 + [25.0]
DELTAS = JointDeltas(SCALE)


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
    stored = agent_action(sent, previous, DELTAS)
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
            targets = arm_targets(env, action, DELTAS)
            assert targets == pytest.approx(previous + action * np.array(SCALE), abs=1e-4)
            _, _, _, _, info = env.step(targets)
            stored = agent_action(info["sent_action"], previous, DELTAS)
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
        _, _, _, _, info = env.step(arm_targets(env, action, DELTAS))
        assert info["safety"]
        assert agent_action(info["sent_action"], previous, DELTAS) == pytest.approx(
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


def test_an_end_effector_action_round_trips_through_the_arm(tmp_path):
    """Issue #32: an ee_delta policy's action goes to the arm as the twin's IK targets and comes back, from
    what was sent, as the same action (the tool's move by forward kinematics, roll and gripper changes); a
    step the safety layer holds back (from the home pose the IK's steeper wrist is more than a step away) comes
    back as the move applied."""
    safety = SafetyConfig()
    loose = dataclasses.replace(safety, max_step=dict.fromkeys(safety.max_step, 60.0))
    clipped = twin_env(tmp_path / "clipped")
    try:
        clipped.reset(seed=0)
        previous = clipped.last_sent()
        action = np.array([0.5, -0.25, 0.3, 0.5, -0.4], np.float32)
        _, _, _, _, info = clipped.step(arm_targets(clipped, action, EndEffectorDeltas(0.02, 8.0, 25.0)))
        assert info["safety"]
        stored = agent_action(
            info["sent_action"], previous, EndEffectorDeltas(0.02, 8.0, 25.0), clipped.action_keys
        )
        sent = dict(zip(clipped.action_keys, info["sent_action"].tolist(), strict=True))
        before = dict(zip(clipped.action_keys, previous.tolist(), strict=True))
        assert stored[:3] == pytest.approx(
            np.clip((forward_kinematics(sent) - forward_kinematics(before)) / 0.02, -1, 1), abs=1e-5
        )
    finally:
        clipped.close()
    env = twin_env(tmp_path, loose)
    convert = EndEffectorDeltas(max_delta_m=0.02, max_delta_deg=8.0, max_delta_gripper=25.0)
    try:
        env.reset(seed=0)
        action = np.array([0.5, -0.25, 0.3, 0.5, -0.4], np.float32)
        unclipped = 0
        for _ in range(3):
            previous = env.last_sent()
            tool = forward_kinematics(dict(zip(env.action_keys, previous.tolist(), strict=True)))
            targets = arm_targets(env, action, convert)
            moved = forward_kinematics(dict(zip(env.action_keys, targets.tolist(), strict=True)))
            assert moved - tool == pytest.approx(action[:3] * 0.02, abs=1e-6)
            _, _, _, _, info = env.step(targets)
            stored = agent_action(info["sent_action"], previous, convert, env.action_keys)
            assert stored.shape == (5,) and np.all(np.abs(stored) <= 1.0)
            if not info["safety"]:
                assert stored == pytest.approx(action, abs=1e-4)
                unclipped += 1
        assert unclipped
    finally:
        env.close()


def test_an_operators_joint_move_is_stored_as_the_tool_move_it_makes():
    """A takeover sends absolute targets; an end-effector policy learns from them as the tool's move over
    ``max_delta_m`` (clipped to one step), the roll's and the gripper's over their scales."""
    convert = EndEffectorDeltas(max_delta_m=0.02, max_delta_deg=8.0, max_delta_gripper=25.0)
    keys = list(SO101_JOINT_KEYS)
    previous = np.array([0.0, 10.0, 20.0, 60.0, 0.0, 30.0], np.float32)
    sent = previous + np.array([0.0, 2.0, 0.0, 0.0, 4.0, -50.0], np.float32)  # shoulder lift, roll, gripper
    stored = convert.to_agent(keys, sent, previous)
    tool = forward_kinematics(dict(zip(keys, previous.tolist(), strict=True)))
    lifted = forward_kinematics(dict(zip(keys, sent.tolist(), strict=True)))
    assert stored[:3] == pytest.approx(np.clip((lifted - tool) / 0.02, -1, 1), abs=1e-5)
    assert np.linalg.norm(stored[:3]) > 0.2 and stored[1] == 0.0  # 5 mm in the arm plane: 2 deg at 15 cm
    assert stored[3:] == pytest.approx([0.5, -1.0])  # 4 of 8 degrees of roll; 50 of 25 gripper: one step
