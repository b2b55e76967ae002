"""The registered grid of issue #35 (results/vlm-replay/README.md): every cell's commands parse through the
CLI they go to (nothing runs), `--cell NAME --seed S --dry-run` prints them, the cells match the README,
and the Meta-World recorder writes a store `vlmrl scorer fit` opens with its labels."""

from __future__ import annotations

import shlex
from pathlib import Path

import metaworld_recordings
import numpy as np
import pytest
import replay_experiment
from replay_experiment import CELLS, Cell, cell_commands, main, prepare_commands

from tests.test_docs_commands import DocCommand, check_command

ROOT = Path(__file__).resolve().parents[2]
OUT = Path("results/vlm-replay")


@pytest.mark.parametrize("name", sorted(CELLS))
def test_every_registered_cells_commands_parse_through_their_cli(name: str) -> None:
    cell = CELLS[name]
    commands = cell_commands(cell, 3, OUT)
    train = commands[-1]
    assert train[:2] == ["vlmrl", "train"] and "--seed" in train and train[train.index("--seed") + 1] == "3"
    for command in commands:
        if command[0] == "vlmrl":
            check_command(DocCommand(ROOT / "benchmarks" / "replay_experiment.py", 0, shlex.join(command)))
        else:
            assert command[:2] == ["python", "benchmarks/metaworld_recordings.py"]
            args = metaworld_recordings.parser().parse_args(command[2:])
            assert args.task == cell.task and args.image_size == 64
    assert bool(prepare_commands(cell, OUT)) == name.endswith("vlm-learned")


def test_cell_names_follow_the_scheme_and_runs_never_share_a_directory() -> None:
    names = {cell.spec(0, OUT).name for cell in CELLS.values()}
    assert len(names) == len(CELLS)
    for name, cell in CELLS.items():
        parts = name.split("/")
        assert parts[0] in ("metaworld", "twin") and parts[-1] in replay_experiment.METAWORLD_CONDITIONS
        demos = next((int(p.removeprefix("demos")) for p in parts if p.startswith("demos")), 0)
        assert demos == cell.demo_episodes
    # the example, and the registered sizes: 8 candidates x 2 demo levels x 5, 2 x 3 x 3
    assert "metaworld/drawer-open/vlm-learned" in CELLS
    assert len([n for n in CELLS if n.startswith("metaworld/")]) == 8 * 2 * 5
    assert len([n for n in CELLS if n.startswith("twin/")]) == 2 * 3 * 3


def test_the_readme_registers_the_same_cells() -> None:
    readme = (ROOT / "results" / "vlm-replay" / "README.md").read_text()
    for task in replay_experiment.METAWORLD_CANDIDATES:
        assert f"`{task}`" in readme, task
    for condition in replay_experiment.METAWORLD_CONDITIONS:
        assert f"`{condition}`" in readme, condition
    for figure in ("50,000", "5,000", "20,000", "2,500"):
        assert figure in readme


def test_cell_settings_are_the_registered_ones() -> None:
    cell = CELLS["metaworld/drawer-open/vlm-oracle-noise0.2"]
    train = cell_commands(cell, 0, OUT)[-1]
    joined = " ".join(train)
    for option in ("--sim.suite=metaworld", "--sim.terminate-on-success", "--buffer.absorbing-terminal",
                   "--sim.reward sparse", "--replay vlm", "--total-steps 50000", "--demo-episodes 0",
                   "scorer:oracle --scorer.noise 0.2"):  # fmt: skip
        assert option in joined, option
    twin = cell_commands(CELLS["twin/place/demos25/vlm-learned"], 1, OUT)
    assert "--policy-obs=robot" in twin[-1] and "--agent.bc-weight=0.4" in twin[-1]
    assert twin[-1][-3:] == ["scorer:learned", "--scorer.path", "results/vlm-replay/students/twin-place.pt"]
    assert "--agent.bc-weight=0.4" not in cell_commands(CELLS["twin/lift/demos0/uniform"], 1, OUT)[-1]


def test_metaworld_cells_without_a_scorer_render_no_frame_and_the_others_the_corner_camera() -> None:
    """Amendment 1 (results/vlm-replay/README.md): uniform and PER store no frame; clips need the camera."""
    for name, cell in CELLS.items():
        if not name.startswith("metaworld/"):
            continue
        train = cell_commands(cell, 0, OUT)[-1]
        cameras = train[train.index("--sim.cameras") + 1]
        if name.rsplit("/", 1)[1] in ("uniform", "per"):
            assert cameras.startswith("--"), name  # the option given no camera
        else:
            assert cameras == "corner", name
    assert "amendment 1" in (ROOT / "results" / "vlm-replay" / "README.md").read_text().lower()


