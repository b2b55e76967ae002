"""The observation view a reward program reads: named, documented, read-only fields (issue #17).

A reward program never sees the env's raw observation. It gets ``obs``, a read-only object whose
attributes are the fields below (float64 arrays, or floats for scalars), built by the caller from the
simulator's state (``vlmrl.scorers.car_reward``) or, on a real arm, from what the robot reports. Fields marked
``on_robot=False`` exist only in simulation (object and goal poses, the end-effector pose that LeRobot's
SO-101 does not report): a program that reads them may shape rewards in simulation but cannot run where
the arm itself would compute the reward.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class ViewField:
    """One attribute of the view."""

    name: str
    shape: tuple[int, ...]
    """() for a float, (n,) for an array."""
    doc: str
    on_robot: bool
    """True when a real arm provides it (joint encoders, gripper); False: simulation only (privileged)."""


VIEW_FIELDS: tuple[ViewField, ...] = (
    ViewField(
        "joint_pos_rad",
        (5,),
        "arm joint angles in radians: shoulder_pan, shoulder_lift, elbow_flex, wrist_flex, wrist_roll",
        True,
    ),
    ViewField("gripper_open_frac", (), "gripper opening: 0.0 fully closed, 1.0 fully open", True),
    ViewField(
        "ee_pos_m",
        (3,),
        "tool centre point (between the finger tips) x, y, z in metres, robot base frame",
        False,
    ),
    ViewField("object_pos_m", (3,), "centre of the cube x, y, z in metres (z = 0 is the table top)", False),
    ViewField("object_half_size_m", (), "half the cube's edge in metres (its centre rests this high)", False),
    ViewField(
        "goal_pos_m",
        (3,),
        "the task's goal point in metres: reach target, lift point above the cube's start, push zone or bin centre",
        False,
    ),
    ViewField("object_minus_ee_m", (3,), "object_pos_m - ee_pos_m", False),
)
"""Every field a program may read, in documentation order."""

FIELDS_BY_NAME: dict[str, ViewField] = {f.name: f for f in VIEW_FIELDS}
ROBOT_FIELDS: frozenset[str] = frozenset(f.name for f in VIEW_FIELDS if f.on_robot)
"""Fields a real arm provides (LeRobot SO-101: joint encoders and gripper)."""


def view_api_text() -> str:
    """The view documented for a prompt: one line per field with shape, meaning and availability."""
    lines = ["The observation `obs` is read-only; its attributes (float64 numpy arrays, or floats):"]
    for f in VIEW_FIELDS:
        shape = "float" if not f.shape else f"array{list(f.shape)}"
        where = "sim and real arm" if f.on_robot else "simulation only"
        lines.append(f"- obs.{f.name} ({shape}, {where}): {f.doc}")
    return "\n".join(lines)


def check_view(view: dict[str, object]) -> None:
    """Raise ValueError naming the first field of ``view`` that is unknown or has the wrong size."""
    import numpy as np

    for name, value in view.items():
        field = FIELDS_BY_NAME.get(name)
        if field is None:
            raise ValueError(f"unknown view field {name!r}; expected one of {sorted(FIELDS_BY_NAME)}")
        size = int(np.prod(field.shape)) if field.shape else 1
        if np.size(value) != size:  # type: ignore[arg-type]
            raise ValueError(f"view field {name!r} has {np.size(value)} values, expected {size}")  # type: ignore[arg-type]
