"""Hand-written (privileged, IK-based) expert policies for the SO-101 twin tasks.

Each task names its strategy (``Task.scripted_strategy``, one of ``STRATEGIES``); this module never
branches on task names, so a new task that moves like an existing one needs no change here.

They read the simulator state directly, so they serve as demonstrations, as the proof in the tests that
each task's success is reachable, and as a sanity baseline for learned policies.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from robot.contract import JOINT_NAMES
from sim.errors import SimError
from sim.so101 import geometry as g
from sim.so101 import kinematics

_OPEN, _CLOSED = 100.0, 0.0
_MAX_STEP_M = 0.025
PUSH_Z_M = 0.035
"""Tool centre height while pushing: the finger tips pass just above the table."""
PUSH_BEHIND_M = g.CUBE_HALF_M + 0.03
"""How far behind the cube's centre (seen from the goal) the closed fingers come down before a push."""
PUSH_APPROACH_Z_M = 0.09
"""Tool centre height of the approach above the point behind the cube (clear of the cube's top)."""
_PUSH_STEP_M = 0.015
"""Tool centre move per step while pushing: slow enough that the cube does not slide on past the goal
(at the approach speed, 0.5 m/s, it was flung 5-10 cm beyond)."""
_STOP_AT_SUCCESS = frozenset({"push"})
"""Strategies that stop acting once the task holds (going on would undo the success)."""
_PUSH_MAX_LATERAL_M = 0.012
"""The cube has turned off the pushing line by this much (sideways of the fingers): lift, go behind again."""
_PUSH_DONE_M = 0.01
"""The push ends with the cube's centre this close to the zone's (PUSH_RADIUS_M is 3 cm). An expert that stopped at
the first step inside left the cube 2.1 cm out at the median (64% beyond 2 cm, seeds 0-49 and 1000-1049, joint
deltas), and push policies that copied it stopped at the zone's edge; this one leaves it 1.6 cm out (39%)."""
_PUSH_SLOWING = 0.5
"""Near the zone the fingers move this share of the cube's remaining distance per step (at least
``_PUSH_MIN_STEP_M``), so the cube stops where it is pushed instead of sliding on (without it: 1.8 cm at the
median, and 91% instead of 96% success with end-effector actions)."""
_PUSH_MIN_STEP_M = 0.004
_PUSH_FLAT_M = 0.004
"""The cube's centre this far above its resting height: it is tipping (the fingers ride onto it), stop pushing."""


def solve_ik(xyz: np.ndarray) -> tuple[dict[str, float], float]:
    """IK with the steepest feasible gripper pitch (pointing down when possible); returns (joints, pitch)."""
    solution = kinematics.solve_ik(xyz)
    if solution is None:
        raise SimError(f"scripted policy: {np.round(xyz, 3).tolist()} is out of the arm's reach")
    return solution


def _grasp_roll_deg(pan_deg: float, cube_yaw_rad: float) -> float:
    """wrist_roll that turns the finger axis onto a pair of cube faces (nearest of the four options)."""
    # With the gripper pointing down, the finger axis heading is pan + 90 deg - roll.
    roll = pan_deg + 90.0 - math.degrees(cube_yaw_rad)
    return (roll + 45.0) % 90.0 - 45.0


STRATEGIES: dict[str, str] = {
    "move_to_goal": "move the tool centre point straight to the task's goal point, gripper open",
    "pick_and_hold": "approach above the cube, descend, close, lift straight up and hold",
    "pick_and_place": "pick the cube as above, carry it over the goal point, lower it and release",
    "push": "go behind the cube (seen from the goal), lower the closed fingers and push it to the goal",
}
"""The expert's strategies by name; each twin task names one as its ``scripted_strategy``."""


