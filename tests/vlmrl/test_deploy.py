"""vlmrl deploy end to end on the MuJoCo twin behind LeRobot's Robot API (the real-arm code path)."""

import dataclasses
import json

import gymnasium as gym
import numpy as np
import pytest

from agents.config import SACConfig
from agents.export import export_policy
from agents.sac import SAC
from robot.config import SO101_JOINT_KEYS, SO101_JOINT_LIMITS, ArmConfig, LeRobotEnvConfig, WatchdogConfig
from sim.config import SimConfig
from vlmrl import cli
from vlmrl.deployment import policy_episodes
from vlmrl.errors import ConfigError
from vlmrl.loop import arm_actions
from vlmrl.pipelines import deploy

ACTIONS = gym.spaces.Box(
    np.array([SO101_JOINT_LIMITS[k][0] for k in SO101_JOINT_KEYS], np.float32),
    np.array([SO101_JOINT_LIMITS[k][1] for k in SO101_JOINT_KEYS], np.float32),
)


def export(tmp_path, obs_spec, name="policy.pt", run=None, actions=ACTIONS):
    sac = SAC(SACConfig(hidden_dims=(32, 32), pixel=SACConfig().pixel), obs_spec, actions)
    return export_policy(sac, tmp_path / name, run=run)


JOINTS_AND_FRONT = {"pixels/front": ((48, 48, 3), np.dtype(np.uint8))} | {
    k: ((1,), np.dtype(np.float32)) for k in SO101_JOINT_KEYS
}


def run_info(**overrides):
    sim = SimConfig(task="reach", cameras=("front",), image_size=48, control_hz=20.0, action_mode="absolute")
    return policy_episodes.policy_run_info(dataclasses.replace(sim, **overrides), "robot")


def config(tmp_path, policy, **overrides):
    return deploy.Config(
        policy=policy,
        robot=ArmConfig(type="sim_so101", cameras=("front",), calibration_dir=str(tmp_path / "calib")),
        env=LeRobotEnvConfig(
            control_hz=200.0,
            max_episode_steps=8,
            image_size=48,
            reset_settle_steps=1,
            keyboard_estop=False,
            watchdog=WatchdogConfig(enabled=False),
        ),
        twin_control_hz=20.0,
        out_dir=tmp_path / "deploy",
        **overrides,
    )


def test_deploy_runs_a_pixel_and_joint_policy_on_the_twin(tmp_path):
    obs_spec = {"pixels/front": ((48, 48, 3), np.dtype(np.uint8))} | {
        k: ((1,), np.dtype(np.float32)) for k in SO101_JOINT_KEYS
    }
    cfg = config(tmp_path, export(tmp_path, obs_spec), episodes=2)
    assert deploy.main(cfg) == 0
    out = tmp_path / "deploy"
    metrics = json.loads((out / "metrics.json").read_text())
    assert [e["steps"] for e in metrics["episodes"]] == [8, 8]
    assert metrics["loop"]["safety_steps"] > 16 and metrics["loop"]["stopped"] is None
    assert (out / "episode_0.mp4").stat().st_size > 0 and (out / "episode_1.mp4").is_file()
    assert json.loads((out / "config.json").read_text())["robot"]["type"] == "sim_so101"


def test_a_policy_reading_privileged_sim_state_is_refused_with_the_reason(tmp_path):
    policy = export(
        tmp_path, {"state": ((24,), np.dtype(np.float32))}, run=run_info(cameras=()) | {"policy_obs": "state"}
    )
    with pytest.raises(
        ConfigError, match=r"privileged 'state' vector .*--policy-obs state.*train it with --policy-obs robot"
    ):
        deploy.main(config(tmp_path, policy))
    assert not (tmp_path / "deploy").exists()  # refused before anything is written


def test_deploy_takes_task_image_size_cameras_and_rate_from_the_policy_file(tmp_path, capsys):
    policy = export(tmp_path, JOINTS_AND_FRONT, run=run_info())
    cfg = deploy.Config(
        policy=policy,
        robot=ArmConfig(calibration_dir=str(tmp_path / "calib")),
        env=LeRobotEnvConfig(
            max_episode_steps=3,
            reset_settle_steps=1,
            keyboard_estop=False,
            watchdog=WatchdogConfig(enabled=False),
        ),
        out_dir=tmp_path / "deploy",
    )
    assert (cfg.task, cfg.env.image_size, cfg.env.control_hz) == ("lift", 128, 30.0)  # deploy's defaults
    assert deploy.main(cfg) == 0
    written = json.loads((tmp_path / "deploy" / "config.json").read_text())
    assert (
        written["task"] == "reach"
        and written["env"]["image_size"] == 48
        and written["env"]["control_hz"] == 20.0
    )
    out = capsys.readouterr().out
    assert "on so101 'reach': observes robot (front, 48 px), absolute actions at 20 Hz" in out
    ticks = json.loads((tmp_path / "deploy" / "metrics.json").read_text())["loop"]["ticks"]
    assert f"of {ticks} control periods overran 20 Hz" in out  # overruns read as what they are


