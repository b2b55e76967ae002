"""The replay diagnostics of a real `vlmrl train` run (issue #35): logged under replay/, read back by the
replay experiment's run record and summarised per condition."""

from __future__ import annotations

import dataclasses

import pytest
import replay_experiment as bench

from tests.vlmrl.test_train import tiny
from vlmrl.loop.checkpoint import load_checkpoint
from vlmrl.pipelines.train import main

WINDOW = 40


def test_a_train_run_logs_replay_diagnostics_and_the_experiment_records_them(tmp_path) -> None:
    base = tiny(tmp_path / "run")
    cfg = dataclasses.replace(base, buffer=dataclasses.replace(base.buffer, replay_stats_every=WINDOW))
    assert main(cfg) == 0
    log = load_checkpoint(tmp_path / "run")["loop"].train_log
    windows = [row for row in log if "replay/batches" in row]
    updates = cfg.total_steps - cfg.learning_starts
    assert len(windows) in (updates // WINDOW - 1, updates // WINDOW)  # emitted at episode ends
    for row in windows:
        assert row["replay/batches"] == WINDOW and row["replay/rows"] == WINDOW * cfg.batch_size
        for name in ("progress", "clip_success", "near_success", "episode_success"):  # the env's info
            assert 0 <= row[f"replay/{name}"] <= 1 and 0 <= row[f"replay/buffer_{name}"] <= 1
        assert row["replay/age_median"] >= 0 and 0 < row["replay/buffer_age_mean"] < row["step"]
        assert "replay/score" not in row  # no camera, no scorer
    # PER replays new transitions first (they get the highest priority): younger than the buffer's average
    assert sum(r["replay/age_mean"] for r in windows) < sum(r["replay/buffer_age_mean"] for r in windows)

    diagnostics = bench.replay_diagnostics(tmp_path / "run", cfg.total_steps)
    assert diagnostics["run"]["age_mean"] == pytest.approx(  # every window, the last episode's included
        sum(r["replay/age_mean"] for r in windows) / len(windows), rel=1e-5
    )
    assert set(diagnostics["late"]) == set(diagnostics["run"])
    record = {"name": "reach-per-seed0-steps300", "cell": "", "final_success": 0.5, "replay": diagnostics}
    summary = bench.diagnostics_summary([record, {**record, "name": "reach-per-seed1-steps300"}])
    figures = summary["reach-per-steps300"]
    assert figures["runs"] == 2 and figures["age_ratio"] < 1
    assert "score_gap" not in figures and "progress_gap" in figures
    assert "| reach-per-steps300 | 2 | 50% |" in bench.diagnostics_table(summary)


def test_a_records_wall_clock_is_its_training_time_over_every_invocation(tmp_path) -> None:
    """A results line written again for a finished run (or after a resume) counts the training time that
    `wall_s.txt` summed, not the seconds of the invocation that wrote it."""
    cfg = tiny(tmp_path / "run")
    assert main(cfg) == 0
    spec = bench.RunSpec("reach", "uniform", 0.0, 0.0, 0, cfg.total_steps, cfg.total_steps, 2)
    assert bench.run_record(spec, tmp_path / "run")["wall_s"] == 0.0  # nothing ran through the benchmark
    assert bench.add_wall_s(tmp_path / "run", 40.0) == 40.0  # interrupted after 40 s
    assert bench.add_wall_s(tmp_path / "run", 21.5) == 61.5  # resumed to the end
    assert bench.run_record(spec, tmp_path / "run")["wall_s"] == 61.5
    assert bench.add_wall_s(tmp_path / "run", 0.0) == 61.5  # a later invocation finds it finished
    assert bench.add_wall_s(tmp_path / "missing", 5.0) == 5.0 and not (tmp_path / "missing").exists()
