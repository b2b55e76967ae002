"""Build LeRobot robots from an `ArmConfig`, through LeRobot's own config classes (lerobot imported lazily)."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from robot.config import ArmConfig
from robot.errors import RobotError

RobotFactory = Callable[[ArmConfig], Any]
"""Builds a LeRobot ``Robot`` for robot types this package cannot import (the vlmrl pipelines pass
``{"sim_so101": sim.lerobot_twin.make_sim_so101}``)."""

LEROBOT_MODULES: dict[str, str] = {
    "so101_follower": "lerobot.robots.so_follower",
    "so100_follower": "lerobot.robots.so_follower",
    "koch_follower": "lerobot.robots.koch_follower",
    "omx_follower": "lerobot.robots.omx_follower",
}
"""LeRobot robot types `make_robot` builds from a serial port, and the module registering each config
(LeRobot registers a config class only when its module is imported)."""


def camera_configs(cfg: ArmConfig) -> dict[str, Any]:
    """LeRobot ``OpenCVCameraConfig`` per camera of a real arm (an empty dict without sources)."""
    if not cfg.camera_sources:
        return {}
    if len(cfg.camera_sources) != len(cfg.cameras):
        raise RobotError(
            f"robot.camera_sources has {len(cfg.camera_sources)} entries for {len(cfg.cameras)} cameras "
            f"{list(cfg.cameras)}; give one OpenCV index or device path per camera"
        )
    from lerobot.cameras.opencv import OpenCVCameraConfig

    out = {}
    for name, source in zip(cfg.cameras, cfg.camera_sources):
        index_or_path: int | Path = int(source) if source.isdigit() else Path(source)
        out[name] = OpenCVCameraConfig(
            index_or_path=index_or_path, fps=cfg.camera_fps, width=cfg.camera_width, height=cfg.camera_height
        )
    return out


def lerobot_config(cfg: ArmConfig) -> Any:
    """The LeRobot ``RobotConfig`` subclass instance for a real arm type (``so101_follower``, ...).

    Raises:
        RobotError: an unknown type, a real arm without a port, or with a twin unit.
    """
    import importlib

    from lerobot.robots import RobotConfig

    if cfg.type in LEROBOT_MODULES:
        importlib.import_module(LEROBOT_MODULES[cfg.type])
    try:
        config_class = RobotConfig.get_choice_class(cfg.type)
    except (KeyError, ValueError) as exc:
        known = sorted(RobotConfig.get_known_choices())
        raise RobotError(f"robot.type {cfg.type!r} is not a LeRobot robot type; known: {known}") from exc
    if cfg.port is None:
        raise RobotError(f"robot.type {cfg.type} needs --robot.port (e.g. /dev/ttyACM0)")
    if cfg.unit is not None:
        raise RobotError(
            f"--robot.unit {cfg.unit} is a unit of the twin (--robot.type sim_so101); a {cfg.type} is its own unit"
        )
    kwargs: dict[str, Any] = {"port": cfg.port, "id": cfg.id, "cameras": camera_configs(cfg)}
    if cfg.calibration_dir is not None:
        kwargs["calibration_dir"] = Path(cfg.calibration_dir)
    fields = getattr(config_class, "__dataclass_fields__", {})
    if "max_relative_target" in fields:
        kwargs["max_relative_target"] = cfg.max_relative_target
    if "disable_torque_on_disconnect" in fields:
        kwargs["disable_torque_on_disconnect"] = cfg.disable_torque_on_disconnect
    if "use_degrees" in fields:
        kwargs["use_degrees"] = True
    return config_class(**kwargs)


def make_robot(cfg: ArmConfig, factories: Mapping[str, RobotFactory] | None = None) -> Any:
    """Build (not connect) a LeRobot ``Robot``: ``factories[cfg.type]`` if given, else LeRobot's own.

    Raises:
        RobotError: unknown type, missing port, or LeRobot refusing the config.
    """
    factories = dict(factories or {})
    if cfg.type in factories:
        return factories[cfg.type](cfg)
    from lerobot.robots import make_robot_from_config

    config = lerobot_config(cfg)
    try:
        return make_robot_from_config(config)
    except ValueError as exc:
        raise RobotError(f"LeRobot could not build robot.type {cfg.type}: {exc}") from exc
