"""`SimSO101`: the MuJoCo SO-101 twin behind LeRobot's ``Robot`` API (robot type ``sim_so101``).

Same ``observation_features``/``action_features`` keys and units as LeRobot's ``SO101Follower`` with
``use_degrees=True`` (``shoulder_pan.pos`` ... in degrees, ``gripper.pos`` 0..100, cameras as HxWx3 uint8),
so ``LeRobotEnv(SimSO101(...))`` runs the exact code path of ``LeRobotEnv(SO101Follower(...))``.
Each ``send_action`` advances the physics by one control period (``1 / control_hz``), like the real arm
moving while the loop sleeps to its deadline. The twin is the training env (``SO101Env``, absolute
joint targets) behind LeRobot's API, so it takes the same camera options and randomisation
(``SimSO101Config.sim_config``). Extras, used only when present (duck-typed by ``LeRobotEnv`` and
``vlmrl record``): ``reset_scene(seed)`` places the task's objects and draws the episode's
randomisation, ``task_status()`` gives the privileged success/progress the oracle scorer reads,
``privileged_state()`` the training env's ``state`` vector.

``unit`` makes the twin one hardware-like unit (``sim.units``): a fixed latency, gear play, dead band and
joint calibration error in what it reports and how it moves, and a camera, light, friction and cube mass
of its own, the same in every episode. The nominal unit is the twin the policies train in.

lerobot is imported at module import (this module *is* the LeRobot integration); import it only where
lerobot is installed (the ``robot`` extra).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import numpy as np
from lerobot.robots import Robot, RobotConfig
from lerobot.robots.utils import ensure_safe_goal_position

from robot.config import ArmConfig
from robot.contract import JOINT_NAMES
from sim.config import RandomizeConfig, SimConfig, TwinConfig
from sim.errors import SimError
from sim.so101.arm import CAMERAS, SO101Sim
from sim.so101.env import HOME_TCP_M, SO101Env, privileged_state
from sim.so101.kinematics import inverse_kinematics
from sim.so101.scripted import ScriptedPolicy
from sim.so101.tasks import TASKS, Task
from sim.units import NOMINAL, UnitDrive, apply_scene, unit_named


@RobotConfig.register_subclass("sim_so101")
@dataclass(kw_only=True)
class SimSO101Config(RobotConfig):
    """LeRobot config of the twin (draccus-parsable like every LeRobot robot config)."""

    camera_names: tuple[str, ...] = ("front",)
    """Simulated cameras ("front", "wrist"); each becomes an observation feature of that name. (Not
    ``cameras``: LeRobot's RobotConfig treats that field as a dict of real camera configs.)"""
    image_size: int = 128
    """Square side of the rendered frames, pixels."""
    control_hz: float = 30.0
    """Physics time advanced per ``send_action`` is one period of this rate."""
    task: str = "lift"
    """SO-101 twin task whose objects ``reset_scene`` places: reach, lift, push, place."""
    max_relative_target: float | dict[str, float] | None = None
    """As SO101Follower: cap on the change from the present position per command (None: no cap)."""
    initial_joints: dict[str, float] = field(default_factory=dict)
    """Joint positions (LeRobot units, keys without ``.pos``) set by ``reset_scene``; empty: the sim
    env's home (tool 60 deg below horizontal above the table centre), gripper open. Where the joints
    really are: a unit with zero offsets reports them off by its offsets."""
    camera_calibration: dict[str, str] = field(default_factory=dict)
    """As ``SimConfig.camera_calibration``: camera name -> calibration camera id it renders as."""
    calibration_robot_id: str | None = None
    """As ``SimConfig.calibration_robot_id``: hand-eye files placing the calibrated cameras."""
    camera_crop: str = "center_square"
    """As ``SimConfig.camera_crop``: how the real arm's env crops calibrated frames."""
    randomize: RandomizeConfig = field(default_factory=RandomizeConfig)
    """As ``SimConfig.randomize``: domain randomisation drawn per ``reset_scene`` (camera pose, light,
    colours, textures, physics, action latency, joint observation noise); off by default."""

    def sim_config(self) -> SimConfig:
        """The ``SimConfig`` of the twin env these settings describe (absolute joint-target actions, as
        LeRobot's): what ``vlmrl train`` would build for the same task, cameras and randomisation."""
        return SimConfig(
            task=self.task,
            cameras=tuple(self.camera_names),
            image_size=self.image_size,
            camera_calibration=dict(self.camera_calibration),
            calibration_robot_id=self.calibration_robot_id,
            calibration_dir=None if self.calibration_dir is None else str(self.calibration_dir),
            camera_crop=self.camera_crop,  # type: ignore[arg-type]
            action_mode="absolute",
            control_hz=self.control_hz,
            terminate_on_success=False,
            randomize=self.randomize,
        )

    unit: str = NOMINAL
    """Hardware-like unit (``sim.units.UNITS``: nominal, a, b, c, d, e): fixed latency, backlash, dead band,
    joint zero offsets, camera pose and field of view, light, friction and cube mass, drawn once from the
    unit's seed; nominal: the twin the policies train in. Not with ``randomize`` (a unit is one fixed draw)."""


class SimSO101(Robot):
    """The SO-101 twin as a LeRobot robot. Build it with a `SimSO101Config`; ``connect`` loads MuJoCo."""

    config_class = SimSO101Config
    name = "sim_so101"

    def __init__(self, config: SimSO101Config) -> None:
        super().__init__(config)
        for camera in config.camera_names:
            if camera not in CAMERAS:
                raise SimError(f"sim_so101 camera {camera!r} unknown; expected one of {list(CAMERAS)}")
        if config.task not in TASKS:
            raise SimError(f"sim_so101 task {config.task!r} unknown; expected one of {sorted(TASKS)}")
        if not config.control_hz > 0:
            raise SimError(f"sim_so101 control_hz {config.control_hz} must be positive")
        self.unit = unit_named(config.unit)
        self.config = config
        self.env: SO101Env | None = None
        self.task: Task = TASKS[config.task]()
        self._joints: dict[str, float] = {}
        self._drive = UnitDrive(self.unit)

    @property
    def sim(self) -> SO101Sim | None:
        """The MuJoCo arm while connected."""
        return None if self.env is None else self.env.sim

    @property
    def observation_features(self) -> dict[str, Any]:
        """Joint keys (float) and each camera's (H, W, 3), as SO101Follower."""
        size = self.config.image_size
        return {**self.action_features, **{cam: (size, size, 3) for cam in self.config.camera_names}}

    @property
    def action_features(self) -> dict[str, Any]:
        """``<motor>.pos`` (float) for the six motors, as SO101Follower."""
        return {f"{motor}.pos": float for motor in JOINT_NAMES}

    @property
    def is_connected(self) -> bool:
        """True between ``connect`` and ``disconnect``."""
        return self.env is not None

    def connect(self, calibrate: bool = True) -> None:
        """Load the MuJoCo model (the twin env of ``config.sim_config()``: its cameras, calibration and
        randomisation), give it the unit's camera, light, friction and mass, and place the scene (unseeded);
        ``calibrate`` is ignored."""
        if self.env is not None:
            raise SimError(f"{self} is already connected")
        env = SO101Env(self.config.sim_config())
        if self.unit.name != NOMINAL and env.randomize_ranges.active():
            env.close()
            raise SimError(
                f"sim_so101 unit {self.unit.name!r} is one fixed draw; turn the randomisation off for it"
            )
        self.env = env
        self.task = self.env.task
        if self.unit.name != NOMINAL:
            self.env.sim.upload_textures(apply_scene(self.unit, self.env.sim.model, self.env.sim.data))
        self.reset_scene(None)

    @property
    def is_calibrated(self) -> bool:
        """Always True."""
        return True

    def calibrate(self) -> None:
        """Nothing to calibrate: the twin's encoders are exact."""

    def configure(self) -> None:
        """Nothing to configure: the twin's servos are set up by the MJCF."""

    def get_observation(self) -> dict[str, Any]:
        """Measured joints (LeRobot units, as the unit reports them; with the episode's joint noise when
        randomised) and a rendered frame per camera, row 0 at the top."""
        env = self._connected_env()
        self._joints = env.observed_joints()
        obs: dict[str, Any] = {
            f"{name}.pos": value for name, value in self._drive.report(self._joints).items()
        }
        for camera in self.config.camera_names:
            obs[camera] = env.sim.render(camera, self.config.image_size)
        return obs

    def send_action(self, action: dict[str, Any]) -> dict[str, Any]:
        """Command joint targets (LeRobot units), then advance the physics by one control period.

        Returns the targets actually sent (after ``max_relative_target`` and the joint ranges), in the arm's
        own units, as a real arm returns the goals it wrote to its bus; the unit's servos then move
        (``sim.units.UnitDrive``).
        """
        env = self._connected_env()
        goal = {
            key.removesuffix(".pos"): float(value) for key, value in action.items() if key.endswith(".pos")
        }
        if self.config.max_relative_target is not None:
            present = self._reported_joints()
            goal = ensure_safe_goal_position(
                {k: (v, present[k]) for k, v in goal.items()}, self.config.max_relative_target
            )
        sent = env.sim.clip_targets(goal)
        env.command(self._drive.command(sent))  # the nominal unit's drive passes goals unchanged
        return {f"{name}.pos": value for name, value in sent.items()}

    def disconnect(self) -> None:
        """Free the renderers and the model."""
        env = self._connected_env()
        env.close()
        self.env = None

    # -- twin-only extras ------------------------------------------------------------------------------

    def reset_scene(self, seed: int | None) -> None:
        """Reset the physics, place the task's objects (seeded), put the arm at its initial pose and draw
        the episode's randomisation (``config.randomize``; nothing when off)."""
        env = self._connected_env()
        joints = dict(self.config.initial_joints) or home_joints()
        env.start_episode(np.random.default_rng(seed), lambda: joints)
        self._drive.reset(env.sim.joint_targets())
        self._joints = {}

    def privileged_state(self) -> np.ndarray:
        """The twin env's ``state`` vector (``sim.so101.env.STATE_NAMES``) at the last observation: the
        state ``vlmrl train`` stores, which ``vlmrl record`` stores for recordings of the twin (the joints
        where they physically are, not as a unit reports them)."""
        env = self._connected_env()
        return privileged_state(env.sim, self.task, self._joints or env.sim.joint_positions())

    def task_status(self) -> tuple[bool, float]:
        """Privileged (success, progress in [0, 1]) of the configured task (the real arm has none)."""
        status = self.task.evaluate(self._connected())
        return bool(status.success), float(status.progress)

    def scripted_expert(self) -> Callable[[], dict[str, float]]:
        """The sim's privileged scripted expert for the configured task, as a function returning the next
        joint targets (action keys, in the arm's own units: a unit's zero offsets added, so the joints go
        where the expert means them to). Demonstrations on the twin, the scripted operator's takeovers;
        call after ``reset_scene``; each call starts the expert's phases afresh."""
        sim = self._connected()
        # ScriptedPolicy reads ``env.unwrapped.{sim, task, cfg.task, cfg.action_mode, joint_targets_array}``;
        # give it the twin's (the targets it holds once the task holds are the physical ones).
        view = SimpleNamespace(
            sim=sim,
            task=self.task,
            cfg=SimpleNamespace(task=self.config.task, action_mode="absolute"),
            joint_targets_array=lambda: np.array(
                [sim.joint_targets()[n] for n in JOINT_NAMES], dtype=np.float32
            ),
        )
        expert = ScriptedPolicy(SimpleNamespace(unwrapped=view))

        def next_targets() -> dict[str, float]:
            physical = dict(zip(JOINT_NAMES, (float(v) for v in expert.act())))
            return {f"{n}.pos": v for n, v in self._drive.report(physical).items()}

        return next_targets

    def tool_position_m(self) -> np.ndarray:
        """Where the tool centre point really is (metres, base frame): what a person watching sees, not
        what the reported joints imply on a unit with zero offsets (the scripted operator watches it)."""
        return self._connected().tcp_position()

    def _reported_joints(self) -> dict[str, float]:
        return self._drive.report(self._connected_env().observed_joints())

    def _connected(self) -> SO101Sim:
        return self._connected_env().sim

    def _connected_env(self) -> SO101Env:
        if self.env is None:
            raise SimError(f"{self} is not connected; call connect() first")
        return self.env


def home_joints() -> dict[str, float]:
    """The sim env's episode start pose (before its noise), LeRobot units, gripper open."""
    home = inverse_kinematics(HOME_TCP_M, pitch_deg=60.0)
    assert home is not None  # a fixed, reachable pose
    return {**home, "wrist_roll": 0.0, "gripper": 100.0}


def home_action() -> dict[str, float]:
    """`home_joints` with LeRobot's ``.pos`` keys, for ``LeRobotEnvConfig.home``."""
    return {f"{name}.pos": value for name, value in home_joints().items()}


def make_sim_so101(
    cfg: ArmConfig,
    image_size: int = 128,
    control_hz: float = 30.0,
    task: str = "lift",
    twin: TwinConfig | None = None,
) -> SimSO101:
    """Factory for ``robot.lerobot_robot.make_robot(cfg, {"sim_so101": ...})``: the twin for an `ArmConfig`
    (``twin``: its camera options and randomisation, as ``vlmrl train`` takes them; its cameras and image
    size, when set, replace ``cfg.cameras`` and ``image_size``; ``cfg.unit``: the hardware-like unit, None
    the nominal twin)."""
    twin = twin or TwinConfig()
    config = SimSO101Config(
        id=cfg.id,
        calibration_dir=None if cfg.calibration_dir is None else Path(cfg.calibration_dir),
        camera_names=tuple(cfg.cameras if twin.cameras is None else twin.cameras),
        image_size=image_size if twin.image_size is None else twin.image_size,
        control_hz=control_hz,
        task=task,
        max_relative_target=cfg.max_relative_target,
        camera_calibration=dict(twin.camera_calibration),
        calibration_robot_id=twin.calibration_robot_id,
        camera_crop=twin.camera_crop,
        randomize=twin.randomize,
        unit=cfg.unit or NOMINAL,
    )
    return SimSO101(config)
