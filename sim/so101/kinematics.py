"""Closed-form kinematics of the SO-101 twin (numpy only; no MuJoCo needed).

``forward_kinematics`` gives the tool centre point (between the finger pads) in the robot base frame
(metres; x forward, y left, z up, origin on the table under the shoulder_pan axis). ``inverse_kinematics``
solves the reverse for a gripper pitch, which scripted policies and tests use.
"""

from __future__ import annotations

import math
from collections.abc import Mapping

import numpy as np

from sim.errors import SimError
from sim.so101 import geometry as g

EE_ACTION_NAMES: tuple[str, ...] = ("dx", "dy", "dz", "d_wrist_roll", "d_gripper")
"""ee_delta action layout (each in [-1, 1]; ``sim.so101.env``, ``vlmrl.loop.arm_actions``)."""
EE_WORKSPACE_LOW_M = np.array([0.04, -0.28, 0.01])
EE_WORKSPACE_HIGH_M = np.array([0.34, 0.28, 0.26])
"""ee_delta mode keeps the commanded tool centre point inside this box (base frame)."""


def forward_kinematics(joints: Mapping[str, float]) -> np.ndarray:
    """Tool centre point xyz (metres, base frame) for joint positions in LeRobot degrees.

    Args:
        joints: at least shoulder_pan, shoulder_lift, elbow_flex, wrist_flex (degrees); the keys may also
            carry LeRobot's ``.pos`` suffix. wrist_roll and gripper do not move the tool centre point.

    Returns:
        float64[3].
    """
    q = {name.removesuffix(".pos"): float(value) for name, value in joints.items()}
    try:
        pan, a1, a2, a3 = (
            math.radians(q[name]) for name in ("shoulder_pan", "shoulder_lift", "elbow_flex", "wrist_flex")
        )
    except KeyError as missing:
        raise SimError(f"forward_kinematics: joint {missing} missing from {sorted(q)}") from None
    # Planar chain in the arm's vertical plane: r forward, z up.
    r = g.UPPER_ARM_M * math.sin(a1) + g.FOREARM_M * math.cos(a1 + a2) + g.TOOL_M * math.cos(a1 + a2 + a3)
    z = (
        g.SHOULDER_HEIGHT_M
        + g.UPPER_ARM_M * math.cos(a1)
        - g.FOREARM_M * math.sin(a1 + a2)
        - g.TOOL_M * math.sin(a1 + a2 + a3)
    )
    return np.array([r * math.cos(pan), r * math.sin(pan), z])


def inverse_kinematics(xyz: np.ndarray, pitch_deg: float = 90.0) -> dict[str, float] | None:
    """Arm joint angles (LeRobot degrees) that put the tool centre point at ``xyz`` (elbow up).

    Args:
        xyz: target in the base frame, metres.
        pitch_deg: gripper angle below horizontal (90: pointing straight down).

    Returns:
        shoulder_pan, shoulder_lift, elbow_flex, wrist_flex (wrist_roll and gripper are left to the
        caller), or None when the point is out of reach or outside the joint limits.
    """
    x, y, z = (float(v) for v in xyz)
    pan = math.atan2(y, x)
    r = math.hypot(x, y)
    phi = math.radians(pitch_deg)
    wrist_r = r - g.TOOL_M * math.cos(phi)
    wrist_z = z + g.TOOL_M * math.sin(phi) - g.SHOULDER_HEIGHT_M
    d2 = wrist_r**2 + wrist_z**2
    cos_q2 = (d2 - g.UPPER_ARM_M**2 - g.FOREARM_M**2) / (2 * g.UPPER_ARM_M * g.FOREARM_M)
    if abs(cos_q2) > 1.0:
        return None
    q2 = -math.acos(cos_q2)  # elbow above the wrist
    theta1 = math.atan2(wrist_z, wrist_r) - math.atan2(
        g.FOREARM_M * math.sin(q2), g.UPPER_ARM_M + g.FOREARM_M * math.cos(q2)
    )
    a1 = math.pi / 2 - theta1
    a2 = -q2 - math.pi / 2
    a3 = phi - a1 - a2
    solution = {
        "shoulder_pan": math.degrees(pan),
        "shoulder_lift": math.degrees(a1),
        "elbow_flex": math.degrees(a2),
        "wrist_flex": math.degrees(a3),
    }
    for name, value in solution.items():
        low, high = g.ARM_LIMITS_DEG[name]
        if not low <= value <= high:
            return None
    return solution


STEEP_FIRST_PITCHES_DEG: tuple[float, ...] = (90.0, 80.0, 70.0, 60.0, 50.0, 40.0, 30.0)
"""Gripper pitches ``solve_ik`` tries, pointing down first."""


def solve_ik(xyz: np.ndarray) -> tuple[dict[str, float], float] | None:
    """IK with the steepest feasible gripper pitch (pointing down when possible); (joints, pitch) or None."""
    for pitch in STEEP_FIRST_PITCHES_DEG:
        joints = inverse_kinematics(xyz, pitch_deg=pitch)
        if joints is not None:
            return joints, pitch
    return None


def ee_delta_step(
    targets: Mapping[str, float],
    tool: np.ndarray,
    action: np.ndarray,
    max_delta_m: float,
    max_delta_deg: float,
    max_delta_gripper: float,
) -> tuple[dict[str, float], np.ndarray]:
    """One ee_delta action (``EE_ACTION_NAMES``, each in [-1, 1]) applied to joint ``targets`` (LeRobot
    degrees; the keys may carry ``.pos``) whose tool centre point is ``tool``: the point moves by up to
    ``max_delta_m`` inside the workspace box and ``solve_ik`` (gripper as steeply down as reachable) sets the
    first four joints, wrist roll and gripper change by ``max_delta_deg`` and ``max_delta_gripper``. A point
    out of reach holds the four joints. Returns the new targets (same keys) and the tool point they aim at
    (``tool`` when out of reach). The one ee step the twin (``sim.so101.env``) and an arm
    (``vlmrl.loop.arm_actions.EndEffectorDeltas``) both take; joint limits are the caller's."""
    a = np.asarray(action, dtype=np.float64)
    new = {key: float(value) for key, value in targets.items()}
    by_name = {key.removesuffix(".pos"): key for key in new}
    point = np.clip(
        np.asarray(tool, np.float64) + a[:3] * max_delta_m, EE_WORKSPACE_LOW_M, EE_WORKSPACE_HIGH_M
    )
    solution = solve_ik(point)
    if solution is None:
        point = np.asarray(tool, np.float64)
    else:
        for name, value in solution[0].items():
            new[by_name[name]] = float(value)
    new[by_name["wrist_roll"]] += float(a[3]) * max_delta_deg
    new[by_name["gripper"]] += float(a[4]) * max_delta_gripper
    return new, point
