"""Fixtures shared by the vlmrl pipeline tests."""

from __future__ import annotations

import pytest

from tests.vlmrl.pipeline_helpers import record_config
from vlm.config import OracleConfig
from vlmrl.pipelines import record, score


@pytest.fixture(scope="session")
def recorded(tmp_path_factory):
    """A twin recording (scripted expert, 3 episodes of 10 steps, 32 px) scored by the oracle."""
    root = tmp_path_factory.mktemp("offline")  # session-wide: the offline and offline-to-online tests
    cfg = record_config(root, episodes=3)
    assert record.main(cfg) == 0
    for data in (root / "rec" / "episodes.zarr", root / "rec" / "lerobot"):
        assert (
            score.main(
                score.Config(episodes=data, scorer=OracleConfig(), out_dir=root / f"report-{data.name}")
            )
            == 0
        )
    return root / "rec"
