"""``make_env(cfg)``: build any simulated env from a ``SimConfig`` (explicit suite -> builder table)."""

from __future__ import annotations

from collections.abc import Callable

import gymnasium

from sim.adapters.metaworld_env import MetaWorldEnv
from sim.adapters.robosuite_env import RobosuiteEnv
from sim.config import SimConfig
from sim.errors import SimError
from sim.randomization import resolve_ranges
from sim.rendering import select_gl_backend


def _make_so101(cfg: SimConfig) -> gymnasium.Env:
    from sim.so101.env import SO101Env

    return SO101Env(cfg)


def _make_robosuite(cfg: SimConfig) -> gymnasium.Env:
    return RobosuiteEnv(cfg)


def _make_metaworld(cfg: SimConfig) -> gymnasium.Env:
    return MetaWorldEnv(cfg)


BUILDERS: dict[str, Callable[[SimConfig], gymnasium.Env]] = {
    "so101": _make_so101,
    "robosuite": _make_robosuite,
    "metaworld": _make_metaworld,
}


def validate_config(cfg: SimConfig) -> None:
    """Raise ``SimError`` (one line naming the field) for settings no suite accepts."""
    if cfg.suite not in BUILDERS:
        raise SimError(f"unknown sim suite {cfg.suite!r}; expected one of {sorted(BUILDERS)}")
    if not isinstance(cfg.image_size, int) or cfg.image_size <= 0:
        raise SimError(f"image_size must be a positive integer, got {cfg.image_size!r}")
    if cfg.image_size > 2048:
        raise SimError(f"image_size must be at most 2048, got {cfg.image_size}")
    if isinstance(cfg.cameras, str):
        raise SimError(f"cameras must be a tuple of camera names, got the string {cfg.cameras!r}")
    if len(set(cfg.cameras)) != len(cfg.cameras):
        raise SimError(f"cameras must not repeat, got {list(cfg.cameras)}")
    if cfg.reward not in ("sparse", "shaped"):
        raise SimError(f"reward must be 'sparse' or 'shaped', got {cfg.reward!r}")
    if cfg.action_mode not in ("absolute", "delta", "ee_delta"):
        raise SimError(f"action_mode must be 'absolute', 'delta' or 'ee_delta', got {cfg.action_mode!r}")
    if not cfg.control_hz > 0:
        raise SimError(f"control_hz must be positive, got {cfg.control_hz!r}")
    if cfg.max_episode_steps is not None and cfg.max_episode_steps <= 0:
        raise SimError(f"max_episode_steps must be positive or None, got {cfg.max_episode_steps!r}")
    if not (cfg.max_delta_deg > 0 and cfg.max_delta_gripper > 0 and cfg.max_delta_m > 0):
        raise SimError("max_delta_deg, max_delta_gripper and max_delta_m must be positive")
    validate_reward_radius(cfg)
    if cfg.observe_targets and cfg.suite != "so101":
        raise SimError(
            f"observe_targets (the SO-101's joint targets) needs the so101 suite, not {cfg.suite!r}"
        )
    validate_camera_calibration(cfg)
    resolve_ranges(cfg)  # randomize: unknown preset, negative ranges, a suite without randomisation


def validate_reward_radius(cfg: SimConfig) -> None:
    """Raise ``SimError`` for a ``reward_radius_m`` off the twin or not positive (the twin's env checks it
    against its task's success radius: the task table imports MuJoCo, which must wait for the GL backend)."""
    if cfg.reward_radius_m is None:
        return
    if cfg.suite != "so101":
        raise SimError(f"reward_radius_m needs the so101 suite (reach or push), not {cfg.suite!r}")
    if not (isinstance(cfg.reward_radius_m, int | float) and cfg.reward_radius_m > 0):
        raise SimError(f"reward_radius_m must be a positive distance in metres, got {cfg.reward_radius_m!r}")


def validate_camera_calibration(cfg: SimConfig) -> None:
    """Raise ``SimError`` for a ``camera_calibration`` that cannot apply (files are read by the env)."""
    entries = cfg.camera_calibration
    if not isinstance(entries, dict) or not all(
        isinstance(k, str) and isinstance(v, str) and k and v for k, v in entries.items()
    ):
        raise SimError(
            f"camera_calibration must map camera names to non-empty calibration camera ids, got {entries!r}"
        )
    if cfg.camera_crop not in ("center_square", "none"):
        raise SimError(f"camera_crop must be 'center_square' or 'none', got {cfg.camera_crop!r}")
    if not entries:
        if cfg.calibration_robot_id is not None:
            raise SimError("calibration_robot_id places calibrated cameras: give camera_calibration too")
        return
    if cfg.suite != "so101":
        raise SimError(f"camera_calibration is supported by the so101 suite only, not {cfg.suite!r}")
    unrendered = sorted(set(entries) - set(cfg.cameras))
    if unrendered:
        raise SimError(
            f"camera_calibration names cameras {unrendered} that are not rendered (cameras: {list(cfg.cameras)})"
        )


def make_env(cfg: SimConfig) -> gymnasium.Env:
    """Build the env ``cfg`` describes; raises ``SimError`` with one clear line for a bad config.

    The headless OpenGL backend is chosen (EGL, then OSMesa) before MuJoCo is first imported.
    """
    validate_config(cfg)
    if cfg.cameras:
        select_gl_backend(cfg.render_backend)
    return BUILDERS[cfg.suite](cfg)
