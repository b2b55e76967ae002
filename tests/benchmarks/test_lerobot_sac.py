"""benchmarks/lerobot_sac.py: LeRobot's SAC fed our twin's robot observations, updated as its learner does, and
the harness's JSON. torch.compile is replaced by the identity here (eager, the same math): compiling LeRobot's
critic and DrQ shift takes a minute or more on these cores."""

import importlib
import json
import os
import signal
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import torch

from robot.contract import JOINT_KEYS

bench = importlib.import_module("lerobot_sac")


@pytest.fixture(scope="module")
def lr():
    return bench.import_lerobot()


@pytest.fixture()
def eager(monkeypatch):
    monkeypatch.setattr(torch, "compile", lambda fn, *args, **kwargs: fn)


@pytest.fixture(scope="module")
def reach_env():
    from sim import make_env

    cfg = bench.train_config(bench.ours_args("reach", 0, 1000, "unused"))
    env = make_env(cfg.sim)
    yield env
    env.close()


def learner(lr, batch_size=32, **overrides):
    config = bench.lerobot_config(lr, 64, 6, 400, 10, **overrides)
    return bench.LeRobotLearner(config, lr, batch_size, seed=0)


def test_ours_args_parse_to_the_deployable_recipe_and_the_lerobot_side_reads_the_same_env():
    reach = bench.train_config(bench.ours_args("reach", 2, 10_000, "runs/r"))
    assert (reach.recipe, reach.sim.task, reach.sim.action_mode, reach.sim.reward) == (
        "deployable",
        "reach",
        "delta",
        "sparse",
    )
    assert (reach.policy_obs, reach.replay, reach.asymmetric_critic) == ("robot", "uniform", True)
    assert (reach.agent.privileged_aux_weight, reach.demo_episodes, reach.seed) == (1.0, 25, 2)
    assert reach.sim.terminate_on_success and reach.buffer.absorbing_terminal
    lift = bench.train_config(bench.ours_args("lift", 0, 20_000, "runs/l"))
    assert (lift.sim.task, lift.demo_episodes, lift.buffer.gamma, lift.agent.bc_weight) == (
        "lift",
        25,
        0.95,
        0.4,
    )
    assert lift.agent.layer_norm and not lift.agent.bc_q_filter and lift.total_steps == 20_000
    with pytest.raises(ValueError, match="push"):
        bench.ours_args("push", 0, 1, "x")


def test_observation_map_feeds_the_joint_keys_and_the_frame_in_the_layout_the_config_declares(
    lr, reach_env, eager
):
    obs, _ = reach_env.reset(seed=3)
    mapped = bench.ObservationMap(lr)(obs)
    agent = learner(lr)
    features = agent.config.input_features
    assert set(mapped) == set(features) == {"observation.state", "observation.images.front"}
    for key, feature in features.items():
        assert tuple(mapped[key].shape) == (1, *feature.shape) and mapped[key].dtype == torch.float32
    joints = np.array([obs[k][0] for k in JOINT_KEYS], np.float32)
    np.testing.assert_array_equal(mapped["observation.state"][0].numpy(), joints)
    frame = obs["pixels/front"]  # uint8 HxWx3, row 0 at the top -> 3xHxW in [0, 1], same orientation
    np.testing.assert_allclose(
        mapped["observation.images.front"][0].numpy(), frame.transpose(2, 0, 1) / 255.0, atol=1e-6
    )
    assert frame.std() > 0  # a real render, not a blank frame
    sampled, mode = agent.act(mapped, deterministic=False), agent.act(mapped, deterministic=True)
    assert sampled.shape == mode.shape == reach_env.action_space.shape
    assert reach_env.action_space.contains(sampled) and reach_env.action_space.contains(mode)
    np.testing.assert_array_equal(mode, agent.act(mapped, deterministic=True))  # the mode is deterministic


