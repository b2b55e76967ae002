"""The robot env of the verbs that drive an arm (deploy, record, finetune): the arm and the loop around it
(``RobotEnvConfig``), the LeRobot env built from it, and the check that a policy fits that env."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, Literal, TypeVar

import numpy as np

from robot.arms import arm_for
from robot.config import ArmConfig, LeRobotEnvConfig, env_config_for_arm
from robot.contract import TARGETS_KEY, env_spec
from robot.lerobot_env import LeRobotEnv
from robot.lerobot_robot import make_robot
from sim.so101.kinematics import forward_kinematics
from sim.so101.tasks import TASKS, TaskName
from vlmrl.errors import ConfigError


@dataclass(frozen=True, kw_only=True)
class RobotEnvConfig:
    """The robot and the loop around it, shared by deploy, record and finetune."""

    robot: ArmConfig = field(default_factory=ArmConfig)
    """Which arm: ``--robot.type sim_so101`` (the twin) or a LeRobot type with ``--robot.port``."""
    env: LeRobotEnvConfig = field(default_factory=LeRobotEnvConfig)
    """Control rate, episode length, image size, safety limits, watchdog, stop mode."""
    task: TaskName = "lift"
    """SO-101 task: the twin places its objects for it; its sentence is the task description."""
    start_pose: Literal["sim_home", "env_home"] = "sim_home"
    """Reset pose: the twin's episode start pose (what sim-trained policies saw), or ``env.home``."""
    twin_control_hz: float | None = None
    """Physics time the twin advances per step (None: ``env.control_hz``)."""


RobotConfigT = TypeVar("RobotConfigT", bound=RobotEnvConfig)

_ROBOT_TYPES: ContextVar[dict[str, Any]] = ContextVar("vlmrl_robot_types", default={})  # noqa: B039 - never mutated


@contextmanager
def robot_types(factories: dict[str, Any]) -> Iterator[None]:
    """Within the block, ``make_robot_env`` also builds these robot types: ``{type name: factory(ArmConfig)
    -> LeRobot Robot}`` (a custom arm, passed by the Python API; nothing is registered globally)."""
    token = _ROBOT_TYPES.set({**_ROBOT_TYPES.get(), **factories})
    try:
        yield
    finally:
        _ROBOT_TYPES.reset(token)


def make_robot_env(
    cfg: RobotEnvConfig,
    out_dir: Path,
    robot_factories: dict[str, Any] | None = None,
    twin_config: Any = None,
    warn_clips: bool = True,
    privileged_status: bool = True,
) -> Any:
    """Build the LeRobot robot (the twin or a real arm) and wrap it in a `LeRobotEnv`.

    ``warn_clips`` False: the env does not warn about each episode's safety clips (the pipeline prints them
    in its own line per episode). ``privileged_status`` False: the twin's task status never sets success,
    progress or the reward, only the operator's keys do, as on a real arm (finetune).

    ``robot_factories`` adds robot types (``robot.lerobot_robot.make_robot``): a custom LeRobot ``Robot``
    built from the ``ArmConfig``, without editing the package; so do those of an enclosing
    ``robot_types(...)`` block (how the Python API passes them to deploy and record). ``twin_config``: the
    twin's camera options and randomisation (a ``sim.config.TwinConfig``; None: nominal).

    Raises:
        RobotError: a bad robot config (unknown type, missing port...).
    """
    from sim.lerobot_twin import home_action, make_sim_so101

    env_cfg = cfg.env
    if cfg.task and env_cfg.task_description == LeRobotEnvConfig().task_description:
        env_cfg = replace(env_cfg, task_description=str(TASKS[cfg.task]().description))
    if cfg.start_pose == "sim_home":
        env_cfg = replace(env_cfg, home=home_action())
    if cfg.robot.type == "sim_so101" and not env_cfg.watchdog.on_twin:
        env_cfg = replace(env_cfg, watchdog=replace(env_cfg.watchdog, enabled=False))  # lockstep: never stale
    twin_hz = cfg.twin_control_hz or env_cfg.control_hz
    image_size = env_cfg.image_size or 128

    def twin(arm: ArmConfig) -> Any:
        return make_sim_so101(arm, image_size=image_size, control_hz=twin_hz, task=cfg.task, twin=twin_config)

    robot = make_robot(cfg.robot, {"sim_so101": twin, **_ROBOT_TYPES.get(), **(robot_factories or {})})
    description = arm_for(cfg.robot.type)  # the arm's own limits and kinematics (robot/arms.py)
    env_cfg = env_config_for_arm(env_cfg, cfg.robot.type)
    fk = forward_kinematics if description is not None and description.kinematics == "so101" else None
    out_dir.mkdir(parents=True, exist_ok=True)
    return LeRobotEnv(
        robot,
        env_cfg,
        forward_kinematics=fk,
        clip_log=str(out_dir / "safety.jsonl"),
        warn_clips=warn_clips,
        privileged_status=privileged_status,
    )


def check_policy_fits(policy_obs: dict[str, tuple[tuple[int, ...], np.dtype]], env: Any, source: str) -> None:
    """Raise ConfigError unless the env provides every observation the policy reads, same shape and dtype."""
    spec = env_spec(env)
    for key, (shape, dtype) in policy_obs.items():
        if key == TARGETS_KEY and key not in spec.obs:
            raise ConfigError(
                f"{source} reads {key!r}, the joint targets last commanded (trained with --sim.observe-targets): "
                "add --env.observe-targets"
            )
        if key not in spec.obs:
            raise ConfigError(
                f"{source} reads observation {key!r}, which the robot env does not provide "
                f"(it provides {sorted(spec.obs)}); train on keys a robot has (joint keys, pixels/<camera>)"
            )
        have = spec.obs[key]
        if tuple(have.shape) != tuple(shape) or np.dtype(have.dtype) != np.dtype(dtype):
            raise ConfigError(
                f"{source} reads {key!r} as {np.dtype(dtype)}{list(shape)} but the robot env gives "
                f"{have.dtype}{list(have.shape)} (check --env.image-size and the cameras)"
            )
