"""The scripts in examples/ run at tiny budgets through the Python API (``import vlmrl``) and do what they say."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import numpy as np
import pytest

ROOT = Path(__file__).resolve().parents[2]


def load_example(name: str):
    spec = importlib.util.spec_from_file_location(f"example_{name}", ROOT / "examples" / f"{name}.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


def stored_columns(store: Path) -> list[str]:
    """Names of the score/aux columns a zarr buffer store holds."""
    return sorted(
        f"{group.name}/{array.name}"
        for group in (store / "scores", store / "aux_reward")
        if group.is_dir()
        for array in group.iterdir()
        if array.is_dir()
    )


def test_replay_sweep_runs_one_training_per_replay_mode(tmp_path):
    success = load_example("replay_sweep").main(["--tiny", "--out", str(tmp_path)])
    assert list(success) == ["uniform", "per", "vlm", "vlm_td"]
    assert all(0.0 <= rate <= 1.0 for rate in success.values())
    for mode in success:
        assert (tmp_path / mode / "policy.pt").is_file()
        assert f"replay: {mode}" in (tmp_path / mode / "report.md").read_text()


def test_a_custom_scorer_scores_the_training_clips(tmp_path):
    example = load_example("custom_scorer")
    frames = np.zeros((2, 32, 32, 3), np.uint8)
    frames[0, 20:24, 10:14, 0] = 200  # the red cube low in the first frame ...
    frames[1, 4:8, 10:14, 0] = 200  # ... high in the last
    rising, falling = example.RedCubeRiseScorer().score([frames, frames[::-1]], "is the cube lifted?")
    assert rising > 0.99 and falling < 0.01
    result = example.main(["--tiny", "--out", str(tmp_path / "run")])
    assert result.policy == tmp_path / "run" / "policy.pt" and result.policy.is_file()
    assert stored_columns(tmp_path / "run" / "buffer.zarr") == ["aux_reward/red-rise", "scores/red-rise"]


def test_a_custom_task_trains_by_name_and_leaves_the_task_table_as_it_was(tmp_path):
    from sim.so101.tasks import TASKS
    from vlmrl.loop.checkpoint import load_checkpoint

    before = dict(TASKS)
    result = load_example("custom_task").main(["--tiny", "--out", str(tmp_path / "run")])
    assert before == TASKS
    checkpoint = load_checkpoint(result.run_dir)
    assert checkpoint["config"].sim.task == "low_reach"
    assert checkpoint["loop"].demo_successes == 1  # the task's scripted strategy reached the low marker
    assert "green ball just above the table" in (tmp_path / "run" / "report.md").read_text()


def test_score_then_finetune_scores_calibrates_trains_and_finetunes_with_the_same_calibration(tmp_path):
    import json

    result = load_example("score_then_finetune").main(["--tiny", "--out", str(tmp_path)])
    assert (tmp_path / "calibration.json").is_file()
    assert result.policy is not None and result.policy.is_file()
    from agents.export import load_policy

    run = load_policy(result.policy).run  # the sim policy's settings, passed on for deploy
    assert (run["task"], run["policy_obs"], run["fine_tuned_from"]) == (
        "reach",
        "robot",
        str(tmp_path / "sim"),
    )
    assert [json.loads(line)["steps"] for line in (tmp_path / "finetune" / "metrics.jsonl").open()] == [
        20,
        20,
    ]
    # Training scored through the fitted calibration; fine-tuning leaves the oracle out (it reads the
    # simulator's progress, which an arm does not give) and says so in its report.
    sim, finetuned = (
        [c for c in stored_columns(tmp_path / run / "buffer.zarr") if c.startswith("scores/")]
        for run in ("sim", "finetune")
    )
    assert len(sim) == 1 and sim[0].startswith("scores/oracle-noise0.2-cal") and finetuned == []
    assert "the sim run's scorer is the oracle" in (tmp_path / "finetune" / "report.md").read_text()


@pytest.fixture(autouse=True)
def _one_thread():
    import torch

    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(threads)
