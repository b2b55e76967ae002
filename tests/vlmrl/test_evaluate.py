"""vlmrl evaluate: an exported policy over the held-out perturbation grid of the twin."""

from __future__ import annotations

import dataclasses
import json

import gymnasium as gym
import numpy as np
import pytest
from PIL import Image

from agents.config import SACConfig
from agents.export import export_policy
from agents.sac import SAC
from robot.config import SO101_JOINT_KEYS, SO101_JOINT_LIMITS
from sim.config import SimConfig
from sim.randomization import FACTORS, PRESETS
from vlmrl import cli
from vlmrl.deployment import policy_episodes
from vlmrl.evaluation import perturbation_grid
from vlmrl.pipelines import evaluate

ACTIONS = gym.spaces.Box(
    np.array([SO101_JOINT_LIMITS[k][0] for k in SO101_JOINT_KEYS], np.float32),
    np.array([SO101_JOINT_LIMITS[k][1] for k in SO101_JOINT_KEYS], np.float32),
)
OBS = {"pixels/front": ((48, 48, 3), np.dtype(np.uint8))} | {
    k: ((1,), np.dtype(np.float32)) for k in SO101_JOINT_KEYS
}


def export(tmp_path, suite="so101"):
    sac = SAC(SACConfig(hidden_dims=(32, 32), pixel=SACConfig().pixel), OBS, ACTIONS)
    sim = SimConfig(task="reach", cameras=("front",), image_size=48, control_hz=20.0)
    run = policy_episodes.policy_run_info(sim, "robot") | {"suite": suite}
    return export_policy(sac, tmp_path / "policy.pt", run=run)


def config(tmp_path, policy, **overrides):
    cfg = evaluate.Config(
        policy=policy, perturb="medium", episodes=2, max_episode_steps=3, views=2, out_dir=tmp_path / "eval"
    )
    return dataclasses.replace(cfg, **overrides)


def test_the_grid_has_a_row_per_factor_on_the_same_starts_with_held_out_draws(tmp_path):
    cfg = config(tmp_path, export(tmp_path))
    assert evaluate.main(cfg) == 0
    record = json.loads((cfg.out_dir / "evaluate.json").read_text())
    ranges = PRESETS["medium"]
    rows = record["rows"]
    assert list(rows) == ["nominal", *[f for f in FACTORS if getattr(ranges, f)], "all"]
    seeds = [e["seed"] for e in rows["nominal"]]
    assert all([e["seed"] for e in row] == seeds for row in rows.values())
    assert all(e["steps"] == 3 for row in rows.values() for e in row)
    for e in rows["cube_mass_frac"]:  # beyond the training range, every other factor nominal
        p = e["perturbation"]
        assert abs(p["cube_mass_scale"] - 1) >= ranges.cube_mass_frac
        assert p["friction_scale"] == 1.0 and p["latency_steps"] == 0 and p["light_scale"] == 1.0
    assert all(e["perturbation"]["latency_steps"] == 2 for e in rows["all"])
    assert all(e["perturbation"]["texture_contrast"] >= ranges.texture > 0 for e in rows["texture"])
    assert all(e["perturbation"]["texture_contrast"] == 0 for e in rows["cube_mass_frac"])
    assert all(e["perturbation"]["cube_mass_scale"] == 1.0 for e in rows["nominal"])
    summary = record["summary"]
    assert summary["overall (perturbed rows)"]["episodes"] == 2 * (len(rows) - 1)
    table = (cfg.out_dir / "evaluate.md").read_text()
    assert all(f"| {name} | 2 |" in table for name in rows)
    views = np.asarray(Image.open(cfg.out_dir / "perturbed_views.png"))
    assert views.shape[0] > views.shape[1]  # a row per factor, nominal and all, 2 views each
    assert json.loads((cfg.out_dir / "config.json").read_text())["perturb"] == "medium"


def test_the_same_seed_gives_the_same_grid_and_another_seed_another(tmp_path):
    policy = export(tmp_path)
    runs = []
    for i, seed in enumerate((3, 3, 4)):
        cfg = config(tmp_path, policy, factors=("color", "camera_rot_deg"), episodes=1, seed=seed, views=0)
        cfg = dataclasses.replace(cfg, out_dir=tmp_path / f"e{i}")
        evaluate.main(cfg)
        runs.append(json.loads((cfg.out_dir / "evaluate.json").read_text())["rows"])
    assert runs[0] == runs[1]
    assert runs[0]["color"][0]["perturbation"] != runs[2]["color"][0]["perturbation"]