@pytest.mark.parametrize(
    ("run", "overrides", "reason"),
    [
        ({}, {"task": "push"}, r"trained on task 'reach', not --task 'push'"),
        ({"image_size": 64}, {}, r"trained on 64 px frames, not --env.image-size 48"),
        (
            {"control_hz": 10.0},
            {},
            r"acts at 10 Hz \(trained with --sim.control-hz 10\), not --twin-control-hz 20",
        ),
        (
            {"action_mode": "torque"},
            {},
            r"outputs 'torque' actions: an arm takes absolute, delta or ee_delta",
        ),
        (
            {"action_mode": "delta", "max_windup_deg": 16.0},
            {"windup": 4.0},
            r"trained with --sim.max-windup-deg 16, not --env.max-windup-deg 4",
        ),
        ({"suite": "robosuite", "task": "Lift"}, {}, r"trained in 'robosuite'"),
        (
            {"camera_calibration": {"front": "cam_a"}},
            {"robot": "real"},
            r"trained through camera calibration",
        ),
    ],
)
def test_a_policy_that_cannot_run_as_asked_is_refused_with_the_reason(tmp_path, run, overrides, reason):
    policy = export(tmp_path, JOINTS_AND_FRONT, run=run_info() | run)
    cfg = config(tmp_path, policy)
    if overrides.get("task"):
        cfg = dataclasses.replace(cfg, task=overrides["task"])
    if overrides.get("windup"):
        cfg = dataclasses.replace(cfg, env=dataclasses.replace(cfg.env, max_windup_deg=overrides["windup"]))
    if overrides.get("robot"):
        cfg = dataclasses.replace(
            cfg,
            robot=dataclasses.replace(cfg.robot, type="so101_follower", port="/dev/null"),
            env=dataclasses.replace(cfg.env, camera_calibration={"front": "cam_b"}),
        )
    with pytest.raises(ConfigError, match=reason):
        deploy.main(cfg)


def test_a_joint_delta_policy_moves_the_arm_by_its_scaled_deltas(tmp_path):
    deltas = gym.spaces.Box(-1.0, 1.0, (6,), np.float32)
    policy = export(tmp_path, JOINTS_AND_FRONT, run=run_info(action_mode="delta"), actions=deltas)
    cfg = config(tmp_path, policy)
    assert deploy.main(cfg) == 0
    metrics = json.loads((tmp_path / "deploy" / "metrics.json").read_text())
    assert metrics["episodes"][0]["steps"] == 8
    # Deltas of at most 8 degrees (25 for the gripper) per step never trip the joint step limit (8 to 15);
    # sent as absolute targets, values in [-1, 1] would (the arm starts tens of degrees away from 0).
    assert "max_step" not in metrics["loop"]["safety_clips"]


def test_an_end_effector_policy_deploys_through_the_twins_kinematics(tmp_path):
    ee = gym.spaces.Box(-1.0, 1.0, (5,), np.float32)
    policy = export(tmp_path, JOINTS_AND_FRONT, run=run_info(action_mode="ee_delta"), actions=ee)
    assert deploy.main(config(tmp_path, policy)) == 0
    metrics = json.loads((tmp_path / "deploy" / "metrics.json").read_text())
    assert metrics["episodes"][0]["steps"] == 8 and metrics["episodes"][0]["policy_non_finite"] == 0
    # Tool moves of at most 2 cm per step, solved by IK: the first step turns the gripper from the home pose's
    # pitch (60 degrees down) to the steepest one IK reaches (90), which the joint step limit spreads over a few
    # steps, as it would on an arm; nothing else is clipped.
    assert (
        set(metrics["loop"]["safety_clips"]) <= {"max_step"}
        and metrics["loop"]["safety_clips"].get("max_step", 0) <= 4
    )
    wrong = export(
        tmp_path, JOINTS_AND_FRONT, "six.pt", run=run_info(action_mode="ee_delta"), actions=ee_six()
    )
    with pytest.raises(ConfigError, match=r"outputs 6 actions; the robot takes 6 .*, as 5 ee_delta values"):
        deploy.main(config(tmp_path, wrong))


def ee_six():
    return gym.spaces.Box(-1.0, 1.0, (6,), np.float32)


