import json
import logging
import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from robot.config import SO101_JOINT_KEYS, SO101_JOINT_LIMITS, SO101_MAX_STEP, SafetyConfig
from robot.errors import RobotError
from robot.safety import SafetyLayer

KEYS = SO101_JOINT_KEYS
LO = np.array([SO101_JOINT_LIMITS[k][0] for k in KEYS])
HI = np.array([SO101_JOINT_LIMITS[k][1] for k in KEYS])
STEP = np.array([SO101_MAX_STEP[k] for k in KEYS])
BOX_LO = np.array([-0.4, -0.4, 0.05])
BOX_HI = np.array([0.4, 0.4, 0.4])


def planar_fk(joints):
    """A toy 3-link arm in degrees: shoulder_pan rotates the plane, lift/elbow/wrist bend in it."""
    pan = math.radians(joints["shoulder_pan.pos"])
    a1 = math.radians(90 - joints["shoulder_lift.pos"])
    a2 = a1 - math.radians(joints["elbow_flex.pos"])
    a3 = a2 - math.radians(joints["wrist_flex.pos"])
    r = 0.11 * math.cos(a1) + 0.13 * math.cos(a2) + 0.1 * math.cos(a3)
    z = 0.12 + 0.11 * math.sin(a1) + 0.13 * math.sin(a2) + 0.1 * math.sin(a3)
    return np.array([r * math.cos(pan), r * math.sin(pan), z])


HOME = {k: 0.0 for k in KEYS} | {"elbow_flex.pos": 60.0, "wrist_flex.pos": 30.0, "gripper.pos": 10.0}

wild = st.one_of(
    st.floats(allow_nan=True, allow_infinity=True),
    st.floats(min_value=-500, max_value=500),
    st.sampled_from([math.nan, math.inf, -math.inf, 1e308, -1e308]),
)
actions = st.lists(st.lists(wild, min_size=6, max_size=6), min_size=1, max_size=25)


def _layer(tmp_path=None, fk=planar_fk):
    cfg = SafetyConfig(workspace_min_m=tuple(BOX_LO), workspace_max_m=tuple(BOX_HI))
    log = None if tmp_path is None else tmp_path / "clips.jsonl"
    layer = SafetyLayer(cfg, KEYS, forward_kinematics=fk, clip_log=log)
    layer.reset(HOME)
    return layer


def test_home_pose_of_toy_arm_is_inside_the_box():
    xyz = planar_fk(HOME)
    assert np.all(xyz > BOX_LO) and np.all(xyz < BOX_HI)


@settings(max_examples=150, deadline=None)
@given(actions)
def test_no_action_sequence_leaves_the_limits(seq):
    layer = _layer()
    prev = np.array([HOME[k] for k in KEYS])
    for proposal in seq:
        out = layer.filter(np.array(proposal))
        cmd = np.array([out.command[k] for k in KEYS])
        assert np.all(np.isfinite(cmd))
        assert np.all(cmd >= LO) and np.all(cmd <= HI)
        assert np.all(np.abs(cmd - prev) <= STEP + 1e-9)
        xyz = planar_fk(out.command)
        assert np.all(xyz >= BOX_LO - 1e-9) and np.all(xyz <= BOX_HI + 1e-9)
        if not np.all(np.isfinite(proposal)):
            assert out.held and np.array_equal(cmd, prev)
        prev = cmd


@settings(max_examples=60, deadline=None)
@given(st.dictionaries(st.sampled_from(KEYS), wild, min_size=6, max_size=6))
def test_dict_proposals_obey_the_same_limits(proposal):
    layer = _layer(fk=None)
    out = layer.filter(proposal)
    cmd = np.array([out.command[k] for k in KEYS])
    assert np.all(cmd >= LO) and np.all(cmd <= HI)
    assert np.all(np.abs(cmd - np.array([HOME[k] for k in KEYS])) <= STEP + 1e-9)


def test_a_reachable_in_limit_action_passes_unchanged():
    layer = _layer()
    target = dict(HOME) | {"shoulder_pan.pos": 3.0, "gripper.pos": 20.0}
    out = layer.filter(target)
    assert out.clipped == () and not out.held
    assert out.command == pytest.approx(target)


def test_far_target_is_approached_at_max_step_and_reached():
    layer = _layer(fk=None)
    target = dict(HOME) | {"shoulder_pan.pos": 50.0}
    seen = []
    for _ in range(10):
        out = layer.filter(target)
        seen.append(out.command["shoulder_pan.pos"])
    assert seen[:3] == pytest.approx([8.0, 16.0, 24.0])
    assert seen[-1] == pytest.approx(50.0)
    assert layer.clip_counts["max_step"] == 6


