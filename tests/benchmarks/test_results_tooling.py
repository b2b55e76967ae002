"""The experiment analysis maths and the generated results (docs/results.md and the README's list of studies)."""

import importlib
import json
import math
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

ROOT = Path(__file__).resolve().parents[2]


analysis = importlib.import_module("replay_analysis")


def run(mode, noise, seed, successes, steps=(1000, 2000, 3000, 4000)):
    evals = [{"step": float(s), "success_rate": v} for s, v in zip(steps, successes)]
    return {
        "task": "lift", "mode": mode, "noise": noise, "aux_weight": 0.0, "seed": seed,
        "name": f"{mode}-{noise}-{seed}", "evals": evals, "final_success": successes[-1],
    }  # fmt: skip


def test_steps_to_reach_interpolates_and_reports_never():
    steps = np.array([1000.0, 2000.0, 3000.0])
    assert analysis.steps_to_reach(steps, np.array([0.0, 0.2, 0.6]), 0.4) == pytest.approx(2500.0)
    assert analysis.steps_to_reach(steps, np.array([0.5, 0.6, 0.7]), 0.4) == 1000.0
    assert math.isnan(analysis.steps_to_reach(steps, np.array([0.0, 0.1, 0.2]), 0.4))


def test_analysis_compares_each_setting_with_uniform():
    rows = [
        run("uniform", 0.0, 0, [0.0, 0.2, 0.4, 0.5]),
        run("uniform", 0.0, 1, [0.0, 0.2, 0.4, 0.5]),
        run("vlm", 0.2, 0, [0.2, 0.5, 0.7, 0.8]),
        run("vlm", 0.2, 1, [0.2, 0.5, 0.5, 0.6]),
    ]
    summary = analysis.analyse(rows)["lift"]
    vlm = summary["settings"]["vlm noise=0.2"]
    assert summary["uniform_final_success"] == pytest.approx(0.5)
    assert vlm["final_success_mean"] == pytest.approx(0.7)
    assert vlm["success_gain_vs_uniform"] == pytest.approx(0.4)
    assert vlm["steps_to_uniform_final"] == pytest.approx(2000.0)  # the vlm mean curve hits 0.5 at 2000
    assert vlm["step_saving_vs_uniform"] == pytest.approx(0.5)  # uniform needs 4000
    assert vlm["curve"]["ci95"][2] > 0  # seeds disagree at 3000 steps: a band, not a line
    assert vlm["p_vs_uniform"] == pytest.approx(0.2952, abs=1e-4)  # Welch: t = 2 on 1 degree of freedom
    assert analysis.welch_p([0.5, 0.5], [0.5, 0.5]) is None  # no spread at all: no test
    table = analysis.markdown(analysis.analyse(rows))
    assert "| vlm noise=0.2 | 2 | 4,000 | 70% ± 10% | +40% | 2,000 | +50% | 50% |" in table


def test_a_variant_is_compared_with_its_own_uniform_runs_and_plain_uniform_otherwise():
    def variant(row, name):
        return {**row, "variant": name, "name": row["name"] + name}

    rows = [
        run("uniform", 0.0, 0, [0.0, 0.2, 0.4, 0.5]),
        run("uniform", 0.0, 1, [0.0, 0.2, 0.4, 0.5]),
        variant(run("uniform", 0.0, 0, [0.1, 0.4, 0.6, 0.8]), "D"),
        variant(run("uniform", 0.0, 1, [0.1, 0.4, 0.6, 0.8]), "D"),
        variant(run("vlm", 0.0, 0, [0.2, 0.6, 0.8, 0.8]), "D"),
        variant(run("vlm", 0.0, 1, [0.2, 0.6, 0.8, 0.8]), "D"),
        variant(run("per", 0.0, 0, [0.0, 0.2, 0.4, 0.5]), "D"),
        variant(run("vlm", 0.2, 0, [0.0, 0.5, 0.5, 1.0]), "strong"),  # no uniform[strong]: plain uniform
    ]
    settings = analysis.analyse(rows)["lift"]["settings"]
    assert settings["vlm[D] noise=0"]["success_gain_vs_uniform"] == pytest.approx(0.0)  # against uniform[D]
    assert settings["vlm[D] noise=0"]["steps_to_uniform_final"] == pytest.approx(3000.0)
    assert settings["per[D]"]["success_gain_vs_uniform"] == pytest.approx(-0.375)
    assert settings["uniform[D]"]["p_vs_uniform"] is None and "uniform[D]" in settings
    assert settings["vlm[strong] noise=0.2"]["success_gain_vs_uniform"] == pytest.approx(1.0)  # 1.0 vs 0.5


