"""Fixtures shared by the vlmrl pipeline tests."""

from __future__ import annotations

import pytest

from robot.config import ArmConfig, LeRobotEnvConfig, WatchdogConfig
from vlm.config import OracleConfig
from vlmrl.pipelines import record, score


@pytest.fixture(scope="session")
def recorded(tmp_path_factory):
    """A twin recording (scripted expert, 3 episodes of 10 steps, 32 px) scored by the oracle."""
    root = tmp_path_factory.mktemp("offline")  # session-wide: the offline and offline-to-online tests
    cfg = record.Config(
        robot=ArmConfig(type="sim_so101", cameras=("front",), calibration_dir=str(root / "calib")),
        env=LeRobotEnvConfig(
            control_hz=200.0,
            max_episode_steps=10,
            image_size=32,
            reset_settle_steps=1,
            keyboard_estop=False,
            watchdog=WatchdogConfig(enabled=False),
        ),
        twin_control_hz=20.0,
        out_dir=root / "rec",
        source="scripted",
        episodes=3,
    )
    assert record.main(cfg) == 0
    for data in (root / "rec" / "episodes.zarr", root / "rec" / "lerobot"):
        assert (
            score.main(
                score.Config(episodes=data, scorer=OracleConfig(), out_dir=root / f"report-{data.name}")
            )
            == 0
        )
    return root / "rec"