def test_end_effector_actions_move_the_arm_as_in_the_twin(tmp_path):
    """The converter an arm uses (the last command sent) gives the joint targets the twin's own ee_delta mode
    gives from the same state, and moves the tool from where that command puts it."""
    from sim.so101.env import SO101Env
    from sim.so101.kinematics import forward_kinematics

    twin = SO101Env(SimConfig(task="lift", cameras=(), action_mode="ee_delta"))
    twin.reset(seed=3)
    keys = list(SO101_JOINT_KEYS)

    class Arm:  # what EndEffectorDeltas reads of a LeRobotEnv, from the twin's state
        action_keys = keys
        cfg = LeRobotEnvConfig()

        def last_sent(self, caller=""):
            return twin._targets.copy()

    convert = arm_actions.action_converter(run_info(action_mode="ee_delta"))
    assert isinstance(convert, arm_actions.EndEffectorDeltas) and convert.max_delta_m == 0.02
    rng = np.random.default_rng(0)
    for _ in range(12):
        action = rng.uniform(-1, 1, 5).astype(np.float32)
        ours = convert(Arm(), action)
        twin.step(action)
        np.testing.assert_allclose(ours, twin._targets, atol=1e-3)  # degrees
    before = forward_kinematics(dict(zip(keys, Arm().last_sent().tolist(), strict=True)))
    up = convert(
        Arm(), np.array([0, 0, 1, 0, 0], np.float32)
    )  # from the last command, not a point of its own
    moved = forward_kinematics(dict(zip(keys, up.tolist(), strict=True))) - before
    np.testing.assert_allclose(moved, [0.0, 0.0, 0.02], atol=2e-3)
    with pytest.raises(ConfigError, match=r"an ee_delta action has 5 values"):
        convert(Arm(), np.zeros(6, np.float32))


def test_with_ee_arm_steps_the_twin_moves_as_the_arm_path_does(tmp_path):
    """``--sim.ee-arm-steps``: the twin's ee_delta targets are the arm path's (the converter from the last
    command, then the safety layer's per-step limit), and no step moves a joint further than that limit."""
    from robot.config import SO101_MAX_STEP
    from sim.so101.env import SO101Env

    twin = SO101Env(SimConfig(task="lift", cameras=(), action_mode="ee_delta", ee_arm_steps=True))
    free = SO101Env(SimConfig(task="lift", cameras=(), action_mode="ee_delta"))
    twin.reset(seed=3)
    free.reset(seed=3)
    keys = list(SO101_JOINT_KEYS)
    limit = np.array([SO101_MAX_STEP[k] for k in keys])

    class Arm:
        action_keys = keys
        cfg = LeRobotEnvConfig()

        def last_sent(self, caller=""):
            return twin._targets.copy()

    convert = arm_actions.EndEffectorDeltas(0.02, 8.0, 25.0)
    rng = np.random.default_rng(1)
    largest_free = 0.0
    for _ in range(20):
        action = rng.uniform(-1, 1, 5).astype(np.float32)
        last = twin._targets.copy()
        arm = np.clip(convert(Arm(), action), last - limit, last + limit)
        twin.step(action)
        np.testing.assert_allclose(twin._targets, arm, atol=1e-3)  # degrees
        assert np.all(np.abs(twin._targets - last) <= limit + 1e-4)
        before = free._targets.copy()
        free.step(action)
        largest_free = max(largest_free, float(np.max(np.abs(free._targets - before) - limit)))
    assert largest_free > 1.0  # without the option the twin takes steps the arm's safety layer would clip
    twin.close()
    free.close()


def test_cli_parses_robot_type_and_reports_a_missing_port_as_one_line(tmp_path, capsys):
    policy = export(tmp_path, {k: ((1,), np.dtype(np.float32)) for k in SO101_JOINT_KEYS})
    argv = [
        "deploy",
        "--policy",
        str(policy),
        "--robot.type",
        "so101_follower",
        "--out-dir",
        str(tmp_path / "o"),
    ]
    assert cli.main(argv) == 1
    assert "needs --robot.port" in capsys.readouterr().err
    assert cli.main(["deploy", "--policy", str(tmp_path / "missing.pt")]) == 1
    assert "no such file" in capsys.readouterr().err