def test_runs_with_demonstrations_are_their_own_variant_with_the_replayed_demo_share():
    plain = [run("uniform", 0.0, 0, [0.0, 0.0, 0.0, 0.0])]
    demos = [
        {**run("uniform", 0.0, 0, [0.0, 0.1, 0.2, 0.2]), "demo_episodes": 25, "demo_share": 0.1},
        {**run("vlm", 0.2, 0, [0.0, 0.2, 0.4, 0.4]), "demo_episodes": 25, "demo_share": 0.3},
    ]
    summary = analysis.analyse(plain + demos)
    assert set(summary) == {"lift", "lift-demos25"}
    assert summary["lift"]["uniform_final_success"] == 0.0
    assert summary["lift-demos25"]["settings"]["vlm noise=0.2"]["success_gain_vs_uniform"] == pytest.approx(
        1.0
    )
    table = analysis.markdown(summary)
    assert "25 scripted demonstrations in the buffer" in table
    assert "| vlm noise=0.2 | 1 | 4,000 | 40% ± 0% | +100% | 2,000 | +33% | 25% | 30.0% |" in table
    plain_table = table.split("**SO-101 twin `lift`, sparse reward, 25")[0]
    assert "replayed demos" not in plain_table


def test_the_results_page_and_readme_list_are_generated_from_the_committed_files():
    proc = subprocess.run(
        [sys.executable, str(ROOT / "benchmarks" / "readme_results.py"), "--check"],
        capture_output=True,
        text=True,
    )
    assert proc.returncode == 0, proc.stderr


def test_a_variant_names_its_runs_and_passes_its_options_to_vlmrl_train(tmp_path):
    import argparse

    experiment = importlib.import_module("replay_experiment")
    common = dict(tasks=["lift"], modes=["uniform", "vlm"], noise=[0.2], aux_weights=[0.0], seeds=[0])
    common.update(total_steps=1000, eval_every_steps=500, eval_episodes=2, demo_episodes=5, layer_norm=False)
    common.update(scorer="scorer:oracle")
    plain = experiment.grid(argparse.Namespace(**common, variant="", train_arg=[]))
    warm = experiment.grid(
        argparse.Namespace(**common, variant="warmup2k", train_arg=["--vlm-sampler.warmup-steps=2000"])
    )
    assert {s.name for s in plain}.isdisjoint({s.name for s in warm})
    vlm = next(s for s in warm if s.mode == "vlm")
    assert vlm.name == "lift-demos5-vlm-warmup2k-noise0.2-aux0-seed0-steps1000"
    command = experiment.train_command(vlm, tmp_path / "run")
    assert "--vlm-sampler.warmup-steps=2000" in command
    assert command[command.index("--demo-episodes") + 1] == "5"
    assert command[command.index("scorer:oracle") + 1 :] == ["--scorer.noise", "0.2", "--scorer.seed", "0"]
    student = {**common, "noise": [0.0], "scorer": "scorer:learned --scorer.path 'a b/s.pt'"}
    learned = experiment.grid(argparse.Namespace(**student, variant="learned", train_arg=[]))
    learned_vlm = next(s for s in learned if s.mode == "vlm")
    command = experiment.train_command(learned_vlm, tmp_path / "run")
    assert command[command.index("scorer:learned") :] == ["scorer:learned", "--scorer.path", "a b/s.pt"]
    assert "scorer:oracle" not in command
    row = {**run("vlm", 0.2, 0, [0.0, 0.1, 0.2, 0.3]), "variant": "warmup2k"}
    assert "vlm[warmup2k] noise=0.2" in analysis.analyse([row])["lift"]["settings"]


def test_experiment_tables_join_the_results_page_with_links_from_docs(tmp_path):
    results = importlib.import_module("readme_results")
    folder = tmp_path / "results" / "scorers"
    folder.mkdir(parents=True)
    (folder / "evaluation.md").write_text("# Scorers\n\n| a |\n|---|\n| 1 |\n\n![roc.png](roc.png)\n")
    text = results.section(tmp_path)
    assert "\n## Scorers that read pixels" in text and "Code as Reward" not in text  # only what exists
    assert "**Scorers**" in text and "\n# Scorers" not in text
    assert "![roc.png](../results/scorers/roc.png)" in text  # relative to docs/
    assert "[results/scorers/README.md](../results/scorers/README.md)" in text
    index = results.index(tmp_path)
    assert "- [Scorers that read pixels: `vlmrl score --evaluate`" in index
    assert "(docs/results.md#scorers-that-read-pixels-vlmrl-score---evaluate-on-held-out" in index
    assert "Code as Reward" not in index


def test_the_generated_part_replaces_only_what_lies_between_its_markers():
    results = importlib.import_module("readme_results")
    page = f"# Results\n\nhand-written\n\n{results.START}\nold\n{results.END}\n\nafter\n"
    assert results.render(page, f"{results.START}\nnew\n{results.END}") == page.replace("old", "new")
    assert results.render("# R\n", "X", results.INDEX_START, results.INDEX_END) == "# R\n\nX\n"


def test_a_benchmark_row_names_the_cpu_and_commit_its_json_records(tmp_path):
    results = importlib.import_module("readme_results")
    figures = {"ratio": 1.3, "details": {"cpu_model": "AMD EPYC", "git_commit": "32effdbddd3a+dirty"}}
    (tmp_path / "sac_vs_sb3.json").write_text(json.dumps(figures))
    (tmp_path / "scoring.json").write_text(json.dumps({"ratio": 2.0, "details": {"steps": 3}}))
    rows = {row.split(" | ")[0][2:]: row for row in results.bench_rows(tmp_path)[2:]}
    assert "ratio=1.3 (on AMD EPYC, at 32effdb) |" in rows["sac_vs_sb3"]
    assert "ratio=2 |" in rows["scoring"] and "(on" not in rows["scoring"]
    assert "not measured yet" in rows["sim_throughput"]


