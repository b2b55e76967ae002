"""Configs of the robot package: the safety layer, its watchdog, and the LeRobot adapter."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal

from robot.arms import SO101, arm_for

SO101_JOINT_KEYS: tuple[str, ...] = SO101.keys
"""Action/observation keys of LeRobot's SO-100/SO-101 follower, in its motor order (``robot.arms``)."""

SO101_JOINT_LIMITS: dict[str, tuple[float, float]] = SO101.joint_limits()
"""Command limits for an SO-101 follower with ``use_degrees=True`` (``robot.arms.SO101``)."""

SO101_MAX_STEP: dict[str, float] = SO101.max_steps()
"""Largest command change per control step for the SO-101 (``robot.arms.SO101``)."""

SO101_HOME: dict[str, float] = SO101.home_pose()
"""Default reset pose (LeRobot units) the adapter drives to, through the safety layer, on ``reset``."""


@dataclass(frozen=True, kw_only=True)
class SafetyConfig:
    """Limits every command passes through before it reaches a robot."""

    joint_limits: dict[str, tuple[float, float]] = field(default_factory=lambda: dict(SO101_JOINT_LIMITS))
    """(lower, upper) command limit per action key, in the robot's units (LeRobot: degrees, gripper 0..100)."""
    max_step: dict[str, float] = field(default_factory=lambda: dict(SO101_MAX_STEP))
    """Largest change of each joint's command from one control step to the next, in the joint's units."""
    max_lead_steps: float = 4.0
    """A command may lead the measured position by at most this many max steps (a blocked or lagging
    joint is not wound up)."""
    workspace_min_m: tuple[float, float, float] = (-0.45, -0.45, 0.005)
    """Lower corner of the allowed end-effector box (x, y, z in metres, robot base frame)."""
    workspace_max_m: tuple[float, float, float] = (0.45, 0.45, 0.5)
    """Upper corner of the allowed end-effector box (x, y, z in metres, robot base frame)."""
    workspace_bisect_steps: int = 12
    """Bisection steps used to shorten a move that would leave the workspace (2**-n of the step)."""
    clip_tolerance: float = 1e-6
    """A joint whose command moved by more than this counts as clipped (and is logged)."""


@dataclass(frozen=True, kw_only=True)
class WatchdogConfig:
    """When the control loop is stopped for stale observations or an overrunning loop."""

    enabled: bool = True
    """Run the watchdog; turn it off only for debugging or tests of other parts."""
    on_twin: bool = False
    """Run it on the twin too (``robot.type sim_so101``). Off by default: the twin is stepped in lockstep,
    so its observations cannot go stale, and a busy host would only make it trip
    (``vlmrl.deployment.robot_env.make_robot_env``)."""
    stale_after_periods: float = 1.5
    """Trip when no fresh observation or loop tick arrived for this many control periods."""
    poll_periods: float = 0.25
    """How often the watchdog thread checks, in control periods; trip latency <= stale_after + poll."""


DEFAULT_EPISODE_STEPS = 300
"""Episode length of a ``LeRobotEnv`` whose ``max_episode_steps`` is None (teleoperated recordings)."""


