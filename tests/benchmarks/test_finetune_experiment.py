"""benchmarks/finetune_experiment.py: the fine-tuning experiment of issue #33, its smallest path end to end."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import finetune_experiment
import pytest

from agents.config import SACConfig
from buffer import BufferConfig
from sim import SimConfig


def row(condition: str, seed: int, success: dict[str, float]) -> dict[str, object]:
    outcomes = {m: [1] * round(10 * s) + [0] * (10 - round(10 * s)) for m, s in success.items()}
    return {
        "condition": condition,
        "seed": seed,
        "curve": {m: {"success": s, "outcomes": outcomes[m]} for m, s in success.items()},
        "episodes": {},
    }


def test_the_summary_gives_mean_spread_and_welch_p_over_seeds_or_over_episodes_with_one_seed() -> None:
    plan = finetune_experiment.Plan(robot_minutes=10, eval_every=5, eval_episodes=10)
    rows = [row("interventions", s, {"5": 0.5 + 0.1 * s, "10": 0.9}) for s in range(3)]
    rows += [row("scratch", s, {"5": 0.0, "10": 0.1 * s}) for s in range(3)]
    figures = finetune_experiment.summarize(rows, {}, plan)
    five = figures["curves"]["interventions"]["success"]["5"]
    assert five["success"] == pytest.approx(0.6) and five["sd"] == pytest.approx(0.1) and five["seeds"] == 3
    p = figures["p_values"]["interventions_vs_scratch"]
    assert p["10"]["over"] == "seeds" and p["10"]["p"] < 0.01
    one_seed = finetune_experiment.summarize([rows[0], rows[3]], {}, plan)["p_values"]
    assert one_seed["interventions_vs_scratch"]["5"] == {
        "p": pytest.approx(0.015, abs=1e-3),
        "over": "episodes (one seed)",
    }


def test_an_episode_counts_in_the_stage_it_began_in_since_a_stage_runs_until_its_minutes_are_spent() -> None:
    plan = finetune_experiment.Plan(robot_minutes=1, eval_every=0.5, eval_episodes=5)
    ends = [(0.2, 1, 40), (0.45, 0, 0), (0.52, 1, 30), (0.8, 0, 0), (1.03, 0, 10)]
    episodes = [
        {
            "robot_minutes": m,
            "success": bool(s),
            "interventions": n,
            "takeovers": int(n > 0),
            "safety_clips": {"max_step": 2},
        }
        for m, s, n in ends
    ]
    periods = finetune_experiment.over_time(episodes, plan)
    assert periods["0.5"] == {
        "episodes": 3, "success": pytest.approx(2 / 3, abs=1e-4), "interventions_per_episode": pytest.approx(23.33),
        "takeovers_per_episode": pytest.approx(0.667), "safety_clips_per_episode": 2.0,
    }  # fmt: skip
    assert periods["1"]["episodes"] == 2 and periods["1"]["interventions_per_episode"] == 5.0


def tiny_reach_policy(run_dir) -> None:
    """`vlmrl train` on twin reach with robot observations and joint-delta actions, a few steps: a policy with
    the deployable recipe's interface, episodes of 6 steps."""
    from vlmrl.pipelines import train

    cfg = train.TrainConfig(
        sim=SimConfig(
            task="reach", cameras=("front",), image_size=32, max_episode_steps=6, action_mode="delta"
        ),
        agent=SACConfig(hidden_dims=(16, 16)),
        policy_obs="robot",
        buffer=BufferConfig(storage="memory", capacity_steps=100),
        total_steps=12,
        learning_starts=8,
        batch_size=4,
        eval_episodes=1,
        video_episodes=0,
        run_dir=str(run_dir),
        progress=False,
    )
    assert train.main(cfg) == 0


