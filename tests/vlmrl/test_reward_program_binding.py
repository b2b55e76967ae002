"""A verification record holds for the program it verified only (issue #36, item 1): training trusted any
file saying ``"status": "verified"`` (a hand-made one whose program is ``return True`` was accepted).
Verification now stores the sha256 of the program and of the checker; `vlmrl train --reward-program`
refuses a record that does not match, in one line, before anything is written."""

from __future__ import annotations

import contextlib
import dataclasses
import io
import json
from pathlib import Path

import pytest

from vlm.reward_program import RewardProgram, Subtask, load_program, save_program, verification_problem
from vlm.reward_program import program as program_module
from vlmrl import cli
from vlmrl.pipelines.reward_program import VerifyCommand, VerifySettings, run_verify

LIFT = Path(__file__).resolve().parents[2] / "examples" / "reward_programs" / "lift.json"
TRAIN = [
    "--sim.task", "lift", "--sim.cameras", "--sim.max-episode-steps", "20", "--replay", "uniform",
    "--total-steps", "20", "--learning-starts", "10", "--batch-size", "4", "--eval-episodes", "1",
    "--video-episodes", "0", "--agent.hidden-dims", "8", "8", "--no-progress",
]  # fmt: skip
"""A tiny state-only lift run of `vlmrl train` (reaches the program check in seconds)."""


def train(*args: str) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = cli.main(["train", *TRAIN, *args])
    return code, out.getvalue(), err.getvalue()


def forged(path: Path) -> Path:
    """The issue's probe: a hand-made file claiming verification for a program that is always done."""
    program = RewardProgram(
        task="lift",
        subtasks=(Subtask("done", "always", "def check(obs):\n    return True\n"),),
        author="person",
        verification={"passed": True, "verdict": "PASS on 10 expert and 10 random episodes"},
        status="verified",
    )
    return save_program(program, path)


def test_a_forged_verified_file_is_refused_in_one_line_and_nothing_is_written(tmp_path) -> None:
    run = tmp_path / "run"
    code, _, err = train("--reward-program", str(forged(tmp_path / "forged.json")), "--run-dir", str(run))
    assert code == 1 and err.count("\n") == 1 and "Traceback" not in err, err
    assert "forged.json: its verification record is not bound to its source" in err
    assert "vlmrl reward-program verify --program" in err
    assert not run.exists()


def test_a_record_holds_for_its_program_and_checker_only(tmp_path, monkeypatch) -> None:
    verified = load_program(LIFT)  # the example, verified with the record bound
    assert verification_problem(verified) == ""
    first = verified.subtasks[0]
    edited = dataclasses.replace(
        verified,
        subtasks=(
            dataclasses.replace(first, source=first.source.replace("0.03", "0.3")),
            *verified.subtasks[1:],
        ),
    )
    assert "sub-tasks changed since it was verified" in verification_problem(edited)
    renamed = dataclasses.replace(
        verified, subtasks=(dataclasses.replace(first, name="x"), *verified.subtasks[1:])
    )
    assert "sub-tasks changed" in verification_problem(renamed)
    path = save_program(edited, tmp_path / "edited.json")
    code, _, err = train("--reward-program", str(path), "--run-dir", str(tmp_path / "run"))
    assert code == 1 and "sub-tasks changed since it was verified" in err and err.count("\n") == 1
    monkeypatch.setattr(program_module, "checker_version", lambda: "0" * 64)
    assert "another version of the checker" in verification_problem(verified)


def test_verify_binds_the_record_and_reports_the_sandbox_with_verbose(tmp_path, capsys) -> None:
    path = forged(tmp_path / "program.json")  # `return True` fails verification (true at the start)
    program = load_program(path)
    good = dataclasses.replace(program, subtasks=load_program(LIFT).subtasks[:1], status="unverified")
    save_program(good, path)
    settings = VerifySettings(expert_episodes=1, random_episodes=1)
    assert run_verify(VerifyCommand(program=path, verification=settings, verbose=True)) == 0
    out = capsys.readouterr().out
    assert "sandbox: user " in out and "sandbox: network: " in out and "sandbox: limits: " in out
    assert "verdict: PASS" in out
    record = json.loads(path.read_text())["verification"]
    assert len(record["program_sha256"]) == 64 and len(record["checker_sha256"]) == 64
    assert verification_problem(load_program(path)) == ""
    run_verify(VerifyCommand(program=path, verification=settings))
    assert "sandbox:" not in capsys.readouterr().out  # only with --verbose


@pytest.mark.parametrize("status", ["unverified", "failed verification"])
def test_unverified_files_are_still_refused_by_their_status(tmp_path, status) -> None:
    program = dataclasses.replace(load_program(LIFT), status=status)
    path = save_program(program, tmp_path / "p.json")
    code, _, err = train("--reward-program", str(path), "--run-dir", str(tmp_path / "run"))
    assert code == 1 and f"the reward program is {status}" in err
