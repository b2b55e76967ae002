"""SO-101 twin envs: contract, determinism, image orientation, reachable success, rewards."""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest

from robot.contract import JOINT_KEYS, check_env
from sim import SimConfig, make_env
from sim.errors import SimError
from sim.so101.env import STATE_NAMES
from sim.so101.scripted import ScriptedPolicy

TASKS = ("reach", "lift", "push", "place")


@pytest.mark.parametrize("task", TASKS)
@pytest.mark.parametrize("action_mode", ["absolute", "delta", "ee_delta"])
def test_state_only_envs_keep_the_contract(task: str, action_mode: str) -> None:
    env = make_env(SimConfig(task=task, cameras=(), action_mode=action_mode, reward="shaped"))
    spec = check_env(env, n_steps=15)
    assert spec.state_dim == len(STATE_NAMES)
    assert spec.cameras == ()
    assert set(JOINT_KEYS) <= set(spec.obs)
    assert "robot" in spec.task_description or "cube" in spec.task_description
    env.close()


def test_two_camera_env_keeps_the_contract_with_identical_pixels_for_the_same_seed() -> None:
    env = make_env(SimConfig(task="lift", cameras=("front", "wrist"), image_size=48, action_mode="delta"))
    spec = check_env(env, n_steps=6)  # determinism is checked on every key, pixels included
    assert spec.obs["pixels/front"].shape == (48, 48, 3)
    first, _ = env.reset(seed=3)
    other, _ = env.reset(seed=4)
    assert not np.array_equal(first["state"], other["state"])
    assert not np.array_equal(first["pixels/front"], other["pixels/front"])
    env.close()


def _red_rows(frame: np.ndarray) -> float:
    red = (frame[..., 0] > 150) & (frame[..., 1] < 80) & (frame[..., 2] < 80)
    assert red.sum() > 3, "the red cube should be visible"
    return float(np.nonzero(red)[0].mean())


def test_front_image_has_the_floor_at_the_bottom_and_up_is_row_zero() -> None:
    env = make_env(SimConfig(task="lift", cameras=("front",), image_size=96))
    obs, _ = env.reset(seed=0)
    frame = obs["pixels/front"].astype(float)
    # The camera looks down at the table: the bottom rows are table; the robot stands in the upper half.
    table = np.array([0.62, 0.52, 0.40])
    bottom = frame[-5:].reshape(-1, 3).mean(axis=0) / 255
    assert np.all(np.abs(bottom / bottom.sum() - table / table.sum()) < 0.05)
    dark = frame.sum(axis=-1) < 150  # the black base and wrist
    assert np.nonzero(dark)[0].mean() < frame.shape[0] / 2
    # Raising the cube moves it up in the image (towards row 0).
    sim = env.unwrapped.sim
    before = _red_rows(obs["pixels/front"])
    cube = sim.cube_position()
    sim.set_cube_pose(cube + np.array([0.0, 0.0, 0.08]), 0.0)
    after = _red_rows(sim.render("front", 96))
    assert after < before - 3
    env.close()


@pytest.mark.parametrize("task", TASKS)
def test_scripted_policy_succeeds_and_doing_nothing_does_not(task: str) -> None:
    env = make_env(SimConfig(task=task, cameras=(), reward="sparse"))
    policy = ScriptedPolicy(env)
    for seed in range(3):
        obs, info = env.reset(seed=seed)
        policy.reset()
        assert not info["success"]
        total = 0.0
        for _ in range(env.unwrapped.max_episode_steps):
            obs, reward, terminated, truncated, info = env.step(policy.act(obs))
            total += reward
            if terminated or truncated:
                break
        assert info["success"] and terminated and info["progress"] == 1.0, f"{task} seed {seed}"
        assert total == 1.0
        # Holding the start pose (absolute targets = the current joints) never succeeds.
        obs, info = env.reset(seed=seed)
        hold = np.array([obs[key][0] for key in JOINT_KEYS], dtype=np.float32)
        for _ in range(env.unwrapped.max_episode_steps):
            obs, reward, terminated, truncated, info = env.step(hold)
            assert not info["success"] and reward == 0.0
            if truncated:
                break
        assert truncated and not terminated
    env.close()