def test_move_out_of_the_workspace_is_shortened_to_the_boundary():
    layer = _layer()
    # Lowering the shoulder repeatedly drives the toy gripper down through the floor of the box.
    q = dict(HOME)
    for _ in range(40):
        q = layer.filter(q | {"shoulder_lift.pos": 100.0}).command
    assert planar_fk(q)[2] >= BOX_LO[2] - 1e-9
    assert layer.clip_counts["workspace"] > 0
    assert planar_fk(q)[2] == pytest.approx(BOX_LO[2], abs=0.01)


def test_start_outside_the_limits_walks_back_in_without_jumping():
    layer = SafetyLayer(SafetyConfig(), KEYS)
    layer.reset(dict(HOME) | {"shoulder_pan.pos": 130.0})
    cmds = [layer.filter(dict(HOME)).command["shoulder_pan.pos"] for _ in range(4)]
    assert cmds == pytest.approx([122.0, 114.0, 106.0, 98.0])


def test_failing_fk_holds_position(tmp_path):
    def broken(_):
        return np.array([np.nan, 0.0, 0.0])

    layer = SafetyLayer(SafetyConfig(), KEYS, forward_kinematics=broken, clip_log=tmp_path / "clips.jsonl")
    layer.reset(HOME)
    out = layer.filter(dict(HOME) | {"gripper.pos": 30.0})
    layer.close()
    logged = json.loads((tmp_path / "clips.jsonl").read_text())
    assert logged["held"] and logged["proposed"]["gripper.pos"] == 30.0
    assert out.held and out.command == pytest.approx(HOME)
    assert out.clipped[0].startswith("fk_failed: ") and layer.clip_counts == {"fk_failed": 1}


def test_every_clip_is_logged_to_the_jsonl_file(tmp_path, caplog):
    caplog.set_level(logging.DEBUG, logger="robot.safety")
    layer = _layer(tmp_path)
    layer.filter(np.full(6, np.nan))
    layer.filter(dict(HOME) | {"gripper.pos": 1000.0})
    layer.filter(dict(HOME))
    layer.close()
    rows = [json.loads(line) for line in (tmp_path / "clips.jsonl").read_text().splitlines()]
    assert [r["reasons"] for r in rows] == [["non_finite"], ["joint_limit", "max_step"]]
    assert rows[0]["held"] and rows[0]["proposed"][0] == "nan"
    assert rows[1]["command"]["gripper.pos"] == pytest.approx(25.0)
    assert sum("safety step" in r.message for r in caplog.records) == 2
    assert caplog.records[-1].message == (
        "safety step 2: joint_limit,max_step -> {shoulder_pan.pos: 0.00, shoulder_lift.pos: 0.00, "
        "elbow_flex.pos: 60.00, wrist_flex.pos: 30.00, wrist_roll.pos: 0.00, gripper.pos: 25.00}"
    )
    assert not [r for r in caplog.records if r.levelno >= logging.WARNING]  # detail, not terminal noise


def test_bad_config_and_bad_calls_raise_robot_error():
    with pytest.raises(RobotError, match="joint_limits has no entry"):
        SafetyLayer(SafetyConfig(joint_limits={}), KEYS)
    with pytest.raises(RobotError, match="is empty"):
        SafetyLayer(SafetyConfig(joint_limits={k: (1.0, 1.0) for k in KEYS}), KEYS)
    with pytest.raises(RobotError, match="must be positive"):
        SafetyLayer(SafetyConfig(max_step={k: 0.0 for k in KEYS}), KEYS)
    SafetyLayer(SafetyConfig(max_step={k: 0.5 for k in KEYS}), KEYS)  # small steps are fine
    layer = SafetyLayer(SafetyConfig(), KEYS)
    with pytest.raises(RobotError, match="before reset"):
        layer.filter(HOME)
    with pytest.raises(RobotError, match=r"^measured joint positions lacks keys"):
        layer.reset({"gripper.pos": 1.0})
    layer.reset(HOME)
    with pytest.raises(RobotError, match=r"^action lacks keys"):
        layer.filter({"gripper.pos": 1.0})
    with pytest.raises(RobotError, match=r"^action has 3 values"):
        layer.filter(np.zeros(3))


@settings(max_examples=80, deadline=None)
@given(actions, st.lists(st.floats(min_value=-30, max_value=30), min_size=6, max_size=6))
def test_limits_hold_while_the_arm_lags_behind(seq, lag):
    layer = _layer()
    prev = np.array([HOME[k] for k in KEYS])
    for proposal in seq:
        measured = dict(zip(KEYS, prev + np.array(lag)))  # the arm is somewhere near the last command
        out = layer.filter(np.array(proposal), measured=measured)
        cmd = np.array([out.command[k] for k in KEYS])
        assert np.all(cmd >= LO) and np.all(cmd <= HI)
        assert np.all(np.abs(cmd - prev) <= STEP + 1e-9)
        prev = cmd