def test_robot_unit_runs_the_policy_on_the_twins_units_after_the_nominal_one(tmp_path, capsys):
    """`--robot.unit b`: the robot path (LeRobotEnv around the twin of unit b) on the grid's start states, with
    the nominal unit first; episodes as long as the policy's training episodes unless told."""
    from sim.units import UNITS

    policy = export(tmp_path)
    args = ["evaluate", "--policy", str(policy), "--episodes", "2", "--views", "1", "--robot.unit", "b"]
    assert cli.main([*args, "--max-episode-steps", "3", "--out-dir", str(tmp_path / "u")]) == 0
    record = json.loads((tmp_path / "u" / "units.json").read_text())
    assert list(record["rows"]) == ["nominal", "b"]
    seeds = [e["seed"] for e in record["rows"]["nominal"]]
    assert seeds == [e["seed"] for e in record["rows"]["b"]] == perturbation_grid.GridSpec(episodes=2).seeds()
    assert all(e["steps"] == 3 for row in record["rows"].values() for e in row)
    assert record["units"]["b"]["zero_offset"] == UNITS["b"].zero_offset
    assert record["units"]["nominal"]["latency_steps"] == 0
    assert set(record["summary"]["b"]) >= {"success_rate", "vs_nominal", "safety_clips_per_episode"}
    assert "| b | 2 |" in (tmp_path / "u" / "units.md").read_text() and "| b | 2 |" in capsys.readouterr().out
    views = np.asarray(Image.open(tmp_path / "u" / "unit_views.png"))
    nominal_view, unit_view = views[:48, 150:198], views[50:98, 150:198]
    assert np.abs(nominal_view.astype(int) - unit_view.astype(int)).mean() > 2  # its camera and light
    assert (tmp_path / "u" / "units" / "b" / "safety.jsonl").is_file()
    assert not (tmp_path / "u" / "evaluate.json").exists()  # no perturbation grid
    # Left out, the episode length is the policy's (reach trains on 50-step episodes).
    assert cli.main([*args, "--episodes", "1", "--views", "0", "--out-dir", str(tmp_path / "v")]) == 0
    rows = json.loads((tmp_path / "v" / "units.json").read_text())["rows"]
    assert all(e["steps"] == 50 or e["success"] for row in rows.values() for e in row)


def test_robot_unit_factors_runs_the_unit_and_each_of_its_factors_alone_and_left_out(tmp_path):
    from sim.units import FACTORS
    from vlmrl.evaluation.units import unit_names

    names = unit_names(("a/factors",))
    assert names[:2] == ["nominal", "a"] and len(names) == 2 + 2 * len(FACTORS)
    assert "a/only-light" in names and "a/no-latency" in names
    policy = export(tmp_path)
    args = [
        "evaluate",
        "--policy",
        str(policy),
        "--episodes",
        "1",
        "--views",
        "0",
        "--max-episode-steps",
        "2",
    ]
    assert cli.main([*args, "--robot.unit", "a/only-light", "--out-dir", str(tmp_path / "u")]) == 0
    record = json.loads((tmp_path / "u" / "units.json").read_text())
    assert list(record["rows"]) == ["nominal", "a/only-light"]
    assert (
        record["units"]["a/only-light"]["latency_steps"] == 0
        and not record["units"]["a/only-light"]["zero_offset"]
    )
    assert record["units"]["a/only-light"]["perturbation"]["light_scale"] < 1


def test_success_is_summarised_per_row_and_against_the_nominal_twin():
    def episodes(*successes):
        return [{"success": s, "return": float(s)} for s in successes]

    summary = perturbation_grid.summarise(
        {"nominal": episodes(1, 1, 1, 0), "light_frac": episodes(1, 0, 0, 0), "all": episodes(0, 0, 0, 0)}
    )
    assert summary["nominal"]["success_rate"] == 0.75
    assert summary["light_frac"]["vs_nominal"] == pytest.approx(1 / 3)
    assert summary["overall (perturbed rows)"]["success_rate"] == 0.125
    assert summary["overall (perturbed rows)"]["vs_nominal"] == pytest.approx(1 / 6)
    never = perturbation_grid.summarise({"nominal": episodes(0), "all": episodes(1)})
    assert never["all"]["vs_nominal"] is None
    assert "| all | 1 | 100% | - |" in perturbation_grid.markdown_table(never, perturbation_grid.GridSpec())


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--perturb", "wild"], "--perturb 'wild': unknown preset"),
        (["--factors", "gravity"], "unknown factor(s) ['gravity']"),
        (["--perturb", "light", "--episodes", "0"], "--episodes 0: expected at least 1"),
        (["--scorer", "scorer:nope"], "--scorer 'scorer:nope': not a scorer"),
        (["--robot.unit", "z"], "--robot.unit 'z': sim_so101 unit 'z' unknown"),
    ],
)
def test_bad_options_fail_in_one_line(tmp_path, capsys, args, message):
    policy = export(tmp_path)
    assert cli.main(["evaluate", "--policy", str(policy), "--out-dir", str(tmp_path / "o"), *args]) == 1
    err = capsys.readouterr().err
    assert message in err and err.count("\n") == 1
    assert not (tmp_path / "o").exists()


def test_a_missing_file_or_a_policy_from_another_suite_is_refused(tmp_path, capsys):
    assert cli.main(["evaluate", "--policy", str(tmp_path / "missing.pt")]) == 1
    assert "no such file" in capsys.readouterr().err
    policy = export(tmp_path, suite="robosuite")
    assert cli.main(["evaluate", "--policy", str(policy), "--out-dir", str(tmp_path / "o")]) == 1
    assert "trained in 'robosuite'" in capsys.readouterr().err


