"""Configuration of simulated environments (one frozen dataclass, parsed by tyro in the pipelines)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, ClassVar, Literal


@dataclass(frozen=True, kw_only=True)
class RandomizeConfig:
    """Domain randomisation of the SO-101 twin, drawn once per episode from the episode seed.

    ``preset`` sets every factor; a factor given here overrides the preset's value (0 turns it off).
    Factors are symmetric ranges around the nominal (calibrated) value: ``x`` means uniform in [-x, x]."""

    preset: str = "none"
    """none (nominal twin), light, medium or strong (``sim.randomization.PRESETS``)."""
    camera_pos_m: float | None = None
    """Camera position offset, metres (a random direction, length uniform in [0, x])."""
    camera_rot_deg: float | None = None
    """Camera rotation about a random axis, degrees."""
    camera_fovy_deg: float | None = None
    """Change of the vertical field of view, degrees (calibrated cameras: their focal lengths scale alike)."""
    light_frac: float | None = None
    """Relative change of the light intensities (sun and headlight)."""
    color: float | None = None
    """Change of each RGB channel (0..1 scale) of the cube and the table, drawn separately for each."""
    texture: float | None = None
    """Contrast of a procedural texture on the table and the cube, in [0, 1]: a random mix of checker,
    stripes and smooth noise at a random scale and tint, its strength uniform in [0, x]. 0: plain, nominal."""
    cube_mass_frac: float | None = None
    """Relative change of the cube's mass (and inertia)."""
    cube_size_frac: float | None = None
    """Relative change of the cube's size (it still starts resting on the table)."""
    friction_frac: float | None = None
    """Relative change of the sliding friction of the cube and the finger pads."""
    joint_damping_frac: float | None = None
    """Relative change of the arm joints' damping."""
    gripper_force_frac: float | None = None
    """Relative change of the gripper's force limit."""
    max_latency_steps: int | None = None
    """Action latency: each episode applies actions 0..x control periods late (x at most 2)."""
    joint_noise_deg: float | None = None
    """Standard deviation of the Gaussian noise on joint observations is drawn per episode in [0, x]:
    degrees for the arm joints, the gripper's 0..100 units for the gripper."""
    seed_salt: int = 0
    """Stream of the draws: another salt gives other perturbations for the same episode seeds (the
    held-out evaluation grid of ``vlmrl evaluate`` uses its own)."""
    calibration_sigmas: float = 2.0
    """Cameras of ``camera_calibration`` whose files store their uncertainty (intrinsics: the fit's
    standard deviation of fy; hand-eye: the residual in mm and degrees) get their own camera ranges, this
    many standard deviations wide, in place of the preset's; a camera factor set here, or 0, keeps the
    preset's. The preset still says whether a camera factor is on."""

    # Checkpoints from before calibration-sized camera ranges resume with the preset's ranges, and those from
    # before the texture factor without textures (the presets had none then).
    LEGACY_DEFAULTS: ClassVar[dict[str, Any]] = {"calibration_sigmas": 0.0, "texture": 0.0}


