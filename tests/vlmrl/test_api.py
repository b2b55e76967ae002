"""The Python API takes what the package does not know: a custom LeRobot robot type and a custom scorer."""

from __future__ import annotations

import dataclasses
import json

import numpy as np
import pytest

import vlmrl
from robot.config import ArmConfig, LeRobotEnvConfig, WatchdogConfig
from robot.errors import RobotError
from vlm.config import AuxRewardConfig
from vlmrl.errors import ConfigError


class ConstantScorer:
    """A scorer of the user's: the same score for every clip (counts what it was asked)."""

    scorer_id = "constant"
    model_id = "none"

    def __init__(self, value: float) -> None:
        self.value, self.prompts, self.closed = value, set(), False

    def score(self, clips, prompt):
        self.prompts.add(prompt)
        return np.full(len(clips), self.value, np.float32)

    def close(self) -> None:
        self.closed = True


def my_twin(arm: ArmConfig):
    """A user's robot factory: here the twin under another type name."""
    from sim.lerobot_twin import make_sim_so101

    return make_sim_so101(
        dataclasses.replace(arm, type="sim_so101"), image_size=32, control_hz=20.0, task="reach"
    )


def test_record_takes_a_custom_robot_and_score_a_custom_scorer(tmp_path):
    record = vlmrl.RecordConfig(
        source="scripted",
        episodes=1,
        task="reach",
        robot=ArmConfig(type="my_twin", cameras=("front",), calibration_dir=str(tmp_path / "motors")),
        env=LeRobotEnvConfig(
            control_hz=200.0,
            max_episode_steps=8,
            image_size=32,
            reset_settle_steps=1,
            keyboard_estop=False,
            watchdog=WatchdogConfig(enabled=False),
        ),
        out_dir=tmp_path / "rec",
        export_lerobot=False,
    )
    recorded = vlmrl.record(record, robots={"my_twin": my_twin})
    store = recorded.outputs["episodes"]
    assert recorded.metrics == {"episodes": 1} and (store / "zarr.json").is_file()
    with pytest.raises(RobotError, match="my_twin"):  # nothing stays registered after the call
        vlmrl.record(dataclasses.replace(record, out_dir=tmp_path / "again"))

    scorer = ConstantScorer(0.75)
    score = vlmrl.ScoreConfig(
        episodes=store, clip_length=3, clip_stride=1, aux=AuxRewardConfig(kind="scaled")
    )
    scored = vlmrl.score(score, scorer=scorer)
    assert scorer.closed and len(scorer.prompts) == 1
    summary = json.loads(scored.outputs["summary"].read_text())
    assert summary["scorer_id"] == "constant" and summary["episodes"][0]["mean_score"] == pytest.approx(0.75)
    attrs = json.loads((store / "scores" / "constant" / "zarr.json").read_text())
    assert attrs["node_type"] == "array"
    # One aux weight: the stored aux reward is unweighted; a second weight is refused in one line.
    with pytest.raises(ConfigError, match="unweighted"):
        vlmrl.score(dataclasses.replace(score, aux=AuxRewardConfig(weight=2.0)), scorer=ConstantScorer(0.5))
