"""Closed-form kinematics agree with the MuJoCo model; the twin's joints track LeRobot-unit targets."""

from __future__ import annotations

import numpy as np
import pytest

from sim.errors import SimError
from sim.so101.arm import SO101Sim, joint_limits
from sim.so101.kinematics import (
    EE_WORKSPACE_HIGH_M,
    ee_delta_step,
    forward_kinematics,
    inverse_kinematics,
)


@pytest.fixture(scope="module")
def sim() -> SO101Sim:
    return SO101Sim()


def test_forward_kinematics_matches_the_mujoco_tool_site(sim: SO101Sim) -> None:
    rng = np.random.default_rng(0)
    limits = joint_limits()
    for _ in range(20):
        joints = {name: rng.uniform(*limits[name]) for name in limits}
        sim.set_joint_positions(joints)
        np.testing.assert_allclose(forward_kinematics(joints), sim.tcp_position(), atol=1e-9)
    with_suffix = {f"{k}.pos": v for k, v in joints.items()}
    np.testing.assert_allclose(forward_kinematics(with_suffix), sim.tcp_position(), atol=1e-9)


def test_inverse_kinematics_round_trips_and_refuses_unreachable_points() -> None:
    for target in ([0.2, 0.05, 0.02], [0.15, -0.1, 0.1], [0.25, 0.0, 0.15]):
        joints = inverse_kinematics(np.array(target), pitch_deg=60.0)
        assert joints is not None
        np.testing.assert_allclose(forward_kinematics(joints), target, atol=1e-9)
    assert inverse_kinematics(np.array([0.6, 0.0, 0.0])) is None
    with pytest.raises(SimError, match="elbow_flex"):
        forward_kinematics({"shoulder_pan": 0.0, "shoulder_lift": 0.0, "wrist_flex": 0.0})


def test_position_targets_are_tracked_and_clipped_to_the_joint_ranges(sim: SO101Sim) -> None:
    sim.reset()
    sent = sim.set_joint_targets({"shoulder_pan.pos": 30.0, "elbow_flex": 20.0, "gripper": 150.0})
    assert sent["gripper"] == 100.0 and sent["shoulder_pan"] == 30.0
    sim.step(250)  # one second
    joints = sim.joint_positions()
    assert joints["shoulder_pan"] == pytest.approx(30.0, abs=1.0)
    assert joints["elbow_flex"] == pytest.approx(20.0, abs=1.0)
    assert joints["gripper"] == pytest.approx(100.0, abs=2.0)
    with pytest.raises(SimError, match="unknown SO-101 joint 'elbow'"):
        sim.set_joint_targets({"elbow": 1.0})
    with pytest.raises(SimError, match="must be finite"):
        sim.set_joint_targets({"elbow_flex": float("nan")})


def test_an_ee_delta_step_moves_the_tool_by_the_action_and_holds_out_of_reach() -> None:
    start = inverse_kinematics(np.array([0.2, 0.0, 0.1]), pitch_deg=90.0)
    assert start is not None
    targets = {f"{name}.pos": value for name, value in {**start, "wrist_roll": 5.0, "gripper": 20.0}.items()}
    tool = forward_kinematics(targets)
    action = np.array([0.5, -1.0, 0.25, 1.0, -0.5])
    moved, point = ee_delta_step(targets, tool, action, 0.02, 10.0, 25.0)
    assert set(moved) == set(targets)  # the keys come back as given (with LeRobot's .pos)
    np.testing.assert_allclose(point, tool + np.array([0.01, -0.02, 0.005]), atol=1e-12)
    np.testing.assert_allclose(forward_kinematics(moved), point, atol=1e-6)
    assert moved["wrist_roll.pos"] == pytest.approx(15.0) and moved["gripper.pos"] == pytest.approx(7.5)
    # A move past the workspace box is clipped to it; one out of the arm's reach holds the four joints.
    far = np.array([0.34, 0.0, 0.26])
    high = np.array([0.15, 0.0, 0.25])
    _, clipped = ee_delta_step(targets, high, np.array([0, 0, 1.0, 0, 0]), 0.02, 10.0, 25.0)
    assert clipped[2] == pytest.approx(EE_WORKSPACE_HIGH_M[2])
    held, kept = ee_delta_step(targets, far, np.array([1.0, 0, 1.0, 0, 0]), 0.02, 10.0, 25.0)
    np.testing.assert_array_equal(kept, far)
    assert all(held[k] == targets[k] for k in ("shoulder_pan.pos", "shoulder_lift.pos", "elbow_flex.pos"))