@pytest.mark.slow
def test_the_smallest_experiment_runs_every_condition_through_finetune_and_writes_the_figures(
    tmp_path, monkeypatch
) -> None:
    """One evaluation after 12 twin steps of fine-tuning on unit b; the operator takes over after 2 steps under
    0.5 m of tool movement, so the interventions condition has takeovers and keys only has none. The policy run
    is given relative to the working directory, as the results' JSON keep it."""
    tiny_reach_policy(tmp_path / "policy")
    monkeypatch.chdir(tmp_path)
    out = tmp_path / "finetune.json"
    argv = [
        "--tasks", "reach", "--policy-run", "policy", "--unit", "b", "--seeds", "0",
        "--robot-minutes", "0.01", "--eval-every", "0.01", "--eval-episodes", "2", "--jobs", "3",
        "--runs-dir", str(tmp_path / "exp"), "--json", str(out),
        "--finetune-arg=--scripted-operator.stall-steps=2", "--finetune-arg=--scripted-operator.stall-m=0.5",
        "--finetune-arg=--batch-size=4", "--demos", "2", "--cloned-actor-lr", "2e-5",
    ]  # fmt: skip
    assert finetune_experiment.main(argv) == 0
    report = json.loads(out.read_text())
    assert (
        report["lift_before"] is None
        and report["lift_after_30min"] is None
        and report["lift_nominal"] is None
    )
    assert report["reasons"]["lift_before"] == "not measured: --tasks reach"
    assert 0.0 <= report["reach_before"] <= 1.0 and 0.0 <= report["reach_nominal"] <= 1.0
    assert (
        report["reach_after_30min"] is None and "0.01 robot minutes" in report["reasons"]["reach_after_30min"]
    )
    reach = report["reach"]
    assert list(reach["before"]["per_policy"]) == ["policy"]  # as given: no machine's absolute path
    assert all(r["policy_run"] == "policy" for r in reach["runs"])
    assert set(reach["curves"]) == set(finetune_experiment.CONDITIONS)
    for curve in reach["curves"].values():
        assert set(curve["success"]) == {"0.01"} and curve["success"]["0.01"]["seeds"] == 1
    assert len(reach["p_values"]) == 21 and "cloned_vs_scratch_cloned" in reach["p_values"]
    runs = {r["condition"]: r for r in reach["runs"]}
    assert all(r["commit"] and r["cpu"] for r in runs.values())
    ran = json.loads((tmp_path / "exp" / "reach" / "cloned-s0" / "provenance.json").read_text())
    assert (
        ran["commit"] == runs["cloned"]["commit"] and ran["cpu"] == runs["cloned"]["cpu"]
    )  # kept for later collects
    # Each condition's settings reached finetune: its config, and what its operator did.
    demos = tmp_path / "exp" / "reach" / "demos-s0"
    for condition, (fresh, budget) in {
        "interventions": (False, 80),
        "keys_only": (False, 0),
        "scratch": (True, 80),
        "cloned": (False, 80),
        "scratch_cloned": (True, 80),
        "cloned_prior": (False, 80),
        "cloned_keys_only": (False, 0),
    }.items():
        config = json.loads(
            (tmp_path / "exp" / "reach" / f"{condition}-s0" / "finetune" / "config.json").read_text()
        )
        assert config["fresh_agent"] is fresh and config["scripted_operator"]["budget_steps"] == budget
        cloned = condition in finetune_experiment.WITH_DEMOS
        assert (
            (config["prior_data"] == str(demos / "buffer.zarr")) if cloned else config["prior_data"] is None
        )
        assert (config["buffer"]["clone_info_key"] == "intervention") is cloned
        assert config["freeze_encoder"] is (condition in finetune_experiment.SLOW_ACTOR)
        assert config["actor_lr"] == (2e-5 if condition in finetune_experiment.SLOW_ACTOR else None)
        slow = condition in finetune_experiment.SLOW_ACTOR  # its rate falls to a tenth over 15 robot minutes
        assert (config["actor_lr_final_fraction"], config["actor_lr_decay_minutes"]) == (
            (0.1, 15.0) if slow else (1.0, 0.0)
        )
        assert ("--actor-lr" in report["plan"]["conditions_argv"][condition]) is (
            config["actor_lr"] is not None
        )
        assert (config["buffer"]["prior_info_key"] == "intervention") is (condition == "cloned_prior")
        assert config["robot"]["unit"] == "b" and config["operator"] == "scripted"
        periods = runs[condition]["episodes"]
        assert (
            sum(p["episodes"] for p in periods.values()) >= 2
        )  # 6-step episodes (3 once keys only gives up), 12 steps
        takeovers = [p["interventions_per_episode"] for p in periods.values()]
        assert (max(takeovers) == 0) if condition.endswith("keys_only") else (min(takeovers) > 0)
        assert runs[condition]["curve"]["0.01"]["robot_minutes_spent"] >= 0.01
    assert all(r["best_policy"] is None for r in runs.values())  # 2-3 episodes: fewer than --best-window
    assert report["reach_best_policy"] is None and "best_policy.pt" in report["reasons"]["reach_best_policy"]
    # The demonstrations: the expert drove both episodes on the unit, once for both conditions that use them.
    assert runs["cloned"]["demonstrations"] == runs["scratch_cloned"]["demonstrations"]
    assert runs["cloned"]["demonstrations"]["episodes"] == 2
    shown = [json.loads(line) for line in (demos / "metrics.jsonl").read_text().splitlines()]
    assert all(e["interventions"] == e["steps"] for e in shown)
    assert json.loads((demos / "config.json").read_text())["robot"]["unit"] == "b"


def test_the_30_minute_figure_comes_from_the_first_condition_with_takeovers_that_ran() -> None:
    plan = finetune_experiment.Plan(robot_minutes=30, eval_every=10, eval_episodes=20)
    before = {"unit_success": 0.0, "nominal_success": 0.85}
    cloned = {"success": {"10": {"success": 0.6}, "30": {"success": 0.4}}}
    only_cloned = finetune_experiment.headline(
        "lift", {"curves": {"cloned": cloned, "scratch_cloned": cloned}}, before, plan
    )
    assert only_cloned["lift_after_30min"] == 0.4 and only_cloned["lift_after_condition"] == "cloned"
    both = {"curves": {"cloned": cloned, "interventions": {"success": {"30": {"success": 0.1}}}}}
    assert finetune_experiment.headline("lift", both, before, plan)["lift_after_30min"] == 0.1
    none = finetune_experiment.headline("lift", {"curves": {"scratch": cloned}}, before, plan)
    assert none["lift_after_30min"] is None and "no condition" in none["reasons"]["lift_after_30min"]