def test_the_real_arm_command_line_drives_lerobots_so101_follower(tmp_path, monkeypatch, capsys):
    """`--robot.type so101_follower --robot.port ...`: the same code path, down to the serial port (a
    simulated servo chain, tests/robot/fake_feetech.py: LeRobot's bus and calibration run for real)."""
    from tests.robot import fake_feetech
    from tests.robot.test_serial_bus import CALIBRATION

    fake_feetech.write_calibration(tmp_path / "calib", "arm1", CALIBRATION)
    servos = fake_feetech.so101_servos(CALIBRATION)
    port = fake_feetech.install(monkeypatch, servos)
    policy = export(tmp_path, {k: ((1,), np.dtype(np.float32)) for k in SO101_JOINT_KEYS})
    argv = [
        "deploy", "--policy", str(policy), "--robot.type", "so101_follower", "--robot.port", "/dev/ttyFAKE0",
        "--robot.id", "arm1", "--robot.cameras", "--robot.calibration-dir", str(tmp_path / "calib"),
        "--env.control-hz", "200", "--env.max-episode-steps", "5", "--env.watchdog.no-enabled",
        "--env.no-keyboard-estop", "--out-dir", str(tmp_path / "real"),
    ]  # fmt: skip
    assert cli.main(argv) == 0
    assert "deploy: 1 episode(s)" in capsys.readouterr().out
    metrics = json.loads((tmp_path / "real" / "metrics.json").read_text())
    assert metrics["episodes"][0]["steps"] == 5
    assert len(port.goal_writes) >= 5 and set(port.goal_writes[-1]) == set(servos)  # every servo got goals
    assert all(s.get("Torque_Enable") == 0 for s in servos.values())  # disconnected with torque off


@pytest.mark.parametrize(
    ("run", "expected"),
    [
        ({"action_mode": "delta", "max_windup_deg": 16.0}, 16.0),  # the policy's own bound
        ({"action_mode": "delta"}, 0.0),  # exported before the bound existed: unbounded, as it trained
        ({"action_mode": "absolute", "max_windup_deg": 16.0}, 0.0),  # joint targets: nothing to wind up
    ],
)
def test_deploy_drives_a_joint_delta_policy_with_the_anti_windup_bound_it_trained_with(
    run, expected, tmp_path
):
    info = {k: v for k, v in run_info().items() if k != "max_windup_deg"} | run
    cfg = deploy.fit_to_policy(config(tmp_path, tmp_path / "policy.pt"), info, reads_pixels=True)
    assert cfg.env.max_windup_deg == expected
    if "max_windup_deg" not in run and run["action_mode"] == "delta":  # unrecorded: the user may say
        given = config(tmp_path, tmp_path / "policy.pt")
        given = dataclasses.replace(given, env=dataclasses.replace(given.env, max_windup_deg=16.0))
        assert deploy.fit_to_policy(given, info, reads_pixels=True).env.max_windup_deg == 16.0


def test_episodes_are_as_long_as_the_policys_training_episodes_unless_given(tmp_path, capsys):
    """Issue 33: deploy allowed 300 steps while lift trains on 100, so a late success counted on the arm and
    not in training. The policy file records its episode length; an older file gets its task's default."""
    policy = export(tmp_path, JOINTS_AND_FRONT, run=run_info(max_episode_steps=4))
    cfg = config(tmp_path, policy, episodes=2)
    cfg = dataclasses.replace(cfg, env=dataclasses.replace(cfg.env, max_episode_steps=None))
    assert deploy.main(cfg) == 0
    metrics = json.loads((tmp_path / "deploy" / "metrics.json").read_text())
    assert [e["steps"] for e in metrics["episodes"]] == [4, 4]
    assert json.loads((tmp_path / "deploy" / "config.json").read_text())["env"]["max_episode_steps"] == 4
    printed = [line for line in capsys.readouterr().out.splitlines() if line.startswith("deploy: episode")]
    assert len(printed) == 2 and "4 steps" in printed[0] and "safety clips" in printed[0]
    assert all(isinstance(e["safety_clips"], dict) for e in metrics["episodes"])
    old = {k: v for k, v in run_info().items() if k != "max_episode_steps"}  # reach: 50 steps by default
    assert deploy.fit_to_policy(cfg, old, reads_pixels=True).env.max_episode_steps == 50
    given = dataclasses.replace(cfg, env=dataclasses.replace(cfg.env, max_episode_steps=7))
    assert (
        deploy.fit_to_policy(given, run_info(max_episode_steps=4), reads_pixels=True).env.max_episode_steps
        == 7
    )


def test_deploy_runs_on_a_twin_unit_and_records_it(tmp_path):
    policy = export(tmp_path, JOINTS_AND_FRONT, run=run_info())
    cfg = config(tmp_path, policy)
    cfg = dataclasses.replace(
        cfg,
        robot=dataclasses.replace(cfg.robot, unit="c"),
        env=dataclasses.replace(cfg.env, max_episode_steps=3),
    )
    assert deploy.main(cfg) == 0
    assert json.loads((tmp_path / "deploy" / "metrics.json").read_text())["unit"] == "c"
    assert json.loads((tmp_path / "deploy" / "config.json").read_text())["robot"]["unit"] == "c"
