"""The twin through tools written elsewhere: gymnasium ids, SB3-safe keys, [-1, 1] actions (issue #15, item 4)."""

from __future__ import annotations

import subprocess
import sys

import gymnasium
import numpy as np
import pytest
import torch

from sim import SimConfig, make_env
from sim.errors import SimError
from sim.registration import ENV_IDS, register_envs
from sim.wrappers import ROBOT_KEYS, SB3Keys, normalize_actions, sb3_key


def test_importing_registers_nothing_and_register_envs_makes_every_task() -> None:
    check = "import gymnasium, sim, sim.registration; assert 'vlmrl/SO101Lift-v0' not in gymnasium.registry"
    assert subprocess.run([sys.executable, "-c", check], check=False).returncode == 0
    assert register_envs() == list(ENV_IDS) and register_envs() == list(ENV_IDS)  # idempotent
    env = gymnasium.make("vlmrl/SO101Reach-v0", cameras=(), max_episode_steps=3)
    assert env.unwrapped.cfg.task == "reach" and env.metadata["render_fps"] == 20.0
    obs, _ = env.reset(seed=0)
    assert "state" in obs and "shoulder_pan.pos" in obs
    env.close()


def test_bad_keywords_fail_in_one_line() -> None:
    register_envs()
    with pytest.raises(SimError, match=r"unknown keyword\(s\) \['imagesize'\]"):
        gymnasium.make("vlmrl/SO101Lift-v0", imagesize=64)
    with pytest.raises(SimError, match="render_mode 'human'"):
        gymnasium.make("vlmrl/SO101Lift-v0", render_mode="human", cameras=())


def test_sb3_keys_renames_and_keeps_what_a_robot_provides() -> None:
    env = SB3Keys(make_env(SimConfig(task="reach", cameras=("front",), image_size=32)), keep=ROBOT_KEYS)
    assert sorted(env.observation_space.spaces) == sorted(
        ["pixels_front", *(sb3_key(k) for k in ("shoulder_pan.pos", "shoulder_lift.pos", "elbow_flex.pos",
                                                 "wrist_flex.pos", "wrist_roll.pos", "gripper.pos"))]
    )  # fmt: skip
    obs, _ = env.reset(seed=0)
    raw = env.unwrapped._observation()
    assert np.array_equal(obs["elbow_flex_pos"], raw["elbow_flex.pos"]) and obs["pixels_front"].shape == (
        32,
        32,
        3,
    )
    assert env.observation_space.contains(obs)
    with pytest.raises(SimError, match="selects none"):
        SB3Keys(env.unwrapped, keep=("nothing",))
    env.close()


def test_normalize_actions_maps_minus_one_to_one_onto_the_joint_limits() -> None:
    raw = make_env(SimConfig(task="reach", cameras=(), action_mode="absolute"))
    env = normalize_actions(raw)
    assert np.all(env.action_space.low == -1.0) and np.all(env.action_space.high == 1.0)
    env.reset(seed=0)
    env.step(np.ones(6, np.float32))  # the upper joint limits
    assert np.allclose(raw.joint_targets_array(), raw.action_space.high)
    delta = make_env(SimConfig(task="reach", cameras=(), action_mode="delta"))
    assert normalize_actions(delta) is delta  # already [-1, 1]
    env.close()
    delta.close()


def test_sb3_multi_input_sac_builds_and_learns_on_pixels_and_joints(tmp_path) -> None:
    from stable_baselines3 import SAC
    from stable_baselines3.common.env_checker import check_env

    torch.set_num_threads(1)
    register_envs()
    env = gymnasium.make(
        "vlmrl/SO101Reach-v0",
        image_size=40,
        max_episode_steps=8,
        keep_keys=ROBOT_KEYS,
        normalize_actions=True,
    )
    check_env(env)
    model = SAC(
        "MultiInputPolicy", env, buffer_size=64, learning_starts=8, batch_size=4, train_freq=1, gradient_steps=1,
        policy_kwargs={"net_arch": [16, 16], "features_extractor_kwargs": {"cnn_output_dim": 16}}, seed=0,
    )  # fmt: skip
    assert set(model.policy.observation_space.spaces) == {
        "pixels_front",
        *(sb3_key(k) for k in ROBOT_KEYS[:-1]),
    }
    before = [p.detach().clone() for p in model.actor.parameters()]
    model.learn(total_timesteps=16)
    assert model.num_timesteps == 16 and model._n_updates > 0
    assert any(not torch.equal(a, b) for a, b in zip(before, model.actor.parameters()))
    model.save(tmp_path / "sac")
    env.close()


@pytest.mark.parametrize("normalize", [False, True], ids=["raw-actions", "normalize_actions"])
@pytest.mark.parametrize("env_id", list(ENV_IDS))
def test_gymnasium_check_env_passes_and_the_spec_round_trips(env_id: str, normalize: bool) -> None:
    """Issue #36 item 5: ``check_env`` passes and ``gymnasium.make(env.spec)`` rebuilds the same env."""
    from gymnasium.utils.env_checker import check_env

    register_envs()
    env = gymnasium.make(env_id, image_size=16, max_episode_steps=5, normalize_actions=normalize)
    check_env(env.unwrapped, skip_render_check=True)
    check_env(env, skip_render_check=True)
    again = gymnasium.make(env.spec)
    assert again.spec == env.spec and again.action_space == env.action_space
    assert again.observation_space == env.observation_space
    assert [type(w).__name__ for w in _wrappers(again)] == [type(w).__name__ for w in _wrappers(env)]
    assert gymnasium.make(gymnasium.envs.registration.EnvSpec.from_json(env.spec.to_json())).spec == env.spec
    if normalize:
        assert np.all(again.action_space.low == -1.0) and np.all(again.action_space.high == 1.0)
    env.close()
    again.close()


def _wrappers(env: gymnasium.Env) -> list[gymnasium.Env]:
    stack = [env]
    while isinstance(stack[-1], gymnasium.Wrapper):
        stack.append(stack[-1].env)
    return stack


def test_potential_shaping_adds_the_discounted_change_of_progress_and_nothing_after_a_terminal() -> None:
    from sim.experts import make_expert
    from sim.wrappers import PotentialShaping

    gamma = 0.9
    env = PotentialShaping(make_env(SimConfig(task="reach", cameras=(), terminate_on_success=True)), gamma)
    expert = make_expert(env)
    obs, info = env.reset(seed=1)
    expert.reset()
    before, terminated, steps = info["progress"], False, 0
    while not terminated and steps < 50:
        obs, reward, terminated, _, info = env.step(expert.act(obs))
        after = 0.0 if terminated else info["progress"]
        assert reward == pytest.approx(info["unshaped_reward"] + gamma * after - before, abs=1e-9)
        before, steps = info["progress"], steps + 1
    assert (
        terminated and info["unshaped_reward"] == 1.0
    )  # the expert reached: the last step paid 1 - progress
    env.close()
    with pytest.raises(SimError, match=r"gamma must be in \(0, 1\], got 0"):
        PotentialShaping(make_env(SimConfig(task="reach", cameras=())), 0.0)