def test_dry_run_prints_the_commands_and_runs_nothing(tmp_path, capsys) -> None:
    out = tmp_path / "grid"
    assert (
        main(["--cell", "metaworld/drawer-open/vlm-learned", "--seed", "3", "--dry-run", "--out", str(out)])
        == 0
    )
    lines = capsys.readouterr().out.splitlines()
    assert lines == [shlex.join(c) for c in cell_commands(CELLS["metaworld/drawer-open/vlm-learned"], 3, out)]
    assert lines[0].startswith("python benchmarks/metaworld_recordings.py drawer-open-v3")
    assert lines[-1].startswith("vlmrl train --sim.task drawer-open-v3") and "--seed 3" in lines[-1]
    assert not out.exists()
    # a student already made is not made again
    (out / "students").mkdir(parents=True)
    (out / "students" / "metaworld-drawer-open.pt").write_bytes(b"")
    assert (
        main(["--cell", "metaworld/drawer-open/vlm-learned", "--seed", "3", "--dry-run", "--out", str(out)])
        == 0
    )
    assert [line.split()[:2] for line in capsys.readouterr().out.splitlines()] == [["vlmrl", "train"]]


def test_bad_cell_options_say_what_is_wrong(capsys) -> None:
    with pytest.raises(SystemExit, match=r"--cell metaworld/drawer-open/vlm: not a registered cell; e\.g\. "):
        main(["--cell", "metaworld/drawer-open/vlm", "--seed", "0", "--dry-run"])
    with pytest.raises(SystemExit):
        main(["--cell", "twin/lift/demos5/uniform"])
    assert "--cell NAME and --seed S go together" in capsys.readouterr().err


def test_the_default_grid_is_unchanged() -> None:
    spec = Cell(
        name="x", task="lift", mode="uniform", noise=0.0, demo_episodes=0, total_steps=10, eval_every_steps=5,
        eval_episodes=1, train_args=(), variant="",
    ).spec(0, OUT)  # fmt: skip
    assert spec.name == "lift-ln-uniform-noise0-aux0-seed0-steps10" and spec.cell == "x"


@pytest.mark.slow
def test_meta_world_recordings_hold_labelled_successes_and_failures(tmp_path) -> None:
    from vlmrl.scorers.evaluation import Recording

    summary = metaworld_recordings.record(
        "reach-v3", tmp_path / "rec", episodes=3, image_size=24, max_episode_steps=100
    )
    assert summary["successes_by_noise"]["0"] == "1/1"  # the clean expert reaches in 39-74 steps (seeds 0-4)
    source = Recording(tmp_path / "rec" / "episodes.zarr")
    try:
        assert source.camera == "corner" and source.image_hw == (24, 24)
        assert set(source.info_keys) >= {"success", "progress"}
        assert "reach" in source.task and len(source.episodes()) == 3
        success = source.buffer.storage.read("info/success", np.arange(0, 100))
        assert success.any()  # the first episode (no noise) succeeded and its steps say so
    finally:
        source.close()
    with pytest.raises(Exception, match="exists: record into a new folder"):
        metaworld_recordings.record("reach-v3", tmp_path / "rec", episodes=1, image_size=24)


def test_a_student_is_prepared_once_and_a_failed_recording_is_never_overwritten(tmp_path) -> None:
    cell = CELLS["metaworld/reach/vlm-learned"]
    student = tmp_path / cell.student
    make = [["python", "-c", f"import pathlib; pathlib.Path({str(student)!r}).write_bytes(b'fitted')"]]
    replay_experiment.prepare_student(cell, tmp_path, make)
    assert student.read_bytes() == b"fitted"
    student.write_bytes(b"kept")
    replay_experiment.prepare_student(cell, tmp_path, make)  # made already: nothing runs
    assert student.read_bytes() == b"kept"
    student.unlink()
    (tmp_path / "recordings" / "metaworld-reach").mkdir(parents=True)
    with pytest.raises(
        SystemExit, match=r"recordings/metaworld-reach exists but .*metaworld-reach\.pt does not"
    ):
        replay_experiment.prepare_student(cell, tmp_path, make)
    assert not student.exists()
