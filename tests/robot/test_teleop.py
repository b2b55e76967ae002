import pytest

from robot.config import SO101_JOINT_KEYS
from robot.teleop import KeyboardJog, OperatorKeys

MEASURED = dict.fromkeys(SO101_JOINT_KEYS, 0.0) | {"gripper.pos": 50.0}


def test_keyboard_jog_moves_held_joints_from_the_measured_pose():
    jog = KeyboardJog(SO101_JOINT_KEYS, dict.fromkeys(SO101_JOINT_KEYS, 2.0), listen=False)
    assert jog.action(MEASURED) == MEASURED
    jog.press("q")
    jog.press("h")
    jog.action(MEASURED)
    out = jog.action(MEASURED)
    assert out["shoulder_pan.pos"] == pytest.approx(4.0) and out["gripper.pos"] == pytest.approx(46.0)
    jog.release("q")
    assert jog.action(MEASURED)["shoulder_pan.pos"] == pytest.approx(4.0)
    jog.sync(MEASURED | {"shoulder_pan.pos": -3.0})
    assert jog.action(MEASURED)["shoulder_pan.pos"] == pytest.approx(-3.0)


def test_operator_keys_map_to_events_and_toggle_intervention():
    keys = OperatorKeys(listen=False)
    for key in ("right", "x", "space", "left", "up", "space"):
        keys.press(key)
    assert keys.poll() == ["success", "intervene", "failure", "rerecord", "intervene"]
    assert keys.poll() == [] and keys.intervening is False
    keys.press("intervene")
    assert keys.intervening is True


def test_leader_arm_reads_lerobots_so101_leader_through_the_bus(bus, tmp_path):
    from robot.errors import RobotError
    from robot.teleop import LeaderArm

    bus.present |= {"shoulder_pan": 12.5, "gripper": 40.0}
    leader = LeaderArm("so101_leader", "/dev/ttyFAKE1", calibration_dir=str(tmp_path))
    assert ("connect", True) in bus.calls
    action = leader.action({})
    assert list(action) == list(SO101_JOINT_KEYS)
    assert action["shoulder_pan.pos"] == 12.5 and action["gripper.pos"] == 40.0
    assert bus.calls[-1] == ("sync_read", "Present_Position")
    leader.close()
    assert bus.calls[-1][0] == "disconnect"
    with pytest.raises(RobotError, match="needs --leader-port"):
        LeaderArm("so101_leader", None)
    with pytest.raises(RobotError, match="unknown"):
        LeaderArm("so999_leader", "/dev/null")
