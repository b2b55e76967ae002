"""Dimensions and joint limits of our SO-101-like arm (shared by the MJCF builder and the kinematics).

Link lengths approximate the public SO-ARM101 drawings; joint limits are those of the public SO-101
model (shoulder_pan +-110 deg, shoulder_lift +-100, elbow_flex +-97, wrist_flex +-95, wrist_roll -157..163).

Zero pose (all arm joints at 0 deg): the upper arm points straight up, the forearm and gripper point
forward (+x) horizontally. Positive shoulder_lift tilts the upper arm forward, positive elbow_flex and
wrist_flex bend down, positive shoulder_pan turns left (+y) seen from above.
"""

from __future__ import annotations

SHOULDER_HEIGHT_M = 0.11
"""Height of the shoulder_lift axis above the table (the base stands on the table at the origin)."""
UPPER_ARM_M = 0.116
"""shoulder_lift axis to elbow_flex axis."""
FOREARM_M = 0.135
"""elbow_flex axis to wrist_flex axis."""
WRIST_TO_ROLL_M = 0.03
"""wrist_flex axis to the wrist_roll body origin, along the gripper."""
TOOL_M = 0.10
"""wrist_flex axis to the tool centre point (midway between the finger pads)."""

ARM_LIMITS_DEG: dict[str, tuple[float, float]] = {
    "shoulder_pan": (-110.0, 110.0),
    "shoulder_lift": (-100.0, 100.0),
    "elbow_flex": (-97.0, 97.0),
    "wrist_flex": (-95.0, 95.0),
    "wrist_roll": (-157.0, 163.0),
}
"""Arm joint ranges in LeRobot degrees (0 deg = the zero pose above)."""

GRIPPER_RANGE = (0.0, 100.0)
"""LeRobot gripper units: 0 closed, 100 fully open."""
FINGER_TRAVEL_M = 0.024
"""Slide travel of each finger from closed (gripper 0) to open (gripper 100)."""
FINGER_GAP_CLOSED_M = 0.008
"""Gap between the finger pads when closed; open gap is this plus twice ``FINGER_TRAVEL_M``."""

ARM_JOINTS: tuple[str, ...] = ("shoulder_pan", "shoulder_lift", "elbow_flex", "wrist_flex", "wrist_roll")
CUBE_HALF_M = 0.015
"""Half the side of the cube."""

HOME_TCP = (0.16, 0.0, 0.13)
"""Tool centre point (metres) of the home pose episodes start near (gripper 60 deg below horizontal)."""
