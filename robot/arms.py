"""Arm descriptions: each arm declares its joints, command limits, reset pose, LeRobot types and kinematics.

Nothing arm-specific lives in the shared modules: the safety layer's defaults, the keyboard jog, the
leader arm and the pipelines look the arm up here by its LeRobot robot type (``arm_for``). The SO-101 is
one entry; the SO-100 and the Koch are a few lines each. Adding an arm whose LeRobot driver exists (a
known motor bus): one ``ArmDescription`` in ``ARMS`` naming its LeRobot follower/leader types and the
modules that register them.

Units are LeRobot's with ``use_degrees=True``: degrees for the arm joints, 0..100 for the gripper.
"""

from __future__ import annotations

from dataclasses import dataclass

from robot.errors import RobotError


@dataclass(frozen=True, kw_only=True)
class ArmDescription:
    """What the project needs to know about one arm model."""

    name: str
    """Short name (``so101``)."""
    motors: tuple[str, ...]
    """LeRobot motor names, base to gripper; observation/action keys are ``<motor>.pos``."""
    limits: tuple[tuple[float, float], ...]
    """(lower, upper) command limit per motor, in ``motors`` order (the safety layer's default)."""
    max_step: tuple[float, ...]
    """Largest command change per control step per motor (the safety layer's default)."""
    home: tuple[float, ...]
    """Default reset pose per motor."""
    follower_types: tuple[str, ...]
    """LeRobot robot types of this arm (``--robot.type``), the twin's included."""
    follower_module: str
    """Module whose import registers the follower configs with LeRobot."""
    leader_type: str | None = None
    """LeRobot teleoperator type of the matching leader arm (``--teleop leader``)."""
    leader_module: str | None = None
    """Module whose import registers the leader config with LeRobot."""
    kinematics: str | None = None
    """Name of the forward kinematics the safety layer's workspace check can use (``so101``: the
    twin's, ``sim.so101.kinematics``); None: no workspace check."""

    def __post_init__(self) -> None:
        n = len(self.motors)
        if not (len(self.limits) == len(self.max_step) == len(self.home) == n):
            raise RobotError(f"arm {self.name}: limits, max_step and home need one entry per motor ({n})")

    @property
    def keys(self) -> tuple[str, ...]:
        """Observation/action keys, ``<motor>.pos``, in motor order."""
        return tuple(f"{m}.pos" for m in self.motors)

    def joint_limits(self) -> dict[str, tuple[float, float]]:
        """Command limits by key."""
        return dict(zip(self.keys, self.limits))

    def max_steps(self) -> dict[str, float]:
        """Largest per-step command change by key."""
        return dict(zip(self.keys, self.max_step))

    def home_pose(self) -> dict[str, float]:
        """Reset pose by key."""
        return dict(zip(self.keys, self.home))


_SO_MOTORS = ("shoulder_pan", "shoulder_lift", "elbow_flex", "wrist_flex", "wrist_roll", "gripper")

SO101 = ArmDescription(
    name="so101",
    motors=_SO_MOTORS,
    # The public SO-101 model's joint ranges (wrist_roll made symmetric).
    limits=((-110.0, 110.0), (-100.0, 100.0), (-97.0, 97.0), (-95.0, 95.0), (-157.0, 157.0), (0.0, 100.0)),
    max_step=(8.0, 8.0, 8.0, 10.0, 10.0, 15.0),  # at 30 Hz, 8 deg/step is 240 deg/s
    home=(0.0, 0.0, 0.0, 0.0, 0.0, 10.0),
    follower_types=("sim_so101", "so101_follower"),
    follower_module="lerobot.robots.so_follower",
    leader_type="so101_leader",
    leader_module="lerobot.teleoperators.so_leader",
    kinematics="so101",
)
"""LeRobot's SO-101 (Feetech STS3215 bus); ``sim_so101`` is its MuJoCo twin."""

SO100 = ArmDescription(
    name="so100",
    motors=_SO_MOTORS,
    limits=SO101.limits,  # same motors and link layout; LeRobot drives both with one class
    max_step=SO101.max_step,
    home=SO101.home,
    follower_types=("so100_follower",),
    follower_module="lerobot.robots.so_follower",
    leader_type="so100_leader",
    leader_module="lerobot.teleoperators.so_leader",
    kinematics="so101",
)
"""LeRobot's SO-100: the SO-101's motors and geometry, so the twin's kinematics apply."""

KOCH = ArmDescription(
    name="koch",
    motors=_SO_MOTORS,
    # Conservative defaults, not measured on a Koch arm: check your calibrated ranges and widen them with
    # --env.safety.joint-limits if the task needs more.
    limits=((-90.0, 90.0), (-90.0, 90.0), (-90.0, 90.0), (-90.0, 90.0), (-150.0, 150.0), (0.0, 100.0)),
    max_step=(8.0, 8.0, 8.0, 10.0, 10.0, 15.0),
    home=(0.0, 0.0, 0.0, 0.0, 0.0, 10.0),
    follower_types=("koch_follower",),
    follower_module="lerobot.robots.koch_follower",
    leader_type="koch_leader",
    leader_module="lerobot.teleoperators.koch_leader",
)
"""LeRobot's Koch v1.1 (Dynamixel bus); no kinematics here, so no workspace check."""

ARMS: dict[str, ArmDescription] = {arm.name: arm for arm in (SO101, SO100, KOCH)}
"""Arm name -> description (explicit table, no registration by import)."""


def arm_for(robot_type: str) -> ArmDescription | None:
    """The description of the arm a LeRobot robot type drives, or None for a type not in ``ARMS``."""
    for arm in ARMS.values():
        if robot_type in arm.follower_types:
            return arm
    return None


def leader_modules() -> dict[str, str]:
    """LeRobot leader type -> module registering it, for every arm with a leader."""
    return {a.leader_type: a.leader_module for a in ARMS.values() if a.leader_type and a.leader_module}
