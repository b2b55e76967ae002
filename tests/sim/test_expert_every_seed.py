"""The twin's scripted expert is valid on every seed, under every training setting (issue #32).

It is the source of demonstrations (``--demo-episodes``), of labelled recordings for learned scorers and of
the scripted operator's takeovers, so it must succeed whatever the seed, the action mode and whether episodes
end at success, and it must never raise (an unreachable target used to kill ``vlmrl train``). Seeds >= 1000
are the ones nobody tuned on.
"""

from __future__ import annotations

import numpy as np
import pytest

from sim import make_env
from sim.config import SimConfig
from sim.so101.scripted import ScriptedPolicy
from sim.so101.tasks import TASKS

SEEDS = (*range(50), *range(1000, 1050))
MIN_SUCCESS = 0.95


def _run(task: str, action_mode: str, terminate: bool) -> tuple[int, int]:
    """(episodes that end in success, episodes that ever succeeded) over ``SEEDS``."""
    env = make_env(
        SimConfig(
            task=task, cameras=(), reward="sparse", action_mode=action_mode, terminate_on_success=terminate
        )
    )
    expert = ScriptedPolicy(env)
    ended, ever = 0, 0
    try:
        for seed in SEEDS:
            obs, _ = env.reset(seed=seed)
            expert.reset()
            reached = False
            for _ in range(env.unwrapped.max_episode_steps):
                action = expert.act(obs)
                assert env.action_space.contains(action), (
                    f"{task} seed {seed}: {action} outside the action space"
                )
                obs, _, terminated, truncated, info = env.step(action)
                reached = reached or info["success"]
                if terminated or truncated:
                    break
            assert terminated == (terminate and info["success"])
            ended += int(info["success"])
            ever += int(reached)
    finally:
        env.close()
    return ended, ever


@pytest.mark.slow
@pytest.mark.parametrize("task", TASKS)
@pytest.mark.parametrize("action_mode", ["absolute", "delta"])
def test_expert_succeeds_on_every_seed_and_ends_in_success(task: str, action_mode: str) -> None:
    for terminate in (True, False):
        ended, ever = _run(task, action_mode, terminate)
        setting = f"{task}, {action_mode} actions, terminate_on_success={terminate}"
        assert ended >= MIN_SUCCESS * len(SEEDS), f"{setting}: {ended}/{len(SEEDS)} episodes end in success"
        # Without termination the expert stops acting once the task holds: it does not undo its success.
        assert ever - ended <= 0.03 * len(SEEDS), f"{setting}: {ever - ended} successes undone"


def test_expert_holds_still_once_the_push_is_done() -> None:
    env = make_env(SimConfig(task="push", cameras=(), action_mode="delta", terminate_on_success=False))
    expert = ScriptedPolicy(env)
    obs, _ = env.reset(seed=1000)
    stopped, success = False, False
    for _ in range(env.unwrapped.max_episode_steps):
        action = expert.act(obs)
        # Joint-delta actions of zero: the targets stay where they are, from the first such step on.
        if stopped:
            np.testing.assert_array_equal(action, np.zeros(6, np.float32))
        stopped = stopped or (success and not action.any())
        obs, _, _, _, info = env.step(action)
        success = info["success"]
    assert stopped and info["success"]
    env.close()


def test_the_push_expert_leaves_the_cube_near_the_zone_centre() -> None:
    """Policies copy where their teacher stops: an expert that stopped at the first step inside the 3 cm zone
    left the cube 2.1 cm out at the median (64% beyond 2 cm), and policies that learned from it stopped at the
    edge, 2.6-3.0 cm out. It now pushes on toward the centre while the push goes cleanly."""
    env = make_env(SimConfig(task="push", cameras=(), action_mode="delta", terminate_on_success=False))
    expert = ScriptedPolicy(env)
    ends = []
    for seed in range(1000, 1030):
        obs, _ = env.reset(seed=seed)
        expert.reset()
        for _ in range(env.unwrapped.max_episode_steps):
            obs, _, _, _, info = env.step(expert.act(obs))
        if info["success"]:
            cube, zone = env.unwrapped.sim.cube_position(), env.unwrapped.task.goal()
            ends.append(float(np.linalg.norm(cube[:2] - zone[:2])))
    env.close()
    assert len(ends) >= 27
    assert np.median(ends) < 0.019, f"median end {np.median(ends):.3f} m from the zone's centre"


def test_push_goals_are_reachable_for_a_straight_push() -> None:
    from sim.so101.kinematics import solve_ik
    from sim.so101.scripted import PUSH_BEHIND_M, PUSH_Z_M

    env = make_env(SimConfig(task="push", cameras=()))
    for seed in range(1000, 1200):
        env.reset(seed=seed)
        sim, zone = env.unwrapped.sim, env.unwrapped.task.goal()
        cube = sim.cube_position()
        direction = (zone - cube) * np.array([1.0, 1.0, 0.0])
        direction /= np.linalg.norm(direction)
        behind = cube - direction * PUSH_BEHIND_M
        for point in (np.array([behind[0], behind[1], PUSH_Z_M]), np.array([zone[0], zone[1], PUSH_Z_M])):
            assert solve_ik(point) is not None, f"seed {seed}: {point} out of reach"
    env.close()
