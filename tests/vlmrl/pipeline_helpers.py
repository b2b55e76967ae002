"""Configs of the twin-robot pipelines shared by the vlmrl tests (small, fast, no keyboard or watchdog)."""

from __future__ import annotations

from buffer import BufferConfig
from robot.config import ArmConfig, LeRobotEnvConfig, WatchdogConfig
from vlmrl.pipelines import finetune, record


def record_config(tmp_path, **overrides) -> record.Config:
    """`vlmrl record` on the SO-101 twin: scripted expert, 2 episodes of 10 steps, 32 px front camera."""
    base = dict(
        robot=ArmConfig(type="sim_so101", cameras=("front",), calibration_dir=str(tmp_path / "calib")),
        env=LeRobotEnvConfig(
            control_hz=200.0,
            max_episode_steps=10,
            image_size=32,
            reset_settle_steps=1,
            keyboard_estop=False,
            watchdog=WatchdogConfig(enabled=False),
        ),
        twin_control_hz=20.0,
        out_dir=tmp_path / "rec",
        source="scripted",
        episodes=2,
    )
    return record.Config(**(base | overrides))


def finetune_config(tmp_path, run, **overrides) -> finetune.Config:
    """`vlmrl finetune` of the sim run ``run`` on the SO-101 twin: 2 episodes of 6 steps, 32 px, zarr buffer."""
    base = dict(
        from_run=run,
        robot=ArmConfig(type="sim_so101", cameras=("front",), calibration_dir=str(tmp_path / "calib")),
        env=LeRobotEnvConfig(
            control_hz=200.0,
            max_episode_steps=6,
            image_size=32,
            reset_settle_steps=1,
            keyboard_estop=False,
            watchdog=WatchdogConfig(enabled=False),
        ),
        twin_control_hz=20.0,
        out_dir=tmp_path / "ft",
        episodes=2,
        buffer=BufferConfig(storage="zarr", capacity_steps=200, clip_length=3, clip_stride=1),
        wait_for_scores_s=60.0,
    )
    return finetune.Config(**(base | overrides))
