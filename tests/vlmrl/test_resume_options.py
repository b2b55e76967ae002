"""`vlmrl train --resume RUN` (issue #36, item 3): options that conflict with the stored run are refused in one
line naming them, before anything is written; a finished run is said to be finished and nothing is written."""

from __future__ import annotations

import contextlib
import dataclasses
import hashlib
import io
import shutil
from pathlib import Path

import pytest

from agents.config import SACConfig
from buffer.config import BufferConfig
from sim.config import SimConfig
from vlmrl import cli
from vlmrl.errors import ConfigError
from vlmrl.online.config import TrainConfig
from vlmrl.pipelines.train import main


def tiny(run_dir: Path, **overrides) -> TrainConfig:
    """A state-only reach run of 40 steps (10-step episodes, 16x16 nets, uniform replay, in-RAM buffer)."""
    cfg = TrainConfig(
        sim=SimConfig(task="reach", reward="shaped", action_mode="delta", cameras=(), max_episode_steps=10),
        agent=SACConfig(hidden_dims=(16, 16)), buffer=BufferConfig(capacity_steps=1_000), replay="uniform",
        total_steps=40, learning_starts=20, batch_size=8, eval_every_steps=10_000, eval_episodes=1,
        video_episodes=0, checkpoint_every_steps=10_000, run_dir=str(run_dir), progress=False,
    )  # fmt: skip
    return dataclasses.replace(cfg, **overrides)


@pytest.fixture(scope="module")
def runs(tmp_path_factory) -> dict[str, Path]:
    """A finished run and one stopped half way (its checkpoint at step 20 of 40)."""
    root = tmp_path_factory.mktemp("runs")
    assert main(tiny(root / "finished")) == 0
    assert main(tiny(root / "stopped", stop_after_steps=20)) == 0
    return {"finished": root / "finished", "stopped": root / "stopped"}


def snapshot(run_dir: Path) -> dict[str, tuple[int, str]]:
    """Every file of a run directory: modification time (ns) and sha256."""
    return {
        str(p.relative_to(run_dir)): (p.stat().st_mtime_ns, hashlib.sha256(p.read_bytes()).hexdigest())
        for p in sorted(run_dir.rglob("*"))
        if p.is_file()
    }


def train(*args: str) -> tuple[int, str, str]:
    """`vlmrl train ARGS` in this process: exit code, stdout, stderr."""
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = cli.main(["train", *args])
    return code, out.getvalue(), err.getvalue()


@pytest.mark.parametrize(
    ("args", "named"),
    [
        (
            ["--sim.task", "lift"],
            ["--sim.task lift (the run has reach)"],
        ),  # lift is the default: named on the line
        (["--prior-data", "/nonexistent.zarr"], ["--prior-data /nonexistent.zarr (the run has None)"]),
        (
            ["--buffer.gamma", "0.5", "--agent.no-layer-norm", "--seed", "3"],
            ["--buffer.gamma 0.5", "--seed 3"],
        ),
        (
            ["--sim.cameras", "front", "--replay", "vlm"],
            ["--sim.cameras front (the run has ())", "--replay vlm"],
        ),
        (["scorer:hf"], ["scorer:hf HFConfig (the run has OracleConfig)"]),
        (["--sim.image-size=-5"], ["sim.image_size must be in [1, 2048], got -5 (--sim.image-size)"]),
    ],
)
def test_conflicting_options_are_refused_in_one_line_and_nothing_is_written(runs, args, named) -> None:
    run = runs["stopped"]
    before = snapshot(run)
    code, out, err = train("--resume", str(run), *args)
    assert code == 1 and out == "" and err.count("\n") == 1, (code, out, err)
    assert all(name in err for name in named), err
    assert "--agent.layer-norm" not in err  # given, but the run has it too: no conflict
    assert snapshot(run) == before


def test_the_python_api_refuses_options_that_differ_from_the_default_and_the_run(runs) -> None:
    run = runs["stopped"]
    before = snapshot(run)
    with pytest.raises(
        ConfigError, match=r"conflict with it: --prior-data /nonexistent\.zarr \(the run has None\)\."
    ):
        main(TrainConfig(resume=str(run), prior_data=Path("/nonexistent.zarr"), progress=False))
    with pytest.raises(ConfigError, match=r"--demo True \(the run has False\)"):
        main(TrainConfig(resume=str(run), demo=True, progress=False))
    assert snapshot(run) == before


def test_invocation_options_are_accepted_and_the_run_goes_on(runs, tmp_path) -> None:
    run = tmp_path / "copy"
    shutil.copytree(runs["stopped"], run)
    code, _, err = train(
        "--resume", str(run), "--stop-after-steps", "10", "--no-progress", "--torch-threads", "1"
    )
    assert code == 0, err
    from vlmrl.loop.checkpoint import load_checkpoint

    assert load_checkpoint(run)["loop"].step >= 30


def test_a_finished_run_is_said_finished_and_nothing_is_written(runs) -> None:
    run = runs["finished"]
    before = snapshot(run)
    assert any(name.startswith("tb/") for name in before) and "checkpoint/state.pt" in before
    for extra in ([], ["--stop-after-steps", "5"], ["--no-progress"]):
        code, out, err = train("--resume", str(run), *extra)
        assert code == 0 and err == "", err
        assert "is finished (40 of 40 steps)" in out and out.count("\n") == 1, out
        assert snapshot(run) == before  # no new TensorBoard file, state.pt untouched
    assert main(TrainConfig(resume=str(run), progress=False)) == 0
    assert snapshot(run) == before


def test_given_paths_and_conflicts() -> None:
    from vlmrl.online.resume_check import conflicts, given_paths

    assert given_paths(["--sim.task", "lift", "--agent.no-layer-norm", "--buffer.gamma=0.5", "scorer:hf", "-5"]) == {
        "sim.task", "agent.layer_norm", "buffer.gamma", "scorer",
    }  # fmt: skip
    saved = tiny(Path("run"))
    assert conflicts(dataclasses.replace(saved, progress=True, stop_after_steps=5), saved, {"progress"}) == []
    given = TrainConfig(resume="run")
    assert conflicts(given, saved) == []  # defaults are not options given through the Python API
    assert conflicts(given, saved, {"sim.task"}) == ["--sim.task lift (the run has reach)"]


def test_the_online_part_of_an_offline_run_resumes_with_invocation_options_only() -> None:
    from vlmrl.pipelines.train import resume_config

    given = TrainConfig(offline=Path("data.zarr"), then_online=16, stop_after_steps=5, progress=False, seed=3)
    resumed = resume_config(given, Path("run/online"))
    assert resumed == TrainConfig(resume="run/online", stop_after_steps=5, progress=False)