def test_a_blocked_joint_is_not_wound_up():
    layer = SafetyLayer(SafetyConfig(max_lead_steps=2.0), KEYS)
    layer.reset(HOME)
    blocked = dict(HOME)  # the arm never moves
    for _ in range(10):
        out = layer.filter(dict(HOME) | {"shoulder_pan.pos": 90.0}, measured=blocked)
    assert out.command["shoulder_pan.pos"] == pytest.approx(16.0)  # 2 max steps ahead, not 90
    assert "max_lead" in out.clipped


def test_the_clip_log_records_each_proposal_as_given(tmp_path):
    layer = _layer(tmp_path)
    far = [HOME[k] for k in KEYS[:-1]] + [1000.0]
    layer.filter(np.array([far]))  # a [1, 6] array
    layer.filter(dict(HOME) | {"gripper.pos": np.array([1000.0])})  # one-element arrays as values
    layer.filter(dict(HOME) | {"gripper.pos": "open"})  # not a number: held
    layer.filter("garbage")
    layer.close()
    layer.filter(dict(HOME) | {"gripper.pos": 1000.0})  # after close: clipped, not logged
    rows = [json.loads(line) for line in (tmp_path / "clips.jsonl").read_text().splitlines()]
    assert [r["proposed"] for r in rows] == [
        far,
        {k: v for k, v in HOME.items()} | {"gripper.pos": 1000.0},
        {k: v for k, v in HOME.items()} | {"gripper.pos": "'open'"},
        "'garbage'",
    ]
    assert [r["held"] for r in rows] == [False, False, True, True]
    assert [r["step"] for r in rows] == [1, 2, 3, 4]


def test_forward_kinematics_may_return_a_batched_homogeneous_point():
    layer = _layer(fk=lambda joints: np.append(planar_fk(joints), 1.0)[None, :])  # shape [1, 4]
    out = layer.filter(dict(HOME) | {"shoulder_pan.pos": 3.0})
    assert not out.held and out.command["shoulder_pan.pos"] == pytest.approx(3.0)


def test_a_move_through_the_floor_stops_on_it_partway_towards_the_proposal():
    layer = _layer()
    last = dict(HOME)
    for _ in range(40):
        out = layer.filter(last | {"shoulder_lift.pos": 100.0})
        if "workspace" in out.clipped:
            break
        last = out.command
    assert "workspace" in out.clipped
    lift_before, lift_after = last["shoulder_lift.pos"], out.command["shoulder_lift.pos"]
    assert lift_before < lift_after < lift_before + STEP[KEYS.index("shoulder_lift.pos")]  # partway, forwards
    assert planar_fk(out.command)[2] == pytest.approx(BOX_LO[2], abs=1e-3)  # on the floor


def test_the_workspace_shortens_the_arm_but_lets_the_gripper_and_wrist_roll_move_in_full():
    layer = _layer()
    last = dict(HOME)
    for _ in range(40):
        proposal = last | {"shoulder_lift.pos": 100.0, "gripper.pos": last["gripper.pos"] + 1.0,
                           "wrist_roll.pos": last["wrist_roll.pos"] + 2.0}  # fmt: skip
        out = layer.filter(proposal)
        if "workspace" in out.clipped:
            break
        last = out.command
    assert "workspace" in out.clipped
    assert out.command["shoulder_lift.pos"] < proposal["shoulder_lift.pos"]  # the arm stops on the floor
    assert planar_fk(out.command)[2] == pytest.approx(BOX_LO[2], abs=1e-3)
    assert out.command["gripper.pos"] == pytest.approx(proposal["gripper.pos"])  # closing goes on
    assert out.command["wrist_roll.pos"] == pytest.approx(proposal["wrist_roll.pos"])


def test_the_lead_over_the_measured_joints_is_bounded_both_ways_and_silent_within_it():
    layer = SafetyLayer(SafetyConfig(max_lead_steps=2.0), KEYS)
    layer.reset(HOME)
    reachable = dict(HOME) | {"shoulder_pan.pos": 5.0}
    out = layer.filter(reachable, measured=dict(HOME))
    assert out.clipped == () and out.command == pytest.approx(reachable)
    blocked = dict(HOME) | {"shoulder_pan.pos": 5.0}  # the arm stays here
    for _ in range(10):
        out = layer.filter(dict(HOME) | {"shoulder_pan.pos": -90.0}, measured=blocked)
    assert out.command["shoulder_pan.pos"] == pytest.approx(5.0 - 16.0)  # 2 max steps behind, not -90
    assert out.clipped == ("max_lead",)
    with pytest.raises(RobotError, match=r"^measured joint positions lacks keys"):
        layer.filter(HOME, measured={"gripper.pos": 1.0})


def test_an_empty_workspace_box_is_refused():
    with pytest.raises(RobotError, match=r"workspace box .* is empty"):
        SafetyLayer(SafetyConfig(workspace_min_m=(0.0, 0.0, 0.1), workspace_max_m=(0.4, 0.4, 0.1)), KEYS)
