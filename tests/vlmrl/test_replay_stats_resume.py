"""The replay diagnostics' window is part of the buffer's state: a stopped and resumed `vlmrl train` run logs
the same ``replay/`` windows, at the same steps, as the run that went straight through."""

from __future__ import annotations

import dataclasses
from pathlib import Path

from tests.vlmrl.test_train import assert_same_run, tiny
from vlmrl.loop.checkpoint import load_checkpoint
from vlmrl.pipelines.train import TrainConfig, main


def with_windows(run_dir: Path, **overrides) -> TrainConfig:
    base = tiny(run_dir, **overrides)
    return dataclasses.replace(base, buffer=dataclasses.replace(base.buffer, replay_stats_every=45))


def test_a_resumed_run_logs_the_same_replay_windows(tmp_path: Path) -> None:
    straight, stopped = tmp_path / "straight", tmp_path / "stopped"
    assert main(with_windows(straight)) == 0
    assert main(with_windows(stopped, stop_after_steps=120)) == 0  # mid-window: 45 batches do not divide 60
    assert main(TrainConfig(resume=str(stopped), progress=False)) == 0
    assert_same_run(straight, stopped)
    windows = [row for row in load_checkpoint(stopped)["loop"].train_log if "replay/batches" in row]
    assert len(windows) >= 4 and all(row["replay/batches"] == 45 for row in windows)
