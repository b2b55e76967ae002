"""robosuite and Meta-World behind the Env contract: spaces, determinism, upright images, success mapping.

These build real robosuite/Meta-World envs (seconds each), so they use small images and few steps.
"""

from __future__ import annotations

from collections.abc import Iterator

import mujoco
import numpy as np
import pytest

from robot.contract import check_env
from sim import SimConfig, make_env

pytestmark = pytest.mark.slow


def _red_row(frame: np.ndarray) -> float:
    red = (frame[..., 0].astype(int) - np.maximum(frame[..., 1], frame[..., 2]) > 60) & (frame[..., 0] > 90)
    assert red.sum() > 2, "the red object should be visible"
    return float(np.nonzero(red)[0].mean())


@pytest.fixture(scope="module")
def robosuite_lift() -> Iterator:
    env = make_env(SimConfig(suite="robosuite", task="Lift", cameras=("agentview",), image_size=64))
    yield env
    env.close()


def test_robosuite_lift_keeps_the_contract(robosuite_lift) -> None:
    spec = check_env(robosuite_lift, n_steps=3)
    assert spec.cameras == ("agentview",) and spec.action_shape == (7,)
    assert robosuite_lift.metadata["render_fps"] == 20.0  # the control rate (video writers read it)
    assert robosuite_lift.unwrapped.raw_env.sim.model.light_castshadow.sum() == 0  # shadows off by default


def test_robosuite_images_are_upright_and_success_is_mapped(robosuite_lift) -> None:
    env = robosuite_lift
    obs, info = env.reset(seed=0)
    assert not info["success"] and 0.0 <= info["progress"] < 1.0
    before = _red_row(obs["pixels/agentview"])
    raw = env.unwrapped.raw_env
    qpos = raw.sim.data.get_joint_qpos("cube_joint0").copy()
    qpos[2] += 0.15  # well above robosuite's lift threshold (4 cm over the table)
    raw.sim.data.set_joint_qpos("cube_joint0", qpos)
    raw.sim.forward()
    obs, reward, terminated, _, info = env.step(np.zeros(7, dtype=np.float32))
    assert _red_row(obs["pixels/agentview"]) < before - 2  # raised object moves towards row 0
    assert info["success"] and info["progress"] == 1.0 and terminated and reward == 1.0


@pytest.mark.parametrize("task", ["Stack", "Door", "PickPlaceCan"])
def test_other_robosuite_tasks_keep_the_contract(task: str) -> None:
    env = make_env(SimConfig(suite="robosuite", task=task, cameras=(), reward="shaped"))
    spec = check_env(env, n_steps=2)
    assert spec.action_shape == (7,) and spec.state_dim > 0
    env.reset(seed=0)
    _, reward, _, _, info = env.step(np.zeros(7, dtype=np.float32))
    assert not info["success"] and reward == pytest.approx(
        info["progress"] - 1.0
    )  # shaped: negative until success
    env.close()


@pytest.mark.parametrize("task", ["push-v3", "door-open-v3"])
def test_metaworld_state_only_tasks_keep_the_contract(task: str) -> None:
    env = make_env(SimConfig(suite="metaworld", task=task, cameras=()))
    spec = check_env(env, n_steps=3)
    assert spec.state_dim == 39 and spec.action_shape == (4,)
    assert env.metadata["render_fps"] == 80  # Meta-World's fixed rate
    env.close()


def _object_row(frame: np.ndarray, without_object: np.ndarray) -> float:
    changed = np.abs(frame.astype(int) - without_object.astype(int)).sum(axis=-1) > 30
    assert changed.sum() > 2, "the object should be visible"
    return float(np.nonzero(changed)[0].mean())


def test_metaworld_pixels_are_upright_for_rotated_and_plain_cameras() -> None:
    cameras = ("corner", "corner2", "topview")
    env = make_env(SimConfig(suite="metaworld", task="pick-place-v3", cameras=cameras, image_size=96))
    check_env(env, n_steps=2)
    env.reset(seed=1)
    raw = env.unwrapped.raw_env
    start = raw._get_pos_objects().copy()

    def frames_with_object_at(offset: list[float]) -> dict[str, np.ndarray]:
        raw._set_obj_xyz(start + np.array(offset))
        mujoco.mj_forward(raw.model, raw.data)
        return env.unwrapped._observation(raw._get_obs())

    hidden = frames_with_object_at([0.0, 0.0, -1.0])  # under the table
    low, high = frames_with_object_at([0.0, 0.0, 0.0]), frames_with_object_at([0.0, 0.0, 0.12])
    for cam in ("corner", "corner2"):  # oblique side views (corner3 looks almost straight down)
        key = f"pixels/{cam}"
        assert _object_row(high[key], hidden[key]) < _object_row(low[key], hidden[key]) - 2, cam
    # Top view: the robot stands at the bottom edge (small y), the object lies further from it.
    low_y = frames_with_object_at([0.0, -0.1, 0.0])["pixels/topview"]
    far_y = frames_with_object_at([0.0, 0.1, 0.0])["pixels/topview"]
    hidden_top = hidden["pixels/topview"]
    assert _object_row(far_y, hidden_top) < _object_row(low_y, hidden_top) - 2
    env.close()


def test_metaworld_expert_reaches_success() -> None:
    from metaworld.policies.sawyer_reach_v3_policy import SawyerReachV3Policy

    env = make_env(SimConfig(suite="metaworld", task="reach-v3", cameras=(), max_episode_steps=150))
    policy = SawyerReachV3Policy()
    obs, info = env.reset(seed=0)
    assert not info["success"]
    for _ in range(150):
        obs, reward, terminated, truncated, info = env.step(
            policy.get_action(obs["state"]).astype(np.float32)
        )
        if terminated or truncated:
            break
    assert info["success"] and terminated and reward == 1.0 and info["progress"] == 1.0
    env.close()
