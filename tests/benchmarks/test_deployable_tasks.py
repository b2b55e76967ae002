"""benchmarks/deployable_tasks.py: the per-task figures the README table and issue #32 read."""

from __future__ import annotations

import json

import deployable_tasks
import pytest


def record(task: str, seed: int, curve: list[float]) -> dict[str, object]:
    return {
        "task": task,
        "seed": seed,
        "steps": 30_000,
        "final_success": curve[-1],
        "best_minus_last3": max(curve) - sum(curve[-3:]) / 3,
        "commit": "abc1234",
        "cpu": "AMD EPYC",
    }


def test_summary_averages_final_success_and_the_collapse_figure_over_seeds() -> None:
    runs = [record("lift", 0, [0.2, 0.9, 0.6, 0.6, 0.6]), record("lift", 1, [0.5, 0.8, 0.8, 0.8, 1.0])]
    figures = deployable_tasks.summarize(runs)
    lift = figures["tasks"]["lift"]
    assert lift["final_success"] == pytest.approx(0.8)
    assert lift["best_minus_last3"] == pytest.approx((0.3 + (1.0 - 2.6 / 3)) / 2, abs=1e-4)
    assert lift["seeds"] == [0, 1] and lift["steps"] == [30_000]
    assert lift["commit"] == ["abc1234"] and lift["cpu_model"] == ["AMD EPYC"]
    assert figures["runs"] == runs


def test_a_new_run_uses_the_recipe_and_an_interrupted_one_resumes(tmp_path) -> None:
    argv = deployable_tasks.train_argv("push", 3, tmp_path / "push-s3", [])
    assert argv[:5] == ["train", "--recipe", "deployable", "--sim.task", "push"] and "3" in argv
    (tmp_path / "push-s3" / "checkpoint").mkdir(parents=True)
    assert deployable_tasks.train_argv("push", 3, tmp_path / "push-s3", [])[:3] == [
        "train",
        "--resume",
        str(tmp_path / "push-s3"),
    ]


def test_fresh_seed_figures_are_averaged_when_the_runs_were_re_evaluated() -> None:
    runs = [record("lift", 0, [0.2, 0.9, 0.6, 0.6, 0.6]), record("lift", 1, [0.5, 0.8, 0.8, 0.8, 1.0])]
    for run, (best, final) in zip(runs, [(0.7, 0.74), (0.8, 0.7)]):
        run.update(
            fresh_episodes=100, fresh_best=best, fresh_final=final, fresh_best_minus_final=best - final
        )
    lift = deployable_tasks.summarize(runs)["tasks"]["lift"]
    assert lift["fresh_final_success"] == pytest.approx(0.72)
    assert lift["fresh_best_minus_final"] == pytest.approx((-0.04 + 0.1) / 2, abs=1e-4)
    assert lift["fresh_episodes"] == [100]
    assert (
        "fresh_final_success" not in deployable_tasks.summarize([record("reach", 0, [1.0])])["tasks"]["reach"]
    )


def test_train_args_reach_every_new_run_and_the_summary_names_them(tmp_path, monkeypatch) -> None:
    seen: list[list[str]] = []
    monkeypatch.setattr(deployable_tasks, "run_one", lambda task, seed, run_dir, extra: seen.append(extra))
    code = deployable_tasks.main(
        [
            "--tasks",
            "lift",
            "--seeds",
            "0",
            "1",
            "--runs-dir",
            str(tmp_path),
            "--train-args",
            "--agent.target-entropy -3",
        ]
    )
    assert code == 1  # nothing finished: the patched runner trained nothing
    assert seen == [["--agent.target-entropy", "-3"]] * 2
    assert json.loads((tmp_path / "lift-s0" / "provenance.json").read_text())["train_args"] == seen[0]
    lever = [dict(record("lift", s, [0.5]), train_args=seen[0]) for s in (0, 1)]
    assert deployable_tasks.summarize(lever)["tasks"]["lift"]["train_args"] == ["--agent.target-entropy -3"]
    plain = [dict(record("lift", 0, [0.5]), train_args=[]), record("lift", 1, [0.5])]  # older runs: no key
    assert "train_args" not in deployable_tasks.summarize(plain)["tasks"]["lift"]
