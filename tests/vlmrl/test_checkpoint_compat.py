"""A run directory written by the code of 2026-12-03 (tests/vlmrl/data/train-run-2026-12-03, see its
README) still loads: its checkpoint through the one loader, its policy file through ``load_policy``, and a
resume finishes the run. Guards moves of the classes a checkpoint pickles by module path (issue 37)."""

from __future__ import annotations

import importlib
import shutil
from pathlib import Path

import numpy as np
import pytest

from agents.export import load_policy
from vlmrl.loop.checkpoint import MOVED_MODULES, load_checkpoint
from vlmrl.loop.learner import LoopState
from vlmrl.online.config import TrainConfig
from vlmrl.online.trainer import Trainer

OLD_RUN = Path(__file__).parent / "data" / "train-run-2026-12-03"


def test_a_checkpoint_of_2026_12_03_loads_with_its_config_and_loop_state() -> None:
    state = load_checkpoint(OLD_RUN, required=("config", "agent", "buffer", "loop"))
    assert isinstance(state["config"], TrainConfig)
    assert state["config"].sim.task == "reach" and state["config"].total_steps == 120
    assert isinstance(state["loop"], LoopState)
    assert state["loop"].step >= 120 and state["loop"].evals  # the run finished with one evaluation
    assert state["policy_obs_spec"] == {"state": ((state["policy_obs_spec"]["state"][0][0],), "float32")}


def test_a_run_of_2026_12_03_resumes_and_finishes(tmp_path: Path, capsys) -> None:
    run = tmp_path / "run"
    shutil.copytree(OLD_RUN, run)
    trainer = Trainer.resume(run)
    assert trainer.state.step >= 120
    outputs = trainer.run()  # total_steps reached: the final evaluation, checkpoint, policy and report
    assert outputs["policy"].is_file() and outputs["report"].is_file()
    assert (
        "holds 0 episodes but the checkpoint was taken at" in capsys.readouterr().out
    )  # no buffer.zarr kept


SCORED_RUN = Path(__file__).parent / "data" / "train-run-2026-12-03-scored"
"""Written by the last code before the app package moved into rooms (see its README)."""


def test_a_scored_checkpoint_of_the_flat_package_loads_with_its_classes() -> None:
    state = load_checkpoint(SCORED_RUN, required=("config", "agent", "buffer", "loop", "scoring"))
    assert isinstance(state["config"], TrainConfig)
    assert state["config"].replay == "vlm_td" and state["config"].scorer.kind == "oracle"
    assert isinstance(state["loop"], LoopState) and state["loop"].step >= 120
    assert sorted(state["scoring"]) == ["episode_scores", "scores"]


@pytest.mark.parametrize("run", [OLD_RUN, SCORED_RUN], ids=["2026-12-03", "flat-package-scored"])
def test_an_old_policy_file_loads_and_acts_within_its_bounds(run: Path) -> None:
    policy = load_policy(run / "policy.pt")
    assert policy.run["task"] == "reach"
    ((key, (shape, _)),) = policy.obs_spec.items()
    action = policy({key: np.zeros(shape, np.float32)})
    assert np.all(action >= policy.action_low) and np.all(action <= policy.action_high)


def test_a_scored_run_of_the_flat_package_resumes_and_finishes(tmp_path: Path) -> None:
    run = tmp_path / "run"
    shutil.copytree(SCORED_RUN, run)
    outputs = Trainer.resume(run).run()
    assert outputs["policy"].is_file() and outputs["report"].is_file()


def test_every_moved_module_has_a_home_and_no_old_file_is_left() -> None:
    """An old path still on disk would be unpickled from stale code; a new path that does not import would fail
    only when an old checkpoint names it."""
    root = Path(__file__).resolve().parents[2]
    for old, new in MOVED_MODULES.items():
        assert not (root / (old.replace(".", "/") + ".py")).is_file(), old
        importlib.import_module(new)
