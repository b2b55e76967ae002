"""The twin's success definitions at their thresholds (issue #36, item 7: lift success at half the lift height,
lift success without a grasp and place success with the cube still grasped all survived the task tests).

Each task is evaluated on a stand-in for ``SO101Sim`` whose cube, tool centre point and finger contacts the
test sets, so every threshold is probed exactly; one test in the real twin checks that a cube in the air
without a grasp (flicked, not lifted) is no success.
"""

from __future__ import annotations

import numpy as np
import pytest

from sim import SimConfig, make_env
from sim.so101 import geometry as g
from sim.so101.scene import BIN_INNER_HALF_M, BIN_WALL_HEIGHT_M
from sim.so101.tasks import LIFT_HEIGHT_M, REACH_RADIUS_M, TASKS, Task

EPS_M = 1e-4


class FakeSim:
    """What a task reads and writes of ``SO101Sim``: the cube, the tool centre point, the finger contacts."""

    def __init__(self) -> None:
        self.cube = np.array([0.18, 0.0, g.CUBE_HALF_M])
        self.tcp = np.array([0.0, 0.0, 0.3])
        self.touch = (False, False)

    def park_cube(self) -> None:
        self.cube = np.array([0.0, 0.5, g.CUBE_HALF_M])

    def set_marker(self, name: str, xyz: np.ndarray) -> None:
        pass

    def set_cube_pose(self, xyz: np.ndarray, yaw_rad: float) -> None:
        self.cube = np.asarray(xyz, dtype=float).copy()

    def cube_position(self) -> np.ndarray:
        return self.cube.copy()

    def tcp_position(self) -> np.ndarray:
        return self.tcp.copy()

    def fingers_touch_cube(self) -> tuple[bool, bool]:
        return self.touch


def task_on_fake(name: str, seed: int = 0) -> tuple[Task, FakeSim]:
    task, sim = TASKS[name](), FakeSim()
    task.reset(sim, np.random.default_rng(seed))  # type: ignore[arg-type]
    return task, sim


def success(
    task: Task, sim: FakeSim, cube_height_m: float | None = None, grasped: bool | None = None
) -> bool:
    if cube_height_m is not None:
        sim.cube[2] = g.CUBE_HALF_M + cube_height_m
    if grasped is not None:
        sim.touch = (grasped, grasped)
    status = task.evaluate(sim)  # type: ignore[arg-type]
    assert 0.0 <= status.progress <= 1.0 and (status.progress == 1.0) == status.success
    return status.success


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_lift_needs_the_full_height_and_a_grasp(seed: int) -> None:
    task, sim = task_on_fake("lift", seed)
    sim.tcp = sim.cube.copy()
    assert success(task, sim, LIFT_HEIGHT_M + EPS_M, grasped=True)
    assert success(task, sim, 3 * LIFT_HEIGHT_M, grasped=True)
    for fraction in (0.0, 0.5, 0.6, 0.9, 0.99):
        assert not success(task, sim, fraction * LIFT_HEIGHT_M, grasped=True), fraction
    for height in (LIFT_HEIGHT_M + EPS_M, 2 * LIFT_HEIGHT_M, 0.2):  # flicked or thrown, not lifted
        assert not success(task, sim, height, grasped=False), height
    sim.touch = (True, False)  # one finger is no grasp
    assert not success(task, sim, 2 * LIFT_HEIGHT_M)


def test_lift_progress_grows_with_height_only_while_grasped() -> None:
    task, sim = task_on_fake("lift")
    sim.tcp = sim.cube.copy()
    heights = (0.0, 0.01, 0.03)
    grasped = []
    for h in heights:
        success(task, sim, h, grasped=True)
        grasped.append(task.evaluate(sim).progress)  # type: ignore[arg-type]
    assert grasped[0] < grasped[1] < grasped[2] < 1.0
    success(task, sim, 0.03, grasped=False)
    assert task.evaluate(sim).progress < grasped[0]  # type: ignore[arg-type]


@pytest.mark.parametrize("seed", [0, 1, 2, 3])
def test_place_needs_the_cube_released_on_the_bins_floor(seed: int) -> None:
    task, sim = task_on_fake("place", seed)
    bin_xy = task.goal()[:2]
    sim.cube[:2] = bin_xy
    assert success(task, sim, 0.0, grasped=False)
    assert not success(task, sim, 0.0, grasped=True)  # still in the gripper
    sim.touch = (True, False)  # one finger still touching: released
    assert success(task, sim, 0.0)
    assert not success(task, sim, 0.02, grasped=False)  # not on the floor
    assert not success(task, sim, BIN_WALL_HEIGHT_M + 0.01, grasped=False)
    for direction in ((1, 0), (0, 1), (-1, 0), (0, -1)):
        sim.cube[:2] = bin_xy + (BIN_INNER_HALF_M - EPS_M) * np.array(direction)
        assert success(task, sim, 0.0, grasped=False), direction
        sim.cube[:2] = bin_xy + (BIN_INNER_HALF_M + EPS_M) * np.array(direction)
        assert not success(task, sim, 0.0, grasped=False), direction


@pytest.mark.parametrize("seed", [0, 1])
def test_reach_succeeds_inside_its_radius_only(seed: int) -> None:
    task, sim = task_on_fake("reach", seed)
    target = task.goal()
    for direction in np.eye(3):
        sim.tcp = target + (REACH_RADIUS_M - EPS_M) * direction
        assert success(task, sim)
        sim.tcp = target + (REACH_RADIUS_M + EPS_M) * direction
        assert not success(task, sim)


def test_a_cube_in_the_air_without_a_grasp_is_no_lift_in_the_twin() -> None:
    env = make_env(SimConfig(task="lift", cameras=(), action_mode="delta"))
    env.reset(seed=0)
    twin = env.unwrapped
    cube = twin.sim.cube_position()
    twin.sim.set_cube_pose(np.array([cube[0], cube[1], g.CUBE_HALF_M + 2 * LIFT_HEIGHT_M]), 0.0)
    assert twin.sim.fingers_touch_cube() == (False, False)
    assert not twin.task.evaluate(twin.sim).success
    env.close()