@dataclass(frozen=True, kw_only=True)
class LeRobotEnvConfig:
    """The LeRobot adapter: control rate, episode length, image size, reset pose, what a stop does."""

    control_hz: float = 30.0
    """Fixed control rate; each step sleeps to its deadline and counts an overrun when late."""
    max_episode_steps: int | None = None
    """Steps before an episode is truncated. None: as long as the policy's training episodes in `vlmrl deploy`
    and `vlmrl finetune` (the policy file's run info), else ``DEFAULT_EPISODE_STEPS``."""
    image_size: int | None = 128
    """Square size camera frames are resized to (None: keep the camera's own size)."""
    camera_crop: Literal["center_square", "none"] = "center_square"
    """Before resizing: crop the centre square (keeps the aspect ratio, as the square sim camera) or not."""
    camera_calibration: dict[str, str] = field(default_factory=dict)
    """Camera name -> calibration camera id: frames are undistorted with that intrinsics file first."""
    calibration_dir: str | None = None
    """Directory of the calibration files (None: the calibration package's default)."""
    task_description: str = "pick up the cube"
    """Sentence describing the task, for VLM prompts."""
    home: dict[str, float] = field(default_factory=lambda: dict(SO101_HOME))
    """Reset pose in LeRobot units; ``reset`` moves there at the safety layer's max step (empty: stay put)."""
    reset_settle_steps: int = 10
    """Extra control steps spent holding the home pose at the end of ``reset``."""
    stop_mode: Literal["hold", "torque_off"] = "hold"
    """What a stop does: hold the last measured position, or disconnect with torque off."""
    keyboard_estop: bool = True
    """Listen for the emergency-stop key (pynput) when a display exists; the programmatic trigger always works."""
    estop_key: str = "esc"
    """pynput name of the emergency-stop key."""
    max_windup_deg: float = 0.0
    """Joint-delta policies (``delta_targets``): an arm joint's target stays within this many degrees of its
    measured position, as the twin's ``--sim.max-windup-deg`` (deploy and finetune take the policy's);
    the gripper is not bounded. 0: unbounded."""
    observe_targets: bool = False
    """Observations also hold ``joint_targets`` (float32[n], action-key order): the last command the safety
    layer let through, as the twin's ``--sim.observe-targets``. Deploy, evaluate on units and finetune turn it
    on for a policy trained with it."""
    safety: SafetyConfig = field(default_factory=SafetyConfig)
    """Limits every command passes through."""
    watchdog: WatchdogConfig = field(default_factory=WatchdogConfig)
    """Stale-observation / overrun watchdog."""


@dataclass(frozen=True, kw_only=True)
class ArmConfig:
    """Which LeRobot robot to drive, built from LeRobot's own config classes (``--robot.type ...``)."""

    type: str = "sim_so101"
    """LeRobot robot type: sim_so101 (the MuJoCo twin), so101_follower, so100_follower, koch_follower (the
    arms of ``robot.arms.ARMS``), or any type a robot factory is given for."""
    port: str | None = None
    """Serial port of a real arm's motor bus, e.g. /dev/ttyACM0 (required for real arms)."""
    id: str | None = None
    """LeRobot robot id; selects the calibration file (~/.cache/huggingface/lerobot/calibration/...)."""
    cameras: tuple[str, ...] = ("front",)
    """Camera names; they become ``pixels/<name>`` observation keys."""
    camera_sources: tuple[str, ...] = ()
    """Real arms: one OpenCV source per camera (device index such as 0, or a path such as /dev/video4)."""
    camera_width: int = 640
    """Real arms: requested camera frame width in pixels."""
    camera_height: int = 480
    """Real arms: requested camera frame height in pixels."""
    camera_fps: int = 30
    """Real arms: requested camera frame rate."""
    max_relative_target: float | None = None
    """LeRobot's own per-command cap on the change from the present position (None: ours only)."""
    disable_torque_on_disconnect: bool = True
    """Real arms: let the motors go limp when disconnecting."""
    calibration_dir: str | None = None
    """Directory of LeRobot calibration files (None: LeRobot's default under ~/.cache/huggingface)."""
    unit: str | None = None
    """The twin only (sim_so101): a hardware-like unit, nominal or a..e (``sim.units``: fixed latency,
    backlash, dead band, joint zero offsets, camera pose and field of view, light, friction, cube mass);
    None: the nominal twin. A real arm is its own unit."""


def env_config_for_arm(cfg: LeRobotEnvConfig, robot_type: str) -> LeRobotEnvConfig:
    """``cfg`` with the arm's own safety limits, max steps and home pose (``robot.arms``) where it still
    holds the SO-101 defaults; values the user set are kept. Types of no known arm: ``cfg`` unchanged."""
    from dataclasses import replace

    arm = arm_for(robot_type)
    if arm is None or arm is SO101:
        return cfg
    safety = cfg.safety
    if safety.joint_limits == SO101_JOINT_LIMITS:
        safety = replace(safety, joint_limits=arm.joint_limits())
    if safety.max_step == SO101_MAX_STEP:
        safety = replace(safety, max_step=arm.max_steps())
    home = arm.home_pose() if cfg.home == SO101_HOME else cfg.home
    return replace(cfg, safety=safety, home=home)