def test_lerobot_update_on_twin_batches_changes_its_weights_and_follows_its_learner_schedule(
    lr, reach_env, eager
):
    obs_map = bench.ObservationMap(lr)
    agent = learner(lr, utd_ratio=2, policy_update_freq=2)
    rng = np.random.default_rng(0)
    seed = 0
    while len(agent.online) < 100:  # 50-step reach episodes; a random one may end early at success
        assert not agent.ready()
        for transition in bench.episode(
            reach_env, obs_map, lambda o: rng.uniform(-1, 1, 6).astype(np.float32), seed
        ):
            agent.add(agent.online, *transition)
        seed += 1
    assert agent.ready()  # 100 transitions: LeRobot's online_step_before_learning
    policy = agent.policy
    before = {name: p.detach().clone() for name, p in policy.named_parameters()}
    target_before = [p.detach().clone() for p in policy.critic_target.parameters()]
    for _ in range(3):
        info = agent.update()
    steps = {name: opt.state_dict()["state"] for name, opt in agent.optimizers.items()}
    # learner.py: utd_ratio critic updates per optimisation step; at steps 0 and 2 only, policy_update_freq
    # actor and temperature updates
    assert int(next(iter(steps["critic"].values()))["step"]) == 6
    assert int(next(iter(steps["actor"].values()))["step"]) == 4
    assert int(steps["temperature"][0]["step"]) == 4
    changed = {name for name, p in policy.named_parameters() if not torch.equal(p, before[name])}
    assert any(n.startswith("critic_ensemble.") and ".critics." in n for n in changed)
    assert any(n.startswith("actor.network") or n.startswith("actor.mean_layer") for n in changed)
    assert "log_alpha" in changed and info["temperature"] < 1.0
    # The default image encoder is frozen (SACConfig.freeze_vision_encoder); the target critics share the
    # encoder, so update_target_networks averages its weights with themselves: they move by rounding only.
    frozen = {n: p for n, p in policy.named_parameters() if ".image_encoder." in n}
    assert frozen and not any(p.requires_grad for p in frozen.values())
    for name, p in frozen.items():
        torch.testing.assert_close(p, before[name], rtol=1e-5, atol=1e-7)
    assert any(
        not torch.equal(p, b) for p, b in zip(policy.critic_target.parameters(), target_before, strict=True)
    )


def test_lerobot_critic_loss_decreases_on_a_fixed_twin_batch(lr, reach_env, eager):
    obs_map = bench.ObservationMap(lr)
    agent = learner(lr, batch_size=64)
    rng = np.random.default_rng(0)
    for transition in bench.episode(
        reach_env, obs_map, lambda o: rng.uniform(-1, 1, 6).astype(np.float32), seed=1
    ):
        agent.add(agent.online, *transition)
    torch.manual_seed(0)
    batch = agent.forward_batch(agent.sample())

    def loss() -> float:
        torch.manual_seed(1)  # the same next-action samples and dropout masks each time
        return float(agent.policy.forward(batch, model="critic")["loss_critic"].item())

    first = loss()
    for _ in range(15):
        agent.critic_step(batch)
    assert loss() < 0.5 * first


@pytest.mark.slow
def test_quick_json_writes_every_key(tmp_path: Path):
    """The whole harness, both learners in their own processes, below LeRobot's first update (at 100 steps):
    ~17 s of CPU per process, ~25 s on two quiet cores (77 s at a load average of 6)."""
    out = tmp_path / "lerobot_sac.json"
    script = Path(bench.__file__)
    proc = subprocess.Popen(
        [sys.executable, str(script), "--quick", "--json", str(out), "--steps", "50", "--eval-every", "25",
         "--eval-episodes", "1", "--work-dir", str(tmp_path / "runs")],
        stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, cwd=script.parents[1],
        start_new_session=True,  # its learner processes too are ended if it times out
    )  # fmt: skip
    try:
        output, _ = proc.communicate(timeout=300)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
    assert proc.returncode == 0, output[-3000:]
    figures = json.loads(out.read_text())
    assert set(figures) >= {
        "tasks",
        "lerobot_changes",
        "lerobot_settings",
        "cpu_model",
        "git_commit",
        "details",
    }
    assert list(figures["tasks"]) == ["reach"]
    reach = figures["tasks"]["reach"]
    keys = (
        "ours_success",
        "lerobot_success",
        "ours_wall_s",
        "lerobot_wall_s",
        "ours_wall_s_to_final_lerobot",
    )
    assert set(reach) >= {*keys, "curves"}
    for key in keys[:-1]:
        assert isinstance(reach[key], float), key
    # null only when ours never reached LeRobot's final success
    assert isinstance(reach[keys[-1]], float) or reach["ours_success"] < reach["lerobot_success"]
    for learner_name in ("ours", "lerobot"):
        curve = reach["curves"][learner_name]["0"]
        assert curve and curve[-1]["step"] == 50  # one whole 50-step reach episode, then the final evaluation
        assert all(0.0 <= p["success"] <= 1.0 and p["wall_s"] > 0 for p in curve)
    assert figures["lerobot_changes"] and figures["cpu_model"] and figures["git_commit"]


