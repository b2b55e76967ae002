"""Meta-World for the replay grid (issue #35): sparse 0/1 reward from the env's success, episodes that end
at success, Meta-World's scripted policies as the expert, the oracle reading the env's success and
progress, and frames at the configured size.

These build real Meta-World envs (about a second each) and run short expert episodes.
"""

from __future__ import annotations

import numpy as np
import pytest

from sim import SimConfig, make_env
from sim.errors import SimError
from sim.experts import make_expert
from vlm.backends.oracle import OracleScorer
from vlm.clip import Clip
from vlm.config import OracleConfig

pytestmark = pytest.mark.slow


def run_expert(env, seed: int, max_steps: int = 200) -> list[tuple[float, bool, dict]]:
    """(reward, terminated, info) of each step of one expert episode."""
    expert = make_expert(env)
    obs, _ = env.reset(seed=seed)
    expert.reset()
    steps = []
    for _ in range(max_steps):
        obs, reward, terminated, truncated, info = env.step(expert.act(obs))
        steps.append((reward, terminated, info))
        if terminated or truncated:
            break
    return steps


@pytest.mark.parametrize("task", ["reach-v3", "drawer-open-v3"])
def test_the_scripted_policy_succeeds_and_the_sparse_reward_is_the_success_flag(task: str) -> None:
    env = make_env(
        SimConfig(suite="metaworld", task=task, cameras=(), reward="sparse", terminate_on_success=True)
    )
    for seed in (0, 1, 2):
        steps = run_expert(env, seed)
        rewards = [reward for reward, _, _ in steps]
        assert set(rewards) <= {0.0, 1.0}
        assert rewards == [float(info["success"]) for _, _, info in steps]
        assert steps[-1][1] and steps[-1][2]["success"], f"{task} seed {seed}: the expert did not succeed"
        assert not any(terminated for _, terminated, _ in steps[:-1])  # the first success ends the episode
        assert rewards.count(1.0) == 1 and len(steps) < 200
    env.close()


def test_the_sparse_reward_follows_meta_worlds_own_success(monkeypatch) -> None:
    """Whatever the dense reward says, the sparse reward is 1 exactly when Meta-World's info says success."""
    env = make_env(SimConfig(suite="metaworld", task="reach-v3", cameras=(), terminate_on_success=False))
    env.reset(seed=0)
    raw = env.unwrapped.raw_env
    real_step = raw.step
    for flag, dense in ((0.0, 9.9), (1.0, 0.5), (0.0, 0.0)):

        def step(action, flag=flag, dense=dense):
            state, _, terminated, truncated, info = real_step(action)
            return state, dense, terminated, truncated, {**info, "success": flag}

        monkeypatch.setattr(raw, "step", step)
        _, reward, terminated, _, info = env.step(np.zeros(4, np.float32))
        assert reward == flag and info["success"] is bool(flag) and not terminated
        assert info["progress"] == (1.0 if flag else pytest.approx(dense / 10.0))
    env.close()


def test_the_oracle_scores_meta_world_clips_from_the_envs_success_and_progress() -> None:
    env = make_env(
        SimConfig(
            suite="metaworld",
            task="drawer-open-v3",
            cameras=("corner",),
            image_size=24,
            terminate_on_success=True,
        )
    )
    steps = run_expert(env, seed=0)
    progress = np.array([info["progress"] for _, _, info in steps], np.float32)
    assert progress.min() >= 0.0 and progress[-1] == 1.0 and progress[:-1].max() < 1.0
    assert progress[len(progress) // 2] > progress[0]  # opening the drawer is progress
    frames = np.zeros((4, 24, 24, 3), np.uint8)
    oracle = OracleScorer(OracleConfig())
    early = Clip(frames, info={"progress": progress[:4]})
    late = Clip(frames, info={"progress": progress[-4:]})
    scores = oracle.score([early, late], "ignored")
    assert scores[0] == pytest.approx(progress[3]) and scores[1] == 1.0
    success = OracleScorer(OracleConfig(signal="success"))
    flags = np.array([info["success"] for _, _, info in steps], np.float32)
    assert success.score([Clip(frames, info={"success": flags[-4:]})], "ignored")[0] == 1.0
    env.close()


@pytest.mark.parametrize("size", [32, 64])
def test_frames_have_the_configured_size(size: int) -> None:
    env = make_env(
        SimConfig(suite="metaworld", task="reach-v3", cameras=("corner", "topview"), image_size=size)
    )
    obs, _ = env.reset(seed=0)
    obs, *_ = env.step(np.zeros(4, np.float32))
    for key in ("pixels/corner", "pixels/topview"):
        assert obs[key].shape == (size, size, 3) and obs[key].dtype == np.uint8
        assert obs[key].std() > 0  # a rendered scene, not a blank frame
    env.close()


def test_the_expert_reads_the_state_the_policy_may_not_see() -> None:
    env = make_env(SimConfig(suite="metaworld", task="reach-v3", cameras=()))
    obs, _ = env.reset(seed=0)
    np.testing.assert_array_equal(env.unwrapped.last_state, obs["state"])
    action = make_expert(env).act(None)  # no observation given: it reads the env
    assert action.shape == (4,) and action.dtype == np.float32 and np.all(np.abs(action) <= 1.0)
    env.close()


def test_a_suite_without_an_expert_is_named() -> None:
    class Robosuite:
        class unwrapped:  # stands in for an env's unwrapped attribute
            class cfg:
                suite = "robosuite"

    with pytest.raises(SimError, match="sim suite 'robosuite' has no scripted expert; suites with one"):
        make_expert(Robosuite())
