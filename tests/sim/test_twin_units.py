"""Hardware-like units of the twin (sim.units): fixed across episodes, and each documented factor measurable."""

import dataclasses
from pathlib import Path

import numpy as np
import pytest

from robot.config import SO101_JOINT_KEYS, ArmConfig
from robot.errors import RobotError
from robot.lerobot_robot import lerobot_config
from sim.errors import SimError
from sim.lerobot_twin import SimSO101, SimSO101Config, make_sim_so101
from sim.units import NOMINAL, UNITS, units_table

ROOT = Path(__file__).resolve().parents[2]
UNIT = "b"


def twin(tmp_path, unit, seed=1):
    robot = SimSO101(
        SimSO101Config(calibration_dir=tmp_path / "calib", camera_names=("front",), image_size=64, unit=unit)
    )
    robot.connect()
    robot.reset_scene(seed)
    return robot


def scene_values(robot):
    m = robot.sim.model
    cam = int(m.camera("front").id)
    return {
        "cube_friction": float(m.geom_friction[int(m.geom("cube").id)][0]),
        "table_friction": float(m.geom_friction[int(m.geom("table").id)][0]),
        "cube_mass": float(m.body_mass[int(m.body("cube").id)]),
        "camera_pos": m.cam_pos[cam].copy(),
        "camera_quat": m.cam_quat[cam].copy(),
        "camera_fovy": float(m.cam_fovy[cam]),
        "light": float(m.light_diffuse[0][0]),
    }


def joints(obs):
    return np.array([obs[k] for k in SO101_JOINT_KEYS])


def test_the_documented_table_is_the_units_table():
    table = units_table()
    assert table in (ROOT / "docs" / "twin-units.md").read_text()
    import sim.units

    assert table in sim.units.__doc__
    assert list(UNITS) == [NOMINAL, "a", "b", "c", "d", "e"]


def test_a_unit_is_fixed_across_episodes_and_differs_from_the_nominal_twin_in_each_factor(tmp_path):
    unit = UNITS[UNIT]
    nominal, robot = twin(tmp_path, NOMINAL), twin(tmp_path, UNIT)
    try:
        base, mine = scene_values(nominal), scene_values(robot)
        # friction, mass, light, camera pose and field of view: in the model, by the unit's scales
        p = unit.perturbation
        assert mine["cube_friction"] == pytest.approx(base["cube_friction"] * p.friction_scale)
        assert mine["table_friction"] == pytest.approx(base["table_friction"] * unit.table_friction_scale)
        assert mine["cube_mass"] == pytest.approx(base["cube_mass"] * p.cube_mass_scale)
        assert mine["light"] == pytest.approx(min(base["light"] * p.light_scale, 1.0))
        assert np.linalg.norm(mine["camera_pos"] - base["camera_pos"]) >= 0.01
        assert not np.allclose(mine["camera_quat"], base["camera_quat"])
        assert mine["camera_fovy"] == pytest.approx(base["camera_fovy"] + p.camera_fovy_deg["front"])
        for name in ("cube_friction", "table_friction", "cube_mass", "light", "camera_fovy"):
            assert abs(mine[name] - base[name]) > 0.05 * abs(base[name]), name
        # frames: the same scene looks different
        frame, nominal_frame = robot.get_observation()["front"], nominal.get_observation()["front"]
        assert np.abs(frame.astype(int) - nominal_frame.astype(int)).mean() > 2.0
        # calibration: both arms stand at the same pose; the unit reports it off by its zero offsets
        offsets = np.array([unit.zero_offset[k.removesuffix(".pos")] for k in SO101_JOINT_KEYS])
        reported = joints(robot.get_observation()) - joints(nominal.get_observation())
        arm = slice(0, 5)  # the open gripper is at its range's end on both (the offset shows once it moves)
        assert reported[arm] == pytest.approx(offsets[arm], abs=1e-6)
        assert np.all(np.abs(offsets) >= 1.0)
        # another episode, another seed: the same unit (nothing is drawn per episode)
        robot.reset_scene(2)
        again = scene_values(robot)
        for name, value in mine.items():
            np.testing.assert_array_equal(again[name], value)
        assert joints(robot.get_observation())[arm] - offsets[arm] == pytest.approx(
            joints(nominal.get_observation())[arm], abs=1e-6
        )  # seeds place the cube, not the arm
        other = twin(tmp_path, UNIT, seed=3)  # the unit is drawn from its seed: the same in a new process
        try:
            np.testing.assert_array_equal(scene_values(other)["camera_pos"], mine["camera_pos"])
        finally:
            other.disconnect()
    finally:
        nominal.disconnect()
        robot.disconnect()