def test_a_scorer_gets_an_auc_per_row_from_the_frames_the_perturbed_twin_rendered(tmp_path):
    from sim import make_env
    from sim.so101.scripted import ScriptedPolicy
    from vlm import make_scorer
    from vlm.config import OracleConfig

    env = make_env(SimConfig(task="lift", cameras=("front",), image_size=32, max_episode_steps=60))
    expert = ScriptedPolicy(env)

    def policy(obs):
        if env.unwrapped._steps == 0:  # a new episode: the expert starts its phases again
            expert.reset()
        return expert.act(obs)

    spec = perturbation_grid.GridSpec(perturb="medium", factors=("color",), episodes=2, views=0)
    result = perturbation_grid.run_grid(env, policy, spec, make_scorer(OracleConfig()), "oracle")
    env.close()
    summary = result.summary
    assert summary["nominal"]["success_rate"] == 1.0  # the expert lifts: windows of both labels
    # The oracle reads the twin's progress, which colours do not change: it ranks windows well everywhere.
    for name in ("nominal", "color", "all", "overall (perturbed rows)"):
        assert summary[name]["scorer_auc"] > 0.8, name
    scores, labels = perturbation_grid.window_scores(
        make_scorer(OracleConfig()), "q", perturbation_grid.ScorerView("front", 32), 8, 2
    )
    assert len(scores) == len(labels) == 0
    assert perturbation_grid.auc_or_none(np.array([0.1, 0.9]), np.array([True, True])) is None
    table = perturbation_grid.markdown_table(summary, spec)
    assert "scorer AUC |" in table and "`oracle`" in table


def test_train_evaluate_perturb_adds_the_grid_to_the_report_and_a_bad_preset_fails_before_training(tmp_path):
    from agents.config import SACConfig as Agent
    from buffer.config import BufferConfig
    from vlmrl.errors import ConfigError
    from vlmrl.pipelines.train import TrainConfig, main

    cfg = TrainConfig(
        sim=SimConfig(task="reach", reward="shaped", action_mode="delta", cameras=(), max_episode_steps=5),
        agent=Agent(hidden_dims=(16, 16)),
        buffer=BufferConfig(capacity_steps=200),
        replay="uniform",
        total_steps=20,
        learning_starts=10,
        batch_size=8,
        eval_episodes=1,
        video_episodes=0,
        run_dir=str(tmp_path / "run"),
        progress=False,
        evaluate_perturb="light",
    )
    assert main(cfg) == 0
    report = (tmp_path / "run" / "report.md").read_text()
    assert "## Held-out perturbations (`--evaluate-perturb light`)" in report and "| all | 1 |" in report
    record = json.loads((tmp_path / "run" / "perturbed.json").read_text())
    factors = [f for f in FACTORS if getattr(PRESETS["light"], f)]  # texture among them
    assert record["perturb"] == "light" and list(record["rows"]) == ["nominal", *factors, "all"]
    with pytest.raises(ConfigError, match="--evaluate-perturb 'wild': unknown preset"):
        main(dataclasses.replace(cfg, evaluate_perturb="wild", run_dir=str(tmp_path / "bad")))
    assert not (tmp_path / "bad").exists()


def test_a_learned_scorer_scores_the_grid_at_its_size_or_refuses_another_in_one_line(tmp_path, capsys):
    from sim.so101.tasks import TASKS
    from vlm.backends.learned import build_net, save_learned
    from vlm.prompts import prompt_hash, scorer_prompt

    prompt = scorer_prompt(TASKS["reach"]().description, "learned")
    policy = export(tmp_path)  # renders the front camera at 48 px
    for side in (48, 64):
        meta = dict(
            camera="front", image_hw=[side, side], num_frames=4, width=4, prompt=prompt, labels="random"
        )
        save_learned(tmp_path / f"s{side}.pt", build_net(4, 4), {**meta, "prompt_hash": prompt_hash(prompt)})
    args = ["evaluate", "--policy", str(policy), "--factors", "color", "--episodes", "1", "--views", "0"]
    args += ["--max-episode-steps", "3"]
    good = [
        *args,
        "--out-dir",
        str(tmp_path / "good"),
        "--scorer",
        f"scorer:learned --scorer.path {tmp_path / 's48.pt'}",
    ]
    assert cli.main(good) == 0
    assert "scorer AUC" in (tmp_path / "good" / "evaluate.md").read_text()
    summary = json.loads((tmp_path / "good" / "evaluate.json").read_text())["summary"]
    # Three steps of an untrained policy never succeed: one label only, so no AUC (None) in any row.
    assert [row["scorer_auc"] for row in summary.values()] == [None] * 4
    bad = [
        *args,
        "--out-dir",
        str(tmp_path / "bad"),
        "--scorer",
        f"scorer:learned --scorer.path {tmp_path / 's64.pt'}",
    ]
    assert cli.main(bad) == 1
    err = capsys.readouterr().err
    assert "fitted on camera 'front' at 64x64 px, these frames are camera 'front' at 48x48 px" in err
    assert err.count("\n") == 1
