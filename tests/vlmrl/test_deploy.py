"""vlmrl deploy end to end on the MuJoCo twin behind LeRobot's Robot API (the real-arm code path)."""

import json

import gymnasium as gym
import numpy as np
import pytest

from agents.config import SACConfig
from agents.export import export_policy
from agents.sac import SAC
from robot.config import SO101_JOINT_KEYS, SO101_JOINT_LIMITS, ArmConfig, LeRobotEnvConfig, WatchdogConfig
from vlmrl import cli
from vlmrl.errors import ConfigError
from vlmrl.pipelines import deploy

ACTIONS = gym.spaces.Box(
    np.array([SO101_JOINT_LIMITS[k][0] for k in SO101_JOINT_KEYS], np.float32),
    np.array([SO101_JOINT_LIMITS[k][1] for k in SO101_JOINT_KEYS], np.float32),
)


def export(tmp_path, obs_spec, name="policy.pt"):
    sac = SAC(SACConfig(hidden_dims=(32, 32), pixel=SACConfig().pixel), obs_spec, ACTIONS)
    return export_policy(sac, tmp_path / name)


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


def test_a_policy_reading_privileged_sim_state_is_refused_with_one_line(tmp_path):
    policy = export(tmp_path, {"state": ((24,), np.dtype(np.float32))})
    with pytest.raises(
        ConfigError, match=r"reads 'state' as float32\[24\] but the robot env gives float32\[6\]"
    ):
        deploy.main(config(tmp_path, policy))


def test_cli_parses_robot_type_and_reports_a_missing_port_as_one_line(tmp_path, capsys):
    policy = export(tmp_path, {"state": ((6,), np.dtype(np.float32))})
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
    """`--robot.type so101_follower --robot.port ...`: the same code path, down to LeRobot's motor bus
    (patched here at FeetechMotorsBus, as LeRobot's own robot tests do)."""
    from lerobot.motors.feetech import FeetechMotorsBus

    present = {k.removesuffix(".pos"): 0.0 for k in SO101_JOINT_KEYS}
    goals, open_buses = [], set()
    patches = {
        "_connect": lambda bus, handshake=True: open_buses.add(id(bus)),
        "disconnect": lambda bus, disable_torque=True: open_buses.discard(id(bus)),
        "set_timeout": lambda bus, *a, **k: None,
        "sync_read": lambda bus, name, motors=None: dict(present),
        "sync_write": lambda bus, name, values: (goals.append(dict(values)), present.update(values)),
        "write": lambda bus, *a, **k: None,
        "configure_motors": lambda bus, **k: None,
        "disable_torque": lambda bus, *a, **k: None,
        "enable_torque": lambda bus, *a, **k: None,
        "is_connected": property(lambda bus: id(bus) in open_buses),
        "is_calibrated": property(lambda bus: True),
    }
    for name, value in patches.items():
        monkeypatch.setattr(FeetechMotorsBus, name, value)
    policy = export(tmp_path, {k: ((1,), np.dtype(np.float32)) for k in SO101_JOINT_KEYS})
    argv = [
        "deploy", "--policy", str(policy), "--robot.type", "so101_follower", "--robot.port", "/dev/ttyFAKE0",
        "--robot.cameras", "--robot.calibration-dir", str(tmp_path / "calib"), "--env.control-hz", "200",
        "--env.max-episode-steps", "5", "--env.watchdog.no-enabled", "--env.no-keyboard-estop",
        "--out-dir", str(tmp_path / "real"),
    ]  # fmt: skip
    assert cli.main(argv) == 0
    assert "deploy: 1 episode(s)" in capsys.readouterr().out
    metrics = json.loads((tmp_path / "real" / "metrics.json").read_text())
    assert metrics["episodes"][0]["steps"] == 5
    assert len(goals) >= 5 and set(goals[-1]) == set(present)  # goals reached the bus, in motor names
    assert not open_buses  # disconnected at the end