def test_summary_pairs_seeds_for_the_time_to_lerobots_final_success_and_drops_failed_runs():
    def run(learner, seed, points, returncode=0, end_s=100.0):
        curve = [{"step": s, "wall_s": w, "success": x, "return": 0.0} for s, w, x in points]
        return {"learner": learner, "seed": seed, "curve": curve, "returncode": returncode, "end_s": end_s}

    runs = [
        run("ours", 0, [(1000, 50.0, 0.5), (2000, 90.0, 0.9)], end_s=95.0),
        run("ours", 1, [(1000, 40.0, 0.35), (2000, 80.0, 0.2)], end_s=85.0),
        run("lerobot", 0, [(1000, 300.0, 0.1), (2000, 600.0, 0.85)], end_s=610.0),
        run("lerobot", 1, [(1000, 320.0, 0.3), (2000, 640.0, 0.3)], end_s=650.0),
        run("lerobot", 2, [(1000, 310.0, 1.0)], returncode=-15, end_s=2000.0),  # killed: counts for nothing
    ]
    figures = bench.summarize(runs)
    assert figures["ours_success"] == pytest.approx(0.55) and figures["lerobot_success"] == pytest.approx(
        0.575
    )
    assert (figures["ours_wall_s"], figures["lerobot_wall_s"]) == (90.0, 630.0)
    assert figures["ours_wall_s_to_final_lerobot"] == 65.0  # seed 0: 90 s to reach 0.85; seed 1: 40 s to 0.3
    assert set(figures["curves"]["lerobot"]) == {"0", "1"}
    runs[1]["curve"][0]["success"] = 0.25  # ours seed 1 never reaches LeRobot's 0.3
    assert bench.summarize(runs)["ours_wall_s_to_final_lerobot"] is None


def test_merge_pools_seeds_from_two_outputs_recomputes_the_figures_and_refuses_a_seed_twice(tmp_path: Path):
    def run(learner, seed, points, end_s):
        curve = [{"step": s, "wall_s": w, "success": x, "return": 0.0} for s, w, x in points]
        return {"learner": learner, "seed": seed, "curve": curve, "returncode": 0, "end_s": end_s}

    first = [run("ours", 0, [(1000, 50.0, 1.0)], 60.0), run("lerobot", 0, [(1000, 500.0, 0.5)], 510.0)]
    second = [
        run("ours", 1, [(1000, 40.0, 0.2), (2000, 80.0, 0.6)], 90.0),
        run("lerobot", 1, [(1000, 300.0, 0.3)], 310.0),
    ]
    paths = []
    for name, runs, commit in (("s0.json", first, "aaa"), ("s1.json", second, "bbb")):
        path = tmp_path / name
        details = {"seeds": sorted({r["seed"] for r in runs}), "jobs": 1, "load_average_at_start": 0.5}
        path.write_text(json.dumps({"tasks": {"reach": bench.summarize(runs)}, "lerobot_changes": ["x"],
                                    "cpu_model": "cpu", "git_commit": commit, "details": details}))  # fmt: skip
        paths.append(path)
    merged = bench.merge(paths)
    reach = merged["tasks"]["reach"]
    assert reach == bench.summarize(first + second) | {"runs": reach["runs"]}
    assert (reach["ours_success"], reach["lerobot_success"]) == (pytest.approx(0.8), pytest.approx(0.4))
    assert reach["ours_wall_s_to_final_lerobot"] == 65.0  # seed 0: 50 s to 0.5; seed 1: 80 s to 0.3
    assert merged["git_commit"] == ["aaa", "bbb"] and merged["cpu_model"] == "cpu"
    assert [s["seeds"] for s in merged["sources"]] == [[0], [1]] and merged["details"]["seeds"] == [0, 1]
    (tmp_path / "merged.json").write_text(json.dumps(merged))  # a merge merges again, a seed at a time
    third = tmp_path / "s2.json"
    runs = [run("ours", 2, [(1000, 30.0, 1.0)], 40.0), run("lerobot", 2, [(1000, 200.0, 0.0)], 210.0)]
    third.write_text(json.dumps({"tasks": {"reach": bench.summarize(runs)}, "cpu_model": "cpu", "git_commit": "ccc",
                                 "details": {"seeds": [2], "jobs": 1, "load_average_at_start": 0.1}}))  # fmt: skip
    again = bench.merge([tmp_path / "merged.json", third])
    assert again["tasks"]["reach"] == bench.summarize(first + second + runs) | {
        "runs": again["tasks"]["reach"]["runs"]
    }
    assert [s["seeds"] for s in again["sources"]] == [[0], [1], [2]] and again["git_commit"] == [
        "aaa",
        "bbb",
        "ccc",
    ]
    with pytest.raises(ValueError, match="seed 0 is in two inputs"):
        bench.merge([paths[0], paths[0]])
    (tmp_path / "bad.json").write_text("{}")
    with pytest.raises(ValueError, match=r"bad\.json: not a lerobot_sac\.py JSON"):
        bench.merge([tmp_path / "bad.json"])