@dataclass(frozen=True, kw_only=True)
class SimConfig:
    """Which simulated env to build and how it renders and rewards."""

    LEGACY_DEFAULTS: ClassVar[dict[str, Any]] = {"max_windup_deg": 0.0}
    """What a config stored before a field existed (a checkpoint, a policy's run info, a recording's
    ``sim_config``) gets for it where the default would change the env: the old behaviour."""

    suite: Literal["so101", "robosuite", "metaworld"] = "so101"
    """Simulator family: our SO-101 MuJoCo twin, robosuite 1.5 (Panda) or Meta-World 3 (Sawyer)."""
    task: str = "lift"
    """Task name. so101: reach, lift, push, place. robosuite: Lift, Stack, Door, PickPlaceCan.
    metaworld: an MT1 env name such as reach-v3, push-v3, pick-place-v3, door-open-v3."""
    cameras: tuple[str, ...] = ("front",)
    """Cameras rendered into ``pixels/<camera>`` (empty: state only, nothing is rendered).
    so101: front, wrist. robosuite: agentview, frontview, birdview, sideview, robot0_eye_in_hand.
    metaworld: corner, corner2, corner3, corner4, topview, behindGripper, gripperPOV."""
    image_size: int = 128
    """Square image side in pixels."""
    camera_calibration: dict[str, str] = field(default_factory=dict)
    """so101: camera name -> calibration camera id (``vlmrl calibrate camera --camera-id``). That camera
    renders what the real arm's env observes through the calibrated camera (frames undistorted, cropped as
    ``camera_crop``, resized to ``image_size``; the real side's ``--env.camera-calibration``), so a policy
    trained here sees the same intrinsics on the arm. Empty: the twin's own cameras."""
    calibration_robot_id: str | None = None
    """Robot id of hand-eye files (``vlmrl calibrate handeye --robot-id``): the calibrated cameras are also
    placed where hand-eye calibration found them (front: eye_to_hand T_base_camera in the twin's base frame;
    wrist: eye_in_hand T_gripper_camera, gripper frame at the tool centre point with x along the fingers and
    y towards the left finger). None: the cameras keep the twin's poses and only the intrinsics change."""
    calibration_dir: str | None = None
    """Directory of the calibration files (None: $HF_LEROBOT_CALIBRATION or LeRobot's default)."""
    camera_crop: Literal["center_square", "none"] = "center_square"
    """How the real arm's env crops calibrated frames before resizing (its ``camera_crop``): the centre
    square, or none (the whole frame squeezed to a square)."""
    reward: Literal["sparse", "shaped"] = "sparse"
    """sparse: 1 on success, else 0. shaped: a dense staged reward (see each task)."""
    action_mode: Literal["absolute", "delta", "ee_delta"] = "absolute"
    """SO-101 only (robosuite/Meta-World keep their native end-effector delta actions).
    absolute: 6 joint targets in LeRobot units (degrees, gripper 0..100), the real robot's contract.
    delta: 6 values in [-1, 1], joint target changes scaled by ``max_delta_deg`` / ``max_delta_gripper``.
    ee_delta: 5 values in [-1, 1]: tool-centre-point moves (x, y, z; ``max_delta_m``, solved by the arm's
    closed-form IK with the gripper pointing as steeply down as reachable), wrist-roll and gripper changes.
    Measured on `reach` with reward="shaped" (SB3 SAC, 128x128 MLPs, batch 128, initial entropy
    temperature 0.05, 30 eval episodes): absolute 87% success after 2k steps and 97% after 4k (fastest
    start); delta 53% at 4k, 100% at 6k; ee_delta 80% at 4k, 100% at 6k. With an initial temperature
    of 1.0 no mode passed 25% within 8k steps: per-step shaped rewards are small, keep it <= 0.1."""
    control_hz: float = 20.0
    """Control (env step) rate. so101 and robosuite; Meta-World has a fixed rate (80 Hz)."""
    max_episode_steps: int | None = None
    """Steps before truncation; None: the task's default (so101: reach 50, lift 100, push 100, place 150)."""
    shadows: bool = False
    """Render shadows (several times slower on software GL)."""
    antialias: bool = False
    """4x multisample anti-aliasing of rendered frames. Off by default: on Mesa llvmpipe it doubles the cost
    of a 128 px SO-101 frame (3.4 vs 1.5 ms), and RL encoders do not need smooth edges."""
    reward_radius_m: float | None = None
    """so101 reach and push: the reward counts success only this close to the goal (metres; the task's radius is
    4 cm for reach, 3 cm for push), so a policy aims inside the zone instead of at its edge. Termination on success
    follows the reward; ``info["success"]``, evaluations and reports keep the task's radius. None: the task's."""
    terminate_on_success: bool = True
    """End the episode (terminated=True) on the first successful step (so101 and robosuite)."""
    max_delta_deg: float = 8.0
    """delta mode: largest change of an arm joint target per step, degrees."""
    max_delta_gripper: float = 25.0
    """delta mode: largest change of the gripper target per step (0..100 scale)."""
    max_windup_deg: float = 16.0
    """delta mode: an arm joint's target stays within this many degrees of the joint's measured position
    (anti-windup). Without a bound, a joint held back by contact (the jaw pressed on the table) keeps adding
    each step's delta to a target the policy cannot see: measured on twin lift, failed episodes wound the
    shoulder and elbow targets up to 40-108 degrees past the joints, pinning the jaw so the gripper could
    not close. The gripper is not bounded (its closing force is the gap). 0: unbounded (runs before
    2026-12-01)."""
    max_delta_m: float = 0.02
    """ee_delta mode: largest move of the tool centre point per step, metres."""
    observe_targets: bool = False
    """so101: observations also hold ``joint_targets`` (float32[6], LeRobot units, ``JOINT_NAMES`` order): the
    joint targets last commanded, in every action mode. With action latency (``--sim.randomize.max-latency-steps``,
    a slow arm) the joints reach them periods later; with ``--policy-obs robot`` the policy reads them, so it
    sees its commands still in flight. An arm's env gives the same (``--env.observe-targets``; deploy, evaluate
    on units and finetune take the policy's)."""
    ee_arm_steps: bool = False
    """ee_delta mode: drive the joints as `vlmrl deploy` drives an arm (``vlmrl.loop.arm_actions.EndEffectorDeltas``
    through the safety layer): each step's tool move starts where the last joint targets put the tool, and the
    targets move at most the SO-101 safety layer's per-joint step from the last ones
    (``robot.config.SO101_MAX_STEP``: 8 degrees for shoulder and elbow, 10 for the wrist, 15 for the gripper),
    so the policy learns only moves the arm's safety layer lets through. Off: IK steps of any size from the
    tool point the twin keeps (runs before 2026-12-05)."""
    render_backend: Literal["auto", "egl", "osmesa"] = "auto"
    """Headless OpenGL backend; auto tries EGL, then OSMesa. Ignored if MUJOCO_GL is already set."""
    # A plain (frozen, shared) default rather than default_factory: configs pickled before this field
    # existed still load with it.
    randomize: RandomizeConfig = RandomizeConfig()
    """Domain randomisation (so101 only): camera pose and field of view, light, colours, textures, cube
    mass, size and friction, joint damping, gripper force, action latency, joint observation noise; per
    episode."""

    def __post_init__(self) -> None:
        # Configs stored as JSON (a recording's sim_config attrs) come back with a dict here; one stored
        # before a field existed gets the old behaviour, as a checkpoint does (``LEGACY_DEFAULTS``).
        if isinstance(self.randomize, dict):
            stored = {**RandomizeConfig.LEGACY_DEFAULTS, **self.randomize}
            object.__setattr__(self, "randomize", RandomizeConfig(**stored))