class ScriptedPolicy:
    """A phase machine over waypoints: approach above the cube, descend, close, carry, release."""

    def __init__(self, env: Any) -> None:
        self.env = env.unwrapped
        self.task = self.env.cfg.task
        self.strategy: str = self.env.task.scripted_strategy
        if self.strategy not in STRATEGIES:
            raise SimError(
                f"task {self.task!r}: scripted_strategy {self.strategy!r} unknown; "
                f"expected one of {sorted(STRATEGIES)}"
            )
        self.reset()

    def reset(self) -> None:
        """Forget the phase (call after ``env.reset``)."""
        self.phase = 0
        self.phase_steps = 0
        self._stopped = False
        self._last_remaining = math.inf

    def _next_phase(self) -> None:
        self.phase += 1
        self.phase_steps = 0

    def _targets(
        self, tcp_goal: np.ndarray, gripper: float, roll_deg: float, max_step_m: float = _MAX_STEP_M
    ) -> np.ndarray:
        # Straight-line moves in small steps: a jump in joint space sweeps the fingers through the cube.
        tcp = self.env.sim.tcp_position()
        offset = np.asarray(tcp_goal) - tcp
        distance = float(np.linalg.norm(offset))
        if distance > max_step_m:
            offset = offset * (max_step_m / distance)
        # A step that leaves the arm's reach is shortened; if none fits, the arm holds its pose (an expert
        # that raises would end the run that collects demonstrations).
        for share in (1.0, 0.5, 0.25):
            solution = kinematics.solve_ik(tcp + offset * share)
            if solution is not None:
                break
        else:
            return self._current_targets(gripper, roll_deg)
        joints = solution[0]
        joints["wrist_roll"] = roll_deg
        joints["gripper"] = gripper
        return np.array([joints[n] for n in JOINT_NAMES], dtype=np.float32)

    def _current_targets(self, gripper: float | None = None, roll_deg: float | None = None) -> np.ndarray:
        targets = self.env.joint_targets_array()
        if roll_deg is not None:
            targets[JOINT_NAMES.index("wrist_roll")] = roll_deg
        if gripper is not None:
            targets[JOINT_NAMES.index("gripper")] = gripper
        return targets

    def act(self, obs: dict[str, np.ndarray] | None = None) -> np.ndarray:
        """The next action in the env's action mode (``obs`` is unused: the policy is privileged).

        Once a push holds, the expert pushes on toward the zone's centre only while the push goes cleanly, then
        stops acting (it keeps its last targets), so an episode that does not end at success also ends in success:
        it does not push on past the goal (``_holds``). The other strategies already hold
        their success by going on (holding the cube up, the open gripper over the bin, the tool at the goal),
        and go on: joint-delta reach demonstrations that were 80% zero actions after the success made IQL's
        offline reach policy fail (30% success against BC's 20% in tests/vlmrl/test_offline_learning.py)."""
        sim, goal = self.env.sim, np.asarray(self.env.task.goal())
        if self.strategy in _STOP_AT_SUCCESS and self._holds(sim, goal):
            return self._to_action(self._current_targets())
        tcp, cube = sim.tcp_position(), sim.cube_position()
        self.phase_steps += 1
        if self.strategy == "move_to_goal":
            target = self._targets(goal, _OPEN, 0.0)
        elif self.strategy == "push":
            target = self._push(tcp, cube, goal)
        else:
            target = self._pick(tcp, cube, goal, sim, place=self.strategy == "pick_and_place")
        return self._to_action(target)

    def _holds(self, sim: Any, goal: np.ndarray) -> bool:
        """Whether to stop acting: the task holds, and a push is done. A push that holds goes on toward the zone's
        centre only while it goes cleanly (on the line, the cube flat on the table and nearing the centre): once
        it stops, it stays stopped while the task holds, since pushing again risks the success it has."""
        if not self.env.task.evaluate(sim).success:
            self._stopped = False
            return False
        if self.strategy != "push":
            return True
        cube = sim.cube_position()
        remaining = float(np.linalg.norm(cube[:2] - goal[:2]))
        nearing = remaining < self._last_remaining - 1e-4
        self._last_remaining = remaining
        flat = cube[2] < g.CUBE_HALF_M + _PUSH_FLAT_M
        self._stopped = self._stopped or self.phase != 2 or remaining < _PUSH_DONE_M or not (nearing and flat)
        return self._stopped

    def _pick(self, tcp: np.ndarray, cube: np.ndarray, goal: np.ndarray, sim: Any, place: bool) -> np.ndarray:
        pan = math.degrees(math.atan2(cube[1], cube[0]))
        if self.phase == 0:
            self._roll = _grasp_roll_deg(pan, sim.cube_yaw_rad())
        above = cube + np.array([0.0, 0.0, 0.06])
        grasp = cube + np.array([0.0, 0.0, 0.004])
        carry_z = 0.1
        if self.phase == 0:  # above the cube, open
            if np.linalg.norm(tcp - above) < 0.012 or self.phase_steps > 30:
                self._next_phase()
            return self._targets(above, _OPEN, self._roll)
        if self.phase == 1:  # down around it
            if np.linalg.norm(tcp - grasp) < 0.008 or self.phase_steps > 25:
                self._next_phase()
            return self._targets(grasp, _OPEN, self._roll)
        if self.phase == 2:  # close
            if self.phase_steps > 8:
                self._next_phase()
                self._hold = tcp.copy()
            return self._targets(grasp, _CLOSED, self._roll)
        if not place or self.phase == 3:  # lift straight up
            lifted = np.array([self._hold[0], self._hold[1], carry_z])
            if place and (tcp[2] > carry_z - 0.015 or self.phase_steps > 25):
                self._next_phase()
            return self._targets(lifted, _CLOSED, self._roll)
        over_bin = np.array([goal[0], goal[1], carry_z])
        if self.phase == 4:  # carry over the bin
            if np.linalg.norm(tcp - over_bin) < 0.015 or self.phase_steps > 40:
                self._next_phase()
            return self._targets(over_bin, _CLOSED, self._roll)
        low = np.array([goal[0], goal[1], 0.06])
        if self.phase == 5:  # lower into it
            if np.linalg.norm(tcp - low) < 0.012 or self.phase_steps > 20:
                self._next_phase()
            return self._targets(low, _CLOSED, self._roll)
        return self._targets(low, _OPEN, self._roll)  # release

    def _push(self, tcp: np.ndarray, cube: np.ndarray, goal: np.ndarray) -> np.ndarray:
        to_goal = np.array([goal[0] - cube[0], goal[1] - cube[1], 0.0])
        direction = to_goal / max(float(np.linalg.norm(to_goal)), 1e-6)
        behind = cube - direction * PUSH_BEHIND_M
        behind_low = np.array([behind[0], behind[1], PUSH_Z_M])
        behind_high = np.array([behind[0], behind[1], PUSH_APPROACH_Z_M])
        pan = math.degrees(math.atan2(tcp[1], tcp[0]))
        # Fingers closed and across the push direction make a flat paddle.
        roll = (pan + 90.0 - math.degrees(math.atan2(direction[1], direction[0]))) % 180.0 - 90.0
        if self.phase == 0:  # above the point behind the cube
            if np.linalg.norm(tcp - behind_high) < 0.015 or self.phase_steps > 30:
                self._next_phase()
            return self._targets(behind_high, _CLOSED, roll)
        if self.phase == 1:  # down behind it
            if np.linalg.norm(tcp - behind_low) < 0.01 or self.phase_steps > 25:
                self._next_phase()
            return self._targets(behind_low, _CLOSED, roll)
        if self.phase == 2:  # push along the line to the goal, slowly
            offset = cube[:2] - tcp[:2]
            along = float(np.dot(offset, direction[:2]))
            lateral = abs(float(direction[0] * offset[1] - direction[1] * offset[0]))
            if not 0.0 < along < 0.07 or lateral > _PUSH_MAX_LATERAL_M:  # off the line: go round again
                self._next_phase()
            else:
                push_to = np.array([goal[0], goal[1], PUSH_Z_M]) - direction * (g.CUBE_HALF_M + 0.008)
                remaining = float(np.linalg.norm(to_goal))
                step = min(_PUSH_STEP_M, max(_PUSH_MIN_STEP_M, _PUSH_SLOWING * remaining))
                return self._targets(push_to, _CLOSED, roll, max_step_m=step)
        # Lift clear of the cube before going round (a sideways move at push height would hit it).
        if tcp[2] > PUSH_APPROACH_Z_M - 0.015 or self.phase_steps > 15:
            self.phase, self.phase_steps = 0, 0
        return self._targets(np.array([tcp[0], tcp[1], PUSH_APPROACH_Z_M]), _CLOSED, roll)

    def _to_action(self, target: np.ndarray) -> np.ndarray:
        env = self.env
        if env.cfg.action_mode == "absolute":
            return target
        if env.cfg.action_mode == "ee_delta":
            tcp_step = (
                kinematics.forward_kinematics(dict(zip(JOINT_NAMES, target))) - env._tcp_target
            ) / env.cfg.max_delta_m
            rest = (target[4:] - env.joint_targets_array()[4:]) / env._delta_scale[4:]
            return np.clip(np.concatenate([tcp_step, rest]), -1.0, 1.0).astype(np.float32)
        delta = (target - env.joint_targets_array()) / env._delta_scale
        return np.clip(delta, -1.0, 1.0).astype(np.float32)
