"""``--sim.observe-targets`` / ``--env.observe-targets``: the joint targets last commanded as an observation
(``robot.contract.TARGETS_KEY``), the same on the twin and on an arm, read by a policy trained with it and
turned on by deploy, evaluate and finetune for such a policy."""

import dataclasses
import json

import numpy as np
import pytest
import torch

from agents.export import load_policy
from robot.config import ArmConfig, LeRobotEnvConfig, WatchdogConfig
from robot.contract import JOINT_KEYS, TARGETS_KEY, check_env
from sim import make_env
from sim.config import SimConfig
from sim.errors import SimError
from sim.randomization import Perturbation
from tests.vlmrl.pipeline_helpers import finetune_config
from tests.vlmrl.test_train_to_deploy import robot_policy_run
from vlmrl.deployment.robot_env import RobotEnvConfig, check_policy_fits, make_robot_env
from vlmrl.errors import ConfigError
from vlmrl.pipelines import deploy
from vlmrl.pipelines.train import main


def test_the_twin_observes_the_targets_it_commanded_not_where_a_late_arm_is():
    env = make_env(SimConfig(task="lift", action_mode="delta", cameras=(), observe_targets=True))
    check_env(env)
    obs, _ = env.reset(seed=3, options={"perturbation": Perturbation(latency_steps=2)})
    twin = env.unwrapped
    start = obs[TARGETS_KEY].copy()
    np.testing.assert_allclose(start, twin.joint_targets_array())
    action = np.array([1.0, -1.0, 0.0, 0.0, 0.0, 0.0], np.float32)
    obs, *_ = env.step(action)
    # The command moved by one step of max_delta_deg (8 degrees) at once ...
    np.testing.assert_allclose(obs[TARGETS_KEY][:2] - start[:2], [8.0, -8.0], atol=1e-4)
    # ... while two periods of latency keep the joints where they were: the gap is the command in flight.
    joints = np.array([obs[k][0] for k in JOINT_KEYS])
    assert abs(obs[TARGETS_KEY][0] - joints[0]) > 6.0
    for _ in range(10):
        obs, *_ = env.step(np.zeros(6, np.float32))
    joints = np.array([obs[k][0] for k in JOINT_KEYS])
    assert abs(obs[TARGETS_KEY][0] - joints[0]) < 2.0  # the arm caught up with the command
    env.close()
    plain = make_env(SimConfig(task="lift", action_mode="delta", cameras=()))
    assert TARGETS_KEY not in plain.observation_space.spaces
    assert TARGETS_KEY not in plain.reset(seed=3)[0]
    plain.close()


def test_only_the_so101_twin_has_joint_targets():
    with pytest.raises(SimError, match=r"observe_targets .* needs the so101 suite, not 'metaworld'"):
        make_env(SimConfig(suite="metaworld", task="reach-v3", cameras=(), observe_targets=True))


def test_an_arms_env_observes_what_the_safety_layer_let_through(tmp_path):
    cfg = RobotEnvConfig(
        robot=ArmConfig(type="sim_so101", cameras=(), calibration_dir=str(tmp_path / "calib")),
        env=LeRobotEnvConfig(
            control_hz=200.0, max_episode_steps=5, reset_settle_steps=1, keyboard_estop=False,
            watchdog=WatchdogConfig(enabled=False), observe_targets=True,
        ),
        task="reach",
        twin_control_hz=20.0,
    )  # fmt: skip
    env = make_robot_env(cfg, tmp_path / "out")
    with env:
        check_env(env)
        obs, _ = env.reset(seed=0)
        np.testing.assert_allclose(obs[TARGETS_KEY], env.last_sent())
        far = env.last_sent() + np.array([40.0, 0, 0, 0, 0, 0], np.float32)  # beyond one safe step
        obs, _, _, _, info = env.step(far)
        assert info["safety"]  # clipped ...
        np.testing.assert_allclose(obs[TARGETS_KEY], info["sent_action"])  # ... and observed as sent
        assert obs[TARGETS_KEY][0] < far[0]
    plain = make_robot_env(dataclasses.replace(cfg, env=dataclasses.replace(cfg.env, observe_targets=False)),
                           tmp_path / "plain")  # fmt: skip
    with plain:
        assert TARGETS_KEY not in plain.observation_space.spaces
        with pytest.raises(ConfigError, match=r"policy p reads 'joint_targets'.*add --env.observe-targets$"):
            check_policy_fits({TARGETS_KEY: ((6,), np.dtype(np.float32))}, plain, "policy p")


def test_a_policy_trained_on_its_targets_reads_them_and_deploy_and_finetune_provide_them(tmp_path):
    from vlmrl.pipelines import finetune

    torch.set_num_threads(1)
    run_dir = tmp_path / "run"
    sim = SimConfig(
        task="reach", action_mode="delta", cameras=("front",), image_size=32, max_episode_steps=10,
        observe_targets=True,
    )  # fmt: skip
    assert main(robot_policy_run(run_dir, sim=sim)) == 0
    state = torch.load(run_dir / "checkpoint" / "state.pt", weights_only=False)
    assert set(state["policy_obs_spec"]) == {*JOINT_KEYS, TARGETS_KEY, "pixels/front"}
    assert load_policy(run_dir / "policy.pt").run["observe_targets"] is True

    env = LeRobotEnvConfig(
        control_hz=200.0, max_episode_steps=4, image_size=32, reset_settle_steps=1, keyboard_estop=False,
        watchdog=WatchdogConfig(enabled=False),
    )  # fmt: skip
    assert env.observe_targets is False  # deploy turns it on for this policy
    cfg = deploy.Config(
        policy=run_dir / "policy.pt",
        task="reach",
        robot=ArmConfig(type="sim_so101", cameras=("front",), calibration_dir=str(tmp_path / "calib")),
        env=env,
        twin_control_hz=20.0,
        episodes=1,
        out_dir=tmp_path / "deploy",
    )
    assert deploy.main(cfg) == 0
    assert json.loads((tmp_path / "deploy" / "metrics.json").read_text())["episodes"][0]["steps"] == 4

    ft = finetune_config(tmp_path, run_dir, task="reach", env=env)
    assert finetune.fit_to_sim_run(ft, state["config"]).env.observe_targets is True
    assert finetune.main(ft) == 0  # the robot's transitions, joint targets included, reach the buffer
    store = json.loads((tmp_path / "ft" / "buffer.zarr" / "zarr.json").read_text())
    assert TARGETS_KEY in store["attributes"]["vlmrl_buffer"]["env"]["obs_spec"]