@pytest.mark.parametrize("action_mode", ["delta", "ee_delta"])
def test_relative_action_modes_scripted_lift_succeeds(action_mode: str) -> None:
    env = make_env(SimConfig(task="lift", cameras=(), action_mode=action_mode))
    policy = ScriptedPolicy(env)
    obs, _ = env.reset(seed=11)
    for _ in range(env.unwrapped.max_episode_steps):
        action = policy.act(obs)
        assert np.all(np.abs(action) <= 1.0)
        obs, _, terminated, truncated, info = env.step(action)
        if terminated or truncated:
            break
    assert info["success"]
    env.close()


def _expert_push(cfg: SimConfig, seed: int) -> tuple[list[float], list[float], list[bool], bool]:
    """One push episode of the expert: its rewards, the cube's distances to the zone, task successes, and
    whether the episode ended terminated."""
    env = make_env(cfg)
    policy = ScriptedPolicy(env)
    obs, _ = env.reset(seed=seed)
    rewards, distances, successes, terminated = [], [], [], False
    for _ in range(env.unwrapped.max_episode_steps):
        obs, reward, terminated, truncated, info = env.step(policy.act(obs))
        rewards.append(reward)
        distances.append(env.unwrapped.task.goal_distance(env.unwrapped.sim))
        successes.append(info["success"])
        if terminated or truncated:
            break
    env.close()
    return rewards, distances, successes, terminated


def test_reward_radius_pays_only_deep_in_the_zone_while_success_keeps_the_tasks_radius() -> None:
    base = SimConfig(task="push", cameras=(), action_mode="ee_delta", terminate_on_success=False)
    # seed 1000: the expert's cube passes 3 cm and ends inside 2 cm (checked below, so a new scene fails loudly)
    plain, distances, successes, _ = _expert_push(base, seed=1000)
    tight, tight_distances, tight_successes, _ = _expert_push(replace(base, reward_radius_m=0.02), seed=1000)
    assert (
        tight_distances == distances and tight_successes == successes
    )  # the env's physics and success unchanged
    assert plain == [float(s) for s in successes]
    assert tight == [float(s and d < 0.02) for s, d in zip(successes, distances)]
    assert any(
        s and d >= 0.02 for s, d in zip(successes, distances)
    )  # a success the tight reward does not pay
    assert sum(tight) > 0

    # Terminating on success follows the reward: the episode goes on past the task's 3 cm.
    shaped = replace(base, terminate_on_success=True, reward="shaped", reward_radius_m=0.02)
    rewards, distances, successes, terminated = _expert_push(shaped, seed=1000)
    assert terminated and rewards[-1] == 1.0 and distances[-1] < 0.02
    assert all(r < 0.0 for r in rewards[:-1])
    assert sum(successes[:-1]) > 0  # task successes before the end, not paid and not ending it


@pytest.mark.parametrize(
    ("cfg", "message"),
    [
        (SimConfig(task="lift", cameras=(), reward_radius_m=0.02), "not 'lift'"),
        (SimConfig(task="push", cameras=(), reward_radius_m=0.035), "at least that wide"),
        (SimConfig(task="push", cameras=(), reward_radius_m=0.0), "positive distance"),
        (SimConfig(task="push", cameras=(), reward_radius_m=float("nan")), "positive distance"),
        (SimConfig(suite="robosuite", task="Lift", cameras=(), reward_radius_m=0.02), "so101 suite"),
    ],
)
def test_reward_radius_refuses_what_cannot_apply(cfg: SimConfig, message: str) -> None:
    with pytest.raises(SimError, match=message):
        make_env(cfg)


def test_shaped_reward_follows_progress_and_pays_most_on_success() -> None:
    env = make_env(SimConfig(task="reach", cameras=(), reward="shaped", max_episode_steps=30))
    policy = ScriptedPolicy(env)
    obs, info = env.reset(seed=5)
    start_progress = info["progress"]
    rewards, progress = [], []
    for _ in range(30):
        obs, reward, terminated, truncated, info = env.step(policy.act(obs))
        rewards.append(reward)
        progress.append(info["progress"])
        if terminated or truncated:
            break
    assert info["success"] and rewards[-1] == 1.0
    assert all(-1.0 <= r < 0.0 for r in rewards[:-1])
    assert all(r == pytest.approx(p - 1.0) for r, p in zip(rewards[:-1], progress[:-1]))
    assert max(progress) == 1.0 > start_progress
    env.close()


