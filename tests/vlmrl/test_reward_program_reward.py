"""The CaR reward wrapper on the SO-101 twin, the observation views and the run-report curve."""

import dataclasses

import numpy as np
import pytest

from robot.contract import JOINT_KEYS
from sim import make_env
from sim.config import SimConfig
from sim.so101.scripted import ScriptedPolicy
from vlm.reward_program import load_program
from vlmrl.errors import ConfigError
from vlmrl.scorers.car_reward import CaRReward, check_program_target, robot_view, subtask_curve, twin_view

LIFT = "examples/reward_programs/lift.json"


@pytest.fixture
def lift_env():
    env = make_env(SimConfig(task="lift", cameras=(), action_mode="delta", terminate_on_success=False))
    yield env
    env.close()


def test_dense_reward_climbs_through_the_subtasks_on_an_expert_episode(lift_env):
    program = load_program(LIFT)
    env = CaRReward(lift_env, program, mode="add", weight=1.0)
    try:
        obs, _ = env.reset(seed=3)
        expert = ScriptedPolicy(env)
        stages, rewards, success_at = [], [], None
        for t in range(60):
            obs, reward, _, _, info = env.step(expert.act(obs))
            stages.append(info["car_stage"])
            rewards.append(reward - float(info["success"]))  # add mode: sparse + CaR
            assert reward == pytest.approx(float(info["success"]) + info["car_reward"])
            if info["success"] and success_at is None:
                success_at = t
        assert success_at is not None
        assert stages[0] == 0 and stages[success_at] == 3 and rewards[success_at] == 1.0
        assert np.all(np.diff(stages[: success_at + 1]) >= 0)  # the expert completes them in order
        assert rewards[0] < 1 / 3 < max(rewards[:success_at])
        stats = env.episode_stats()
        assert stats["car/subtask_1"] == stats["car/subtask_3"] == 1.0 and stats["car/errors"] == 0
        env.reset(seed=4)
        assert env.episode_stats()["car/subtask_1"] == 0.0
    finally:
        env.close()


def test_replace_mode_drops_the_env_reward(lift_env):
    env = CaRReward(lift_env, load_program(LIFT), mode="replace", weight=2.0)
    try:
        env.reset(seed=0)
        _, reward, _, _, info = env.step(np.zeros(6, np.float32))
        assert reward == pytest.approx(2.0 * info["car_reward"]) and 0 < info["car_reward"] < 1 / 3
    finally:
        env.close()


def test_views_and_privileged_refusal():
    env = make_env(SimConfig(task="lift", cameras=(), action_mode="delta"))
    obs, _ = env.reset(seed=0)
    env.close()
    view = twin_view(obs["state"])
    assert np.allclose(view["object_minus_ee_m"], view["object_pos_m"] - view["ee_pos_m"], atol=1e-6)
    assert view["object_pos_m"][2] == pytest.approx(
        view["object_half_size_m"], abs=2e-3
    )  # resting on the table
    arm = robot_view({k: obs[k] for k in JOINT_KEYS})
    assert set(arm) == {"joint_pos_rad", "gripper_open_frac"}
    assert np.allclose(arm["joint_pos_rad"], view["joint_pos_rad"], atol=1e-5)
    with pytest.raises(ConfigError, match="LeRobot joint keys"):
        robot_view({"state": obs["state"]})
    with pytest.raises(ConfigError, match="STATE_NAMES"):
        twin_view(obs["state"][:5])
    program = load_program(LIFT)
    assert program.privileged
    check_program_target(program, runs_on_robot=False, where="sim")  # shaping in simulation is fine
    with pytest.raises(ConfigError, match=r"simulation-only fields \['object_half_size_m'"):
        check_program_target(program, runs_on_robot=True, where="arm")
    joints_only = dataclasses.replace(
        program,
        subtasks=(
            dataclasses.replace(
                program.subtasks[0], source="def check(obs):\n    return obs.gripper_open_frac < 0.5\n"
            ),
        ),
    )
    check_program_target(joints_only, runs_on_robot=True, where="arm")


def test_subtask_curve_bins_training_episodes():
    log = [
        {"step": 100.0 * i, "car/subtask_1": float(i >= 2), "car/subtask_2": float(i >= 6)} for i in range(8)
    ]
    rows = subtask_curve(log, bins=4)
    assert [r["step"] for r in rows] == [100, 300, 500, 700]
    assert [r["subtask_1"] for r in rows] == [0, 1, 1, 1] and [r["subtask_2"] for r in rows] == [0, 0, 0, 1]
    assert subtask_curve([{"step": 1.0, "return": 0.0}]) == []
