"""A policy trained by `vlmrl train` on what a robot provides runs through `vlmrl deploy` on the twin."""

import json

import pytest
import torch

from agents.config import SACConfig
from buffer.config import BufferConfig
from robot.config import ArmConfig, LeRobotEnvConfig, WatchdogConfig
from robot.contract import JOINT_KEYS
from sim.config import SimConfig
from vlmrl.errors import ConfigError
from vlmrl.pipelines import deploy
from vlmrl.pipelines.train import TrainConfig, main
from vlmrl.trainer import Trainer


def robot_policy_run(run_dir, **overrides):
    fields = dict(
        sim=SimConfig(
            task="reach", action_mode="absolute", cameras=("front",), image_size=32, max_episode_steps=10
        ),
        agent=SACConfig(hidden_dims=(16, 16)),
        buffer=BufferConfig(capacity_steps=500),
        policy_obs="robot",
        replay="uniform",
        total_steps=40,
        learning_starts=20,
        batch_size=8,
        eval_every_steps=1_000,
        eval_episodes=1,
        video_episodes=0,
        run_dir=str(run_dir),
        progress=False,
    )
    return TrainConfig(**(fields | overrides))


def test_robot_policy_reads_joints_and_pixels_only_and_deploys_on_the_twin(tmp_path):
    run_dir = tmp_path / "run"
    assert main(robot_policy_run(run_dir)) == 0
    state = torch.load(run_dir / "checkpoint" / "state.pt", weights_only=False)
    assert set(state["policy_obs_spec"]) == {*JOINT_KEYS, "pixels/front"}  # no privileged sim state

    cfg = deploy.Config(
        policy=run_dir / "policy.pt",
        task="reach",
        robot=ArmConfig(type="sim_so101", cameras=("front",), calibration_dir=str(tmp_path / "calib")),
        env=LeRobotEnvConfig(
            control_hz=200.0,
            max_episode_steps=5,
            image_size=32,
            reset_settle_steps=1,
            keyboard_estop=False,
            watchdog=WatchdogConfig(enabled=False),
        ),
        twin_control_hz=20.0,
        episodes=1,
        out_dir=tmp_path / "deploy",
    )
    assert deploy.main(cfg) == 0
    metrics = json.loads((tmp_path / "deploy" / "metrics.json").read_text())
    assert metrics["episodes"][0]["steps"] == 5


def test_robot_policy_needs_an_arm_with_joint_keys(tmp_path):
    cfg = robot_policy_run(
        tmp_path / "run", sim=SimConfig(suite="robosuite", task="Lift", cameras=("agentview",))
    )
    with pytest.raises(ConfigError, match="policy_obs 'robot'"):
        Trainer.create(cfg)