def test_state_vector_names_goal_and_tool_positions() -> None:
    env = make_env(SimConfig(task="reach", cameras=()))
    obs, _ = env.reset(seed=2)
    state = dict(zip(STATE_NAMES, obs["state"]))
    sim, goal = env.unwrapped.sim, env.unwrapped.task.goal()
    np.testing.assert_allclose(
        [state["tcp_x_m"], state["tcp_y_m"], state["tcp_z_m"]], sim.tcp_position(), atol=1e-6
    )
    np.testing.assert_allclose([state["goal_x_m"], state["goal_y_m"], state["goal_z_m"]], goal, atol=1e-6)
    np.testing.assert_allclose(state["goal_minus_ref_x_m"], goal[0] - sim.tcp_position()[0], atol=1e-6)
    assert obs["gripper.pos"][0] == pytest.approx(100.0, abs=0.5)
    env.close()


def test_ee_delta_moves_the_tool_centre_point_in_a_straight_line() -> None:
    env = make_env(SimConfig(task="reach", cameras=(), action_mode="ee_delta", max_delta_m=0.02))
    assert env.action_space.shape == (5,)
    env.reset(seed=0)
    sim = env.unwrapped.sim
    start = sim.tcp_position()
    for _ in range(5):
        env.step(np.array([0.0, 1.0, 0.0, 0.0, 0.0], dtype=np.float32))
    moved = sim.tcp_position() - start
    assert moved[1] == pytest.approx(0.1, abs=0.01)  # 5 steps x 2 cm along +y
    assert abs(moved[0]) < 0.01 and abs(moved[2]) < 0.01
    env.close()


def test_truncation_after_max_episode_steps() -> None:
    env = make_env(SimConfig(task="push", cameras=(), max_episode_steps=4, action_mode="delta"))
    env.reset(seed=0)
    flags = [env.step(np.zeros(6, dtype=np.float32))[3] for _ in range(4)]
    assert flags == [False, False, False, True]
    env.close()


def test_only_requested_cameras_are_rendered() -> None:
    env = make_env(SimConfig(task="lift", cameras=()))
    env.reset(seed=0)
    env.step(env.action_space.sample())
    assert env.unwrapped.sim._renderers == {}  # state-only: no OpenGL context at all
    env.close()
    env = make_env(SimConfig(task="lift", cameras=("wrist",), image_size=32))
    obs, _ = env.reset(seed=0)
    assert [key for key in obs if key.startswith("pixels/")] == ["pixels/wrist"]
    assert list(env.unwrapped.sim._renderers) == [32]  # one renderer, reused for every step
    env.close()


def test_shadows_are_off_by_default_and_can_be_turned_on() -> None:
    import mujoco

    for shadows in (False, True):
        env = make_env(SimConfig(task="reach", cameras=("front",), image_size=32, shadows=shadows))
        env.reset(seed=0)
        renderer = env.unwrapped.sim._renderers[32]._renderer
        assert renderer.scene.flags[mujoco.mjtRndFlag.mjRND_SHADOW] == int(shadows)
        env.close()


def test_render_fps_is_the_control_rate() -> None:
    env = make_env(SimConfig(task="reach", cameras=(), control_hz=25.0))
    assert env.metadata["render_fps"] == 25.0
    env.close()


@pytest.mark.parametrize("bound", [0.0, 16.0])
def test_joint_delta_targets_do_not_wind_up_against_the_table(bound: float) -> None:
    """``max_windup_deg``: pressing the jaw into the table does not store a command the policy cannot see, so
    the first command away from the table moves the arm at once."""
    from sim.so101.env import JOINT_NAMES

    env = make_env(SimConfig(task="lift", cameras=(), action_mode="delta", max_windup_deg=bound))
    env.reset(seed=0)
    sim = env.unwrapped.sim
    down, up = np.array([0, 1, 1, 0, 0, 0], np.float32), np.array([0, -1, -1, 0, 0, 0], np.float32)
    for _ in range(30):
        env.step(down)
    measured = np.array([sim.joint_positions()[n] for n in JOINT_NAMES])
    gap = env.unwrapped.joint_targets_array() - measured
    low = sim.tcp_position()[2]
    for _ in range(4):
        env.step(up)
    risen = sim.tcp_position()[2] - low
    if bound:
        assert np.all(np.abs(gap[:5]) <= bound + 1e-3)
        assert risen > 0.02  # measured: 56 mm after 4 steps
    else:  # unbounded (runs before the bound existed): shoulder and elbow wound up far past the joints
        assert gap[1] > 40 and gap[2] > 40
        assert risen < 0.002
    env.close()