def test_a_units_servos_answer_late_with_play_and_a_dead_band(tmp_path):
    """Shoulder pan (no gravity load): a 10 degree step, then a step smaller than the dead band."""
    unit = UNITS[UNIT]
    assert unit.latency_steps == 1
    pan = "shoulder_pan.pos"
    moves = {}
    for name in (NOMINAL, UNIT):
        robot = twin(tmp_path, name)
        try:
            hold = {k: robot.get_observation()[k] for k in SO101_JOINT_KEYS}
            start = hold[pan]
            for _ in range(3):  # holding the reported pose keeps the arm where it is
                robot.send_action(hold)
            assert robot.get_observation()[pan] == pytest.approx(start, abs=1e-3)
            target = hold | {pan: start + 10.0}
            path = []
            for _ in range(20):
                sent = robot.send_action(target)
                assert sent[pan] == pytest.approx(start + 10.0)  # what the arm was sent, in its own units
                path.append(robot.get_observation()[pan] - start)
            small = target | {pan: start + 10.0 + 0.5 * unit.dead_band_deg["shoulder_pan"]}
            for _ in range(10):
                robot.send_action(small)
            moves[name] = (path, robot.get_observation()[pan] - start - path[-1])
        finally:
            robot.disconnect()
    nominal_path, nominal_small = moves[NOMINAL]
    unit_path, unit_small = moves[UNIT]
    assert nominal_path[0] > 5.0 and abs(unit_path[0]) < 0.01  # one period late
    assert unit_path[1] > 5.0
    assert nominal_path[-1] == pytest.approx(10.0, abs=0.01)
    half_play = unit.backlash_deg["shoulder_pan"] / 2
    assert unit_path[-1] == pytest.approx(10.0 - half_play, abs=0.01)  # stops short by half the play
    assert nominal_small == pytest.approx(0.5 * unit.dead_band_deg["shoulder_pan"], abs=0.01)
    assert unit_small == pytest.approx(0.0, abs=0.01)  # inside the dead band: ignored


def test_the_scripted_expert_commands_in_the_units_own_joint_frame(tmp_path):
    """Takeovers and demonstrations on a unit: the expert means the same physical targets as on the nominal
    twin (same scene), sent in the unit's reported frame (plus its zero offsets)."""
    nominal, robot = twin(tmp_path, NOMINAL), twin(tmp_path, UNIT)
    try:
        mine, base = robot.scripted_expert()(), nominal.scripted_expert()()
        offsets = UNITS[UNIT].zero_offset
        for key in SO101_JOINT_KEYS:
            assert mine[key] == pytest.approx(base[key] + offsets[key.removesuffix(".pos")], abs=1e-4)
    finally:
        nominal.disconnect()
        robot.disconnect()


def test_unknown_units_and_units_of_real_arms_are_refused_in_one_line(tmp_path):
    with pytest.raises(SimError, match=r"unit 'z' unknown; expected one of \['nominal', 'a'"):
        SimSO101(SimSO101Config(calibration_dir=tmp_path, unit="z"))
    arm = ArmConfig(type="sim_so101", unit=UNIT, calibration_dir=str(tmp_path / "calib"))
    assert make_sim_so101(arm).unit is UNITS[UNIT]
    real = ArmConfig(type="so101_follower", port="/dev/null", unit=UNIT)
    with pytest.raises(RobotError, match=r"--robot\.unit b is a unit of the twin"):
        lerobot_config(real)


def test_a_units_factors_can_be_taken_one_at_a_time_or_left_out(tmp_path):
    from sim.units import FACTORS, unit_named, with_factors

    unit = UNITS["a"]
    assert with_factors(unit, set(FACTORS)) == unit  # every factor kept: the unit itself
    bare = with_factors(unit, set())
    assert bare == dataclasses.replace(
        UNITS[NOMINAL], name="a", seed=unit.seed
    )  # none kept: the nominal twin
    light = unit_named("a/only-light")
    assert light.name == "a/only-light" and light.perturbation.light_scale == unit.perturbation.light_scale
    assert light.latency_steps == 0 and not light.zero_offset and not light.perturbation.camera_offset_m
    no_light = unit_named("a/no-light")
    assert no_light.perturbation.light_scale == 1.0
    assert no_light.zero_offset == unit.zero_offset and no_light.latency_steps == unit.latency_steps == 2
    latency = unit_named("a/only-latency")
    assert (
        latency.latency_steps == latency.perturbation.latency_steps == 2
        and latency.table_friction_scale == 1.0
    )
    for (
        factor
    ) in FACTORS:  # each factor alone changes the unit from the nominal twin, and so does leaving it out
        assert unit_named(f"a/only-{factor}") != bare and unit_named(f"a/no-{factor}") != unit
    # a variant runs as a unit does: the light alone dims the twin's light, the joints report no offset
    nominal, robot = twin(tmp_path, NOMINAL), twin(tmp_path, "a/only-light")
    try:
        base, mine = scene_values(nominal), scene_values(robot)
        assert mine["light"] == pytest.approx(base["light"] * unit.perturbation.light_scale, rel=1e-5)
        assert np.allclose(mine["camera_pos"], base["camera_pos"]) and mine["cube_mass"] == base["cube_mass"]
        assert np.allclose(joints(robot.get_observation()), joints(nominal.get_observation()), atol=1e-6)
    finally:
        nominal.disconnect()
        robot.disconnect()
    for bad in ("a/only-gravity", "a/some-light", "nominal/only-light", "z/only-light"):
        with pytest.raises(SimError, match="unknown"):
            unit_named(bad)