def test_lift_learner_table_groups_runs_by_setting_and_tests_against_a(tmp_path):
    table = importlib.import_module("lift_learner_table")
    for setting, finals in {"A": [0.2, 0.3, 0.4], "D": [0.7, 0.8, 0.75]}.items():
        for seed, final in enumerate(finals):
            run = {
                "name": f"G{setting}-s{seed}", "seed": seed, "curve_success": [0.0, 0.5, final, final],
                "curve_steps": [1, 2, 3, 3],
                "git_commit": "abcdef0123", "tree_clean": True,
            }  # fmt: skip
            (tmp_path / f"G{setting}-s{seed}.json").write_text(json.dumps(run))
    (tmp_path / "probe.json").write_text(
        json.dumps({"name": "S-x-s0", "curve_success": [1.0]})
    )  # not a grid row
    text = table.table(table.load(tmp_path))
    a_row, d_row = text.splitlines()[2:]
    assert "| 0, 1, 2 | 30% ± 10% | 20%, 30%, 40% |" in a_row and "abcdef0 |" in a_row
    assert "75% ± 5%" in d_row
    p = float(d_row.split("|")[6])
    assert 0.0 < p < 0.05  # Welch's t-test of D's finals against A's
    assert a_row.split("|")[5].strip() == "27%"  # mean of 0, 50% and the final (the repeat counted once)


def test_foreign_envs_compares_final_returns_per_task_and_writes_the_table():
    foreign = importlib.import_module("foreign_envs")  # it imports pixel_learning: conftest.py's path

    def fake(learner, seed, final_return, success):
        curve = [{"step": 500.0, "wall_s": 5.0, "success": 0.0, "return": -200.0},
                 {"step": 1000.0, "wall_s": 9.0, "success": success, "return": final_return}]  # fmt: skip
        return {"learner": learner, "suite": "metaworld", "task": "push-v3", "seed": seed,
                "end_s": 10.0 + seed, "returncode": 0, "curve": curve}  # fmt: skip

    runs = [fake("ours", 0, -100.0, 0.5), fake("ours", 1, -120.0, 0.0), fake("sb3", 0, -190.0, 0.0),
            fake("sb3", 1, -180.0, 0.0), {**fake("sb3", 2, 0.0, 1.0), "curve": []}]  # fmt: skip
    row = foreign.summarise(runs, "metaworld", "push-v3")
    assert row["ours_return"] == pytest.approx(-110.0) and row["sb3_return"] == pytest.approx(-185.0)
    assert row["ours_success"] == pytest.approx(0.25) and row["sb3_seeds"] == 2  # a run without a curve
    assert 0.0 < row["return_p"] < 0.1
    details = {"steps": 1000, "seeds": [0, 1], "eval_episodes": 2, "git_commit": "abc", "cpu_model": "cpu",
               "cpu_count": 2, "workers": 2}  # fmt: skip
    text = foreign.table([{"tasks": [row], "details": details}])
    assert "| metaworld push-v3 | 1,000 | -110.0 ± 14.1 | -185.0 ± 7.1 |" in text and "25% ± 35%" in text
    command = foreign.ours_command(
        {**runs[0], "steps": 1000, "eval_every": 500, "eval_episodes": 2, "dir": "d"}
    )
    joined = " ".join(command)
    assert "--sim.suite metaworld --sim.task push-v3" in joined and "--agent.hidden-dims 256 256" in joined
    assert "--policy-obs state" in joined and "--batch-size 256" in joined


def test_the_readme_table_of_the_deployable_recipe_is_generated_from_its_benchmark_json(tmp_path):
    results = importlib.import_module("readme_results")
    deployable = importlib.import_module("deployable_tasks")
    assert "Not measured yet" in results.deployable_table(tmp_path)

    def record(task, seed, final):
        return {"task": task, "seed": seed, "steps": 30000, "final_success": final, "best_minus_last3": 0.1,
                "fresh_final": final, "fresh_best_minus_final": 0.0, "fresh_episodes": 100,
                "commit": "7eb1098abc", "cpu": "Intel(R) Xeon(R) Processor"}  # fmt: skip

    runs = [record("reach", s, 1.0) for s in range(2)] + [
        record("lift", s, f) for s, f in enumerate((0.6, 0.8))
    ]
    (tmp_path / "deployable_tasks.json").write_text(json.dumps(deployable.summarize(runs)))
    table = results.deployable_table(tmp_path)
    assert table.startswith(results.DEPLOYABLE_START) and table.endswith(results.DEPLOYABLE_END)
    reach, lift = (line for line in table.splitlines() if line.startswith(("| reach", "| lift")))
    assert "| **100% ± 0%** | 100%, 100% | 10 points | 100% (100 episodes) | 30,000 | 7eb1098 |" in reach
    assert "| 70% ± 14% | 60%, 80% |" in lift  # below the bar: not bold