@dataclass(frozen=True, kw_only=True)
class TwinConfig:
    """The SO-101 twin's camera options and randomisation where it stands in for an arm (``vlmrl record
    --robot.type sim_so101``), named as ``vlmrl train`` names them under ``--sim``."""

    cameras: tuple[str, ...] | None = None
    """Cameras rendered (front, wrist), as ``SimConfig.cameras``; None: the arm's (``--robot.cameras``)."""
    image_size: int | None = None
    """Square image side in pixels, as ``SimConfig.image_size``; None: the env's (``--env.image-size``)."""
    camera_calibration: dict[str, str] = field(default_factory=dict)
    """As ``SimConfig.camera_calibration``: camera name -> calibration camera id it renders as."""
    calibration_robot_id: str | None = None
    """As ``SimConfig.calibration_robot_id``: robot id of the hand-eye files placing calibrated cameras."""
    camera_crop: Literal["center_square", "none"] = "center_square"
    """As ``SimConfig.camera_crop``."""
    randomize: RandomizeConfig = RandomizeConfig()
    """As ``SimConfig.randomize``: domain randomisation, drawn per episode (off by default)."""


@dataclass(frozen=True, kw_only=True)
class ScriptedOperatorConfig:
    """The scripted operator of `vlmrl finetune --operator scripted` on the twin (``sim.scripted_operator``):
    when it presses success or failure and when it takes over with the twin's expert."""

    stall_steps: int = 20
    """The policy stalls when the tool moved less than ``stall_m`` over this many steps (1 s at 20 Hz)."""
    stall_m: float = 0.01
    """Tool movement, metres, below which ``stall_steps`` steps count as a stall."""
    workspace_min_m: tuple[float, float, float] = (0.04, -0.28, 0.0)
    """Lower corner of the box the tool should stay in (x, y, z, metres, robot base frame); outside it the
    policy has drifted away (the twin tasks' workspace, ``sim.so101.env.EE_WORKSPACE_*``)."""
    workspace_max_m: tuple[float, float, float] = (0.34, 0.28, 0.26)
    """Upper corner of that box."""
    takeover_steps: int = 40
    """Steps the expert drives per takeover before handing back (about a lift from the home pose)."""
    budget_steps: int = 80
    """Intervention steps per episode at most; 0: no takeovers at all (keys only)."""
    give_up: bool = True
    """Press failure when the policy stalls or drifts and the budget is spent, as a person ends a hopeless
    episode early (robot minutes are the cost); False: let it run to the time limit."""
    demonstrate: bool = False
    """Take over at each episode's first step, so the expert drives it (for ``takeover_steps`` within
    ``budget_steps``): demonstrations on the arm, stored as takeovers in the fine-tuning buffer, which a
    later `vlmrl finetune --prior-data` reads (a person records them with ``vlmrl record``)."""


def stored_sim_settings(stored: dict[str, Any]) -> dict[str, Any]:
    """Sim settings stored by an older version (a policy's run info, a recording's ``sim_config``) with the
    fields added since at their old behaviour (``SimConfig.LEGACY_DEFAULTS``), where the stored dict lacks them."""
    return {**SimConfig.LEGACY_DEFAULTS, **stored}


def joint_delta_scale(max_delta_deg: float, max_delta_gripper: float) -> list[float]:
    """Per-joint scale of a joint-delta action (``action_mode="delta"``): the largest target change a step
    of the five arm joints (degrees), then of the gripper."""
    return [float(max_delta_deg)] * 5 + [float(max_delta_gripper)]
