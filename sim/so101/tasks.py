"""SO-101 twin tasks: reach, lift, push, place. Each randomises its scene and scores the current state.

Every task reports ``success`` and a privileged ``progress`` in [0, 1] (staged: approach, grasp, lift,
transport), which the env turns into the shaped reward and which the oracle scorer reads.

A task owns everything about itself, and the rest of the project derives from this table:

- ``description``: the one sentence that becomes the env's ``task_description``, is stored with
  recordings, and is the one source of VLM prompts and CLIP captions (``vlm.prompts.scorer_prompt``;
  the goal phrase those embed is the description itself, ``vlm.prompts.goal_phrase``);
- ``scripted_strategy``: which of ``sim.so101.scripted.STRATEGIES`` the privileged expert runs;
- ``default_max_steps``, ``reset`` (scene randomisation) and ``evaluate`` (success and progress);
- its name in ``TASKS``, which gives the CLI's task choices (``TaskName``).

Adding a twin task: write its class (here or in its own module under ``sim/so101/``), add one entry to
``TASKS``, and a test that runs its scripted expert to success (see docs/ARCHITECTURE.md).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Literal, Protocol

import numpy as np

from sim.so101 import geometry as g
from sim.so101.arm import SO101Sim
from sim.so101.kinematics import inverse_kinematics, solve_ik
from sim.so101.scene import BIN_INNER_HALF_M, BIN_WALL_HEIGHT_M, PARKED_POS
from sim.so101.scripted import PUSH_APPROACH_Z_M, PUSH_BEHIND_M, PUSH_Z_M

REACH_RADIUS_M = 0.04
"""reach: success when the tool centre point is this close to the target."""
REACH_START_CLEARANCE_M = 0.08
"""reach: targets are drawn at least this far from the home tool point (twice the success radius, more than
the home pose's noise moves the tool), so no episode starts solved (7.5% of seeds did before)."""
LIFT_HEIGHT_M = 0.04
"""lift: success when the grasped cube's bottom is this high above the table."""
PUSH_RADIUS_M = 0.03
"""push: success when the cube centre is this close (in the table plane) to the zone centre."""
PUSH_DISTANCE_M = (0.07, 0.11)
"""push: how far the zone's centre is from the cube's at the start (uniform; at difficulty d, the first d of it)."""
SUCCESS_RADIUS_M = {"reach": REACH_RADIUS_M, "push": PUSH_RADIUS_M}
"""The tasks whose success is a distance to their goal (``goal_distance``) under a radius, and that radius:
the ones ``SimConfig.reward_radius_m`` can tighten for the reward."""


@dataclass(frozen=True)
class TaskStatus:
    """How the episode is going."""

    success: bool
    progress: float
    """Privileged task progress in [0, 1] (1 on success)."""


class Task(Protocol):
    """A task on the twin scene: randomise, then judge each state."""

    description: str
    """One sentence saying what the robot should do (the source of every prompt and caption)."""
    default_max_steps: int
    """Steps before truncation when the config gives none."""
    scripted_strategy: str
    """The scripted expert's strategy for this task, a key of ``sim.so101.scripted.STRATEGIES``."""

    def reset(self, sim: SO101Sim, rng: np.random.Generator) -> None:
        """Place the task's objects (and park the others) for a new episode. A task may also take a keyword
        ``difficulty`` in [0, 1] that narrows its placements to their easiest share (a training curriculum, the
        env's reset option; 1, the task's own ranges, is never passed); push does."""
        ...

    def goal(self) -> np.ndarray:
        """The episode's goal point (metres): target, lift point, zone or bin centre."""
        ...

    def goal_reference(self, sim: SO101Sim) -> np.ndarray:
        """The point that must reach the goal: the tool centre point (reach) or the cube."""
        ...

    def evaluate(self, sim: SO101Sim) -> TaskStatus:
        """Judge the current state."""
        ...


def _clip01(value: float) -> float:
    return float(min(max(value, 0.0), 1.0))


def _approach(sim: SO101Sim) -> float:
    """1 when the tool centre point is at the cube, falling linearly to 0 at 20 cm."""
    return _clip01(1.0 - float(np.linalg.norm(sim.tcp_position() - sim.cube_position())) / 0.2)


def _grasped(sim: SO101Sim) -> bool:
    left, right = sim.fingers_touch_cube()
    return left and right


def _cube_height(sim: SO101Sim) -> float:
    return float(sim.cube_position()[2] - g.CUBE_HALF_M)


def _place_cube(
    sim: SO101Sim, rng: np.random.Generator, x: tuple[float, float], y: tuple[float, float]
) -> None:
    xy = [rng.uniform(*x), rng.uniform(*y)]
    sim.set_cube_pose(np.array([*xy, g.CUBE_HALF_M]), rng.uniform(-math.pi / 4, math.pi / 4))


def _park(sim: SO101Sim, *names: str) -> None:
    for i, name in enumerate(names):
        sim.set_marker(name, np.array(PARKED_POS) + np.array([0.0, 0.1 * (i + 1), 0.0]))


class ReachTask:
    """Move the gripper to a green marker in the air."""

    description = "Move the robot gripper to the small green ball."
    default_max_steps = 50
    scripted_strategy = "move_to_goal"

    def __init__(self) -> None:
        self._target = np.zeros(3)

    def reset(self, sim: SO101Sim, rng: np.random.Generator) -> None:
        sim.park_cube()
        _park(sim, "zone", "bin")
        while True:
            target = rng.uniform([0.12, -0.13, 0.03], [0.26, 0.13, 0.17])
            far = np.linalg.norm(target - np.array(g.HOME_TCP)) >= REACH_START_CLEARANCE_M
            if far and inverse_kinematics(target, pitch_deg=60.0) is not None:
                break
        self._target = target
        sim.set_marker("target", target)

    def goal(self) -> np.ndarray:
        return self._target

    def goal_reference(self, sim: SO101Sim) -> np.ndarray:
        return sim.tcp_position()

    def goal_distance(self, sim: SO101Sim) -> float:
        """How far the tool centre point is from the target (metres)."""
        return float(np.linalg.norm(sim.tcp_position() - self._target))

    def evaluate(self, sim: SO101Sim) -> TaskStatus:
        distance = self.goal_distance(sim)
        if distance < REACH_RADIUS_M:
            return TaskStatus(True, 1.0)
        return TaskStatus(False, _clip01(1.0 - (distance - REACH_RADIUS_M) / 0.25))


class LiftTask:
    """Grasp the cube and lift it."""

    description = "Pick up the red cube and lift it off the table."
    default_max_steps = 100
    scripted_strategy = "pick_and_hold"

    def __init__(self) -> None:
        self._goal = np.zeros(3)

    def reset(self, sim: SO101Sim, rng: np.random.Generator) -> None:
        _park(sim, "target", "zone", "bin")
        _place_cube(sim, rng, (0.14, 0.24), (-0.1, 0.1))
        self._goal = sim.cube_position() + np.array([0.0, 0.0, LIFT_HEIGHT_M + 0.01])

    def goal(self) -> np.ndarray:
        return self._goal

    def goal_reference(self, sim: SO101Sim) -> np.ndarray:
        return sim.cube_position()

    def evaluate(self, sim: SO101Sim) -> TaskStatus:
        grasped = _grasped(sim)
        height = _cube_height(sim)
        if grasped and height >= LIFT_HEIGHT_M:
            return TaskStatus(True, 1.0)
        lift = _clip01(height / LIFT_HEIGHT_M) if grasped else 0.0
        return TaskStatus(False, min(0.3 * _approach(sim) + 0.2 * grasped + 0.5 * lift, 0.99))


class PushTask:
    """Push the cube into a blue zone on the table."""

    description = "Push the red cube onto the blue circle on the table."
    default_max_steps = 100
    scripted_strategy = "push"

    def __init__(self) -> None:
        self._zone = np.zeros(3)

    def reset(self, sim: SO101Sim, rng: np.random.Generator, difficulty: float = 1.0) -> None:
        _park(sim, "target", "bin")
        _place_cube(sim, rng, (0.15, 0.21), (-0.07, 0.07))
        cube = sim.cube_position()
        while True:
            angle = rng.uniform(-math.pi, math.pi)
            reach = PUSH_DISTANCE_M[0] + difficulty * rng.uniform(
                0.0, PUSH_DISTANCE_M[1] - PUSH_DISTANCE_M[0]
            )
            zone = cube + reach * np.array([math.cos(angle), math.sin(angle), 0.0])
            radial = cube[:2] / np.linalg.norm(cube[:2])
            away = float(np.dot(zone[:2] - cube[:2], radial)) / np.linalg.norm(zone[:2] - cube[:2])
            # Pushes toward the base would need the gripper to pull: keep goals outward or sideways.
            if 0.12 <= zone[0] <= 0.26 and abs(zone[1]) <= 0.13 and away > -0.2 and _pushable(cube, zone):
                break
        self._zone = np.array([zone[0], zone[1], 0.0])
        sim.set_marker("zone", self._zone)

    def goal(self) -> np.ndarray:
        return self._zone

    def goal_reference(self, sim: SO101Sim) -> np.ndarray:
        return sim.cube_position()

    def goal_distance(self, sim: SO101Sim) -> float:
        """How far the cube's centre is from the zone's, in the table plane (metres)."""
        return float(np.linalg.norm(sim.cube_position()[:2] - self._zone[:2]))

    def evaluate(self, sim: SO101Sim) -> TaskStatus:
        distance = self.goal_distance(sim)
        if distance < PUSH_RADIUS_M and _cube_height(sim) < 0.01:
            return TaskStatus(True, 1.0)
        return TaskStatus(False, min(0.3 * _approach(sim) + 0.7 * _clip01(1.0 - distance / 0.15), 0.99))


def _pushable(cube: np.ndarray, zone: np.ndarray) -> bool:
    """Whether the arm reaches every point a straight push of ``cube`` onto ``zone`` needs, with the fingers
    down behind the cube: above and behind it, and behind the cube's centre all along the line to the zone."""
    direction = (zone - cube) * np.array([1.0, 1.0, 0.0])
    direction /= np.linalg.norm(direction)
    behind = cube - direction * PUSH_BEHIND_M
    points = [np.array([behind[0], behind[1], PUSH_APPROACH_Z_M])]
    for share in np.linspace(0.0, 1.0, 6):
        centre = cube + share * (zone - cube)
        fingers = centre - direction * (g.CUBE_HALF_M + 0.008)
        points.append(np.array([fingers[0], fingers[1], PUSH_Z_M]))
    points.append(np.array([behind[0], behind[1], PUSH_Z_M]))
    return all(solve_ik(p) is not None for p in points)


class PlaceTask:
    """Pick the cube up and put it in the bin."""

    description = "Pick up the red cube and put it in the blue bin."
    default_max_steps = 150
    scripted_strategy = "pick_and_place"

    def __init__(self) -> None:
        self._bin = np.zeros(3)

    def reset(self, sim: SO101Sim, rng: np.random.Generator) -> None:
        _park(sim, "target", "zone")
        side = 1.0 if rng.uniform() < 0.5 else -1.0
        cube_y = (0.02, 0.08) if side > 0 else (-0.08, -0.02)
        _place_cube(sim, rng, (0.15, 0.22), cube_y)
        self._bin = np.array([rng.uniform(0.15, 0.21), -side * rng.uniform(0.09, 0.12), 0.0])
        sim.set_marker("bin", self._bin)

    def goal(self) -> np.ndarray:
        return self._bin

    def goal_reference(self, sim: SO101Sim) -> np.ndarray:
        return sim.cube_position()

    def evaluate(self, sim: SO101Sim) -> TaskStatus:
        cube = sim.cube_position()
        offset = np.abs(cube[:2] - self._bin[:2])
        inside = bool(np.all(offset < BIN_INNER_HALF_M)) and _cube_height(sim) < BIN_WALL_HEIGHT_M
        if inside and _cube_height(sim) < 0.01 and not _grasped(sim):  # resting on the bin's floor
            return TaskStatus(True, 1.0)
        grasped = _grasped(sim)
        lift = _clip01(_cube_height(sim) / LIFT_HEIGHT_M) if grasped else 0.0
        transport = _clip01(1.0 - float(np.linalg.norm(offset)) / 0.2)
        progress = 0.2 * _approach(sim) + 0.15 * grasped + 0.15 * lift + 0.5 * transport * (grasped or inside)
        return TaskStatus(False, min(progress, 0.99))


TASKS: dict[str, Callable[[], Task]] = {
    "reach": ReachTask,
    "lift": LiftTask,
    "push": PushTask,
    "place": PlaceTask,
}
"""SO-101 task name -> task class (explicit factory, no registration by import). The one list of twin
tasks: the CLI's choices, the scripted expert and the tests all read it."""

if TYPE_CHECKING:
    TaskName = str
else:
    TaskName = Literal[tuple(TASKS)]
"""A twin task name as a CLI choice (tyro lists ``TASKS``' keys); a plain ``str`` for the type checker."""