def test_a_kept_best_policy_is_deployed_on_the_unit_and_summarised_against_the_final_one(tmp_path) -> None:
    tiny_reach_policy(tmp_path / "policy")
    ft_dir = tmp_path / "run" / "finetune"
    ft_dir.mkdir(parents=True)
    plan = finetune_experiment.Plan(robot_minutes=10, eval_every=10, eval_episodes=2)
    assert (
        finetune_experiment.best_policy_figures(ft_dir, "b", plan, tmp_path / "run", tmp_path / "log") is None
    )
    (ft_dir / "best_policy.pt").write_bytes((tmp_path / "policy" / "policy.pt").read_bytes())
    kept = {"episode": 7, "robot_minutes": 1.5, "own_success_rate": 0.25, "window": 4}
    (ft_dir / "best_policy.json").write_text(json.dumps(kept))
    best = finetune_experiment.best_policy_figures(ft_dir, "b", plan, tmp_path / "run", tmp_path / "log")
    assert (
        best is not None and best["episodes"] == 2 and best["kept"] == kept and 0.0 <= best["success"] <= 1.0
    )
    assert (tmp_path / "run" / "eval-best-episode7" / "metrics.json").is_file()
    config = json.loads((tmp_path / "run" / "eval-best-episode7" / "config.json").read_text())
    assert config["robot"]["unit"] == "b"
    # Over seeds: the best policies' mean, where they were kept, and the paired test against the final ones.
    rows = [row("cloned", s, {"10": 0.1 * s}) for s in range(3)]
    for s, r in enumerate(rows):
        r["best_policy"] = {"success": 0.5 + 0.1 * s + 0.05 * (s == 1), "kept": {"robot_minutes": 2.0 + s}}
    figures = finetune_experiment.summarize(rows, {}, plan)
    summary = figures["curves"]["cloned"]["best_policy"]
    assert summary["success"] == pytest.approx(0.6167, abs=1e-4) and summary["seeds"] == 3
    assert summary["final_success"] == pytest.approx(0.1) and summary["kept_at_robot_minutes"] == [
        2.0,
        3.0,
        4.0,
    ]
    assert summary["paired_p_vs_final"] < 0.01
    top = finetune_experiment.headline("lift", figures, {"unit_success": 0.0, "nominal_success": 0.9}, plan)
    assert top["lift_best_policy"] == summary["success"] and "lift_best_policy" not in top["reasons"]


@pytest.mark.parametrize("rate", ["0", "-1e-5", "nan", "inf"])
def test_a_cloned_actor_rate_that_is_not_a_positive_number_is_refused_in_one_line(rate, capsys) -> None:
    with pytest.raises(SystemExit):
        finetune_experiment.main([f"--cloned-actor-lr={rate}"])
    assert f"--cloned-actor-lr must be a positive number, got {float(rate)}" in capsys.readouterr().err


def test_the_slow_actor_conditions_anneal_the_rate_unless_the_plan_keeps_it_constant() -> None:
    plan = finetune_experiment.Plan(robot_minutes=30, eval_every=10, eval_episodes=20)
    assert finetune_experiment.condition_argv("cloned", plan)[-6:] == [
        "--actor-lr", "1e-05", "--actor-lr-final-fraction", "0.1", "--actor-lr-decay-minutes", "15",
    ]  # fmt: skip
    constant = dataclasses.replace(plan, cloned_actor_lr=3e-5, cloned_lr_final_fraction=1.0)
    assert finetune_experiment.condition_argv("cloned_keys_only", constant)[-2:] == ["--actor-lr", "3e-05"]
    assert "--actor-lr" not in finetune_experiment.condition_argv("scratch_cloned", plan)


def test_a_plan_longer_than_the_default_buffer_holds_gets_a_buffer_that_keeps_its_demonstrations() -> None:
    from vlmrl.pipelines import finetune

    assert (
        finetune.Config(from_run=Path("run")).buffer.capacity_steps == finetune_experiment.FINETUNE_CAPACITY
    )
    thirty = finetune_experiment.Plan(robot_minutes=30, eval_every=10, eval_episodes=20)
    assert finetune_experiment.capacity_argv(thirty) == []  # fits finetune's 50,000 rows
    sixty = dataclasses.replace(thirty, robot_minutes=60)
    flag, rows = finetune_experiment.capacity_argv(sixty)
    assert flag == "--buffer.capacity-steps" and int(rows) >= 26 * 301 + 60 * 60 * 20
    argv = finetune_experiment.finetune_argv(Path("run"), "b", "cloned", 0, 10, Path("out"), sixty)
    assert argv[argv.index("--buffer.capacity-steps") + 1] == rows
