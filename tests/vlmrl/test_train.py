"""`vlmrl train`: exact resume (stop and Ctrl-C), report outputs, one-line config errors, the CLI."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import numpy as np
import pytest
import torch

from agents.config import PixelEncoderConfig, SACConfig
from agents.export import load_policy
from buffer.config import BufferConfig
from sim.config import RandomizeConfig, SimConfig
from sim.randomization import PRESETS
from vlm.aux_reward import aux_rewards
from vlm.config import AuxRewardConfig, WorkerConfig
from vlmrl import cli
from vlmrl.errors import ConfigError
from vlmrl.loop.checkpoint import load_checkpoint
from vlmrl.online.trainer import Trainer
from vlmrl.pipelines.train import TrainConfig, main


def tiny(run_dir: Path, **overrides) -> TrainConfig:
    """A run of a few hundred steps with small nets: state-only reach, PER replay."""
    cfg = TrainConfig(
        sim=SimConfig(task="reach", reward="shaped", action_mode="delta", cameras=(), max_episode_steps=25),
        agent=SACConfig(hidden_dims=(16, 16)),
        buffer=BufferConfig(capacity_steps=2_000, n_step=3),
        replay="per",
        total_steps=300,
        learning_starts=60,
        batch_size=16,
        eval_every_steps=100,
        eval_episodes=2,
        video_episodes=0,
        checkpoint_every_steps=10_000,
        run_dir=str(run_dir),
        progress=False,
    )
    return dataclasses.replace(cfg, **overrides)


def with_camera(run_dir: Path, **overrides) -> TrainConfig:
    """Front camera at 32 px into a zarr buffer, VLM x TD replay and a shaping aux reward, scored
    synchronously (so the run is exactly reproducible)."""
    base = tiny(run_dir)
    cfg = dataclasses.replace(
        base,
        sim=dataclasses.replace(base.sim, cameras=("front",), image_size=32),
        buffer=dataclasses.replace(base.buffer, storage="zarr", clip_length=4, clip_stride=2),
        replay="vlm_td",
        aux_reward_weight=0.5,
        aux_reward=AuxRewardConfig(kind="shaping"),
        worker=WorkerConfig(batch_size=4, batch_wait_s=0.0),
        sync_scoring=True,
    )
    return dataclasses.replace(cfg, **overrides)


def final_state(run_dir: Path) -> dict:
    state = load_checkpoint(run_dir)
    return {"agent": state["agent"], "loop": state["loop"], "buffer": state["buffer"]}


def assert_same_run(a: Path, b: Path) -> None:
    sa, sb = final_state(a), final_state(b)
    assert sa["loop"].step == sb["loop"].step and sa["loop"].episode == sb["loop"].episode
    assert sa["loop"].evals == sb["loop"].evals
    assert sa["loop"].train_log == sb["loop"].train_log
    for part in ("actor", "critic", "critic_target", "encoder"):
        for key, value in sa["agent"][part].items():
            assert torch.equal(value, sb["agent"][part][key]), f"{part}.{key} differs"
    assert torch.equal(sa["agent"]["log_alpha"], sb["agent"]["log_alpha"])
    assert sa["buffer"]["rng"] == sb["buffer"]["rng"]


@pytest.mark.parametrize("make", [tiny, with_camera], ids=["state-per", "camera-vlm_td-aux"])
def test_stop_and_resume_repeats_the_uninterrupted_run_bit_for_bit(tmp_path: Path, make) -> None:
    straight, stopped = tmp_path / "straight", tmp_path / "stopped"
    assert main(make(straight)) == 0
    assert main(make(stopped, stop_after_steps=120)) == 0
    first = load_checkpoint(stopped)["loop"].step
    assert 120 <= first < 300
    assert main(TrainConfig(resume=str(stopped), progress=False)) == 0
    assert_same_run(straight, stopped)


def test_evals_jsonl_follows_the_run_and_a_resume_rewrites_it_without_repeats(tmp_path) -> None:
    run = tmp_path / "run"
    assert main(tiny(run, stop_after_steps=120)) == 0
    early = [json.loads(line) for line in (run / "evals.jsonl").read_text().splitlines()]
    assert [e["step"] for e in early] == [e["step"] for e in load_checkpoint(run)["loop"].evals]
    assert early and all(e["step"] <= 150 for e in early)
    assert main(TrainConfig(resume=str(run), progress=False)) == 0
    lines = [json.loads(line) for line in (run / "evals.jsonl").read_text().splitlines()]
    assert lines == load_checkpoint(run)["loop"].evals  # the run's whole history, each evaluation once
    assert len({e["step"] for e in lines}) == len(lines) == 3
    assert {"success_rate", "return"} <= set(lines[0])
    assert "evals.jsonl" in (run / "report.md").read_text()


def test_ctrl_c_keeps_the_last_finished_episode_and_resume_repeats_the_rest(tmp_path, monkeypatch) -> None:
    straight, interrupted = tmp_path / "straight", tmp_path / "interrupted"
    assert main(tiny(straight)) == 0

    trainer = Trainer.create(tiny(interrupted))
    real_step = trainer.env.step
    calls = {"n": 0}

    def step_then_interrupt(action):
        calls["n"] += 1
        if calls["n"] == 140:  # mid-episode: this episode is lost, as after a crash
            raise KeyboardInterrupt
        return real_step(action)

    monkeypatch.setattr(trainer.env, "step", step_then_interrupt)
    outputs = trainer.run()
    saved = load_checkpoint(interrupted)["loop"]
    assert saved.step < 140 and saved.step % 25 == 0  # episodes of 25 steps, none terminated this early
    assert "Interrupted" in outputs["report"].read_text()
    assert main(TrainConfig(resume=str(interrupted), progress=False)) == 0
    assert_same_run(straight, interrupted)


def test_best_policy_is_the_policy_of_the_best_scheduled_evaluation(tmp_path, capsys) -> None:
    run = tmp_path / "run"
    assert main(tiny(run)) == 0
    loop = load_checkpoint(run)["loop"]
    best = max(loop.evals, key=lambda e: (e["success_rate"], e["return"], e["step"]))
    best_step = int(best["step"])
    assert best_step < loop.evals[-1]["step"]  # this run's last policy is not its best one
    assert (loop.best_eval_step, loop.best_eval_success) == (best_step, best["success_rate"])
    assert f"{best['success_rate']:.0%} at step {best_step}" in (run / "report.md").read_text()
    assert "best_policy" in capsys.readouterr().out  # listed with the run's other outputs
    # The same run stopped at that step (runs are deterministic) ends with the same policy.
    short = tmp_path / "short"
    assert main(tiny(short, total_steps=best_step)) == 0
    best, same = load_policy(run / "best_policy.pt"), load_policy(short / "policy.pt")
    obs = {"state": np.random.default_rng(0).normal(size=23).astype(np.float32)}
    np.testing.assert_array_equal(best(obs), same(obs))


def test_run_directory_holds_report_curves_video_config_and_a_matching_policy(tmp_path) -> None:
    run = tmp_path / "run"
    small_pixels = PixelEncoderConfig(channels=8, num_layers=2, feature_dim=16)
    cfg = with_camera(run, total_steps=150, video_episodes=1, sync_scoring=False, export_onnx=True)
    cfg = dataclasses.replace(
        cfg, policy_obs="pixels", agent=dataclasses.replace(cfg.agent, pixel=small_pixels)
    )
    assert main(cfg) == 0
    for name in ("report.md", "curves.png", "eval.mp4", "policy.pt", "policy.onnx", "config.json"):
        assert (run / name).stat().st_size > 0, name
    report = (run / "report.md").read_text()
    assert "**oracle**" in report and "not a VLM" in report
    assert "vlm_td" in report
    config = json.loads((run / "config.json").read_text())
    assert config["replay"] == "vlm_td" and config["scorer"]["kind"] == "oracle"
    assert list((run / "tb").glob("events.out.tfevents.*"))
    # The exported policy (state + pixels, DrQ encoder) acts like the checkpointed agent.
    trainer = Trainer.resume(run)
    policy = load_policy(run / "policy.pt")
    obs, _ = trainer.eval_env.reset(seed=123)
    policy_obs = {k: obs[k] for k in ("state", "pixels/front")}
    assert set(policy.obs_spec) == set(policy_obs)
    np.testing.assert_allclose(
        policy(policy_obs), trainer.agent.act(policy_obs, deterministic=True), atol=1e-5
    )
    trainer.link.close()
    # The buffer holds the scorer's clip scores and aux rewards.
    columns = trainer.buffer.storage.columns()
    assert any(c.startswith("scores/oracle") for c in columns)
    score_column = next(c for c in columns if c.startswith("scores/"))
    aux_column = "aux_reward/" + score_column.split("/", 1)[1]
    assert aux_column in columns
    # Each episode's stored aux rewards are vlm.aux_reward's shaping of its clip scores.
    buffer, buffer_cfg = trainer.buffer, trainer.buffer_cfg
    span = buffer_cfg.clip_length * buffer_cfg.clip_stride
    for episode in range(buffer.num_episodes):
        start, end = buffer.episode_rows(episode)
        n_steps = end - start - 1
        clip_starts = np.arange(0, n_steps, span)
        lengths = np.minimum(
            buffer_cfg.clip_length, -(-(n_steps + 1 - clip_starts) // buffer_cfg.clip_stride)
        )
        last_steps = clip_starts + (lengths - 1) * buffer_cfg.clip_stride
        scores = buffer.storage.read(score_column, start + clip_starts)
        assert np.all((scores >= 0) & (scores <= 1))
        terminated = bool(buffer.storage.read("terminated", np.array([end - 2]))[0])
        aux_cfg = dataclasses.replace(cfg.aux_reward, gamma=buffer_cfg.gamma)
        expected = aux_rewards(aux_cfg, n_steps, last_steps, scores, terminated)
        stored = buffer.storage.read(aux_column, start + np.arange(n_steps))
        np.testing.assert_allclose(stored, expected, atol=1e-6)


def test_bad_configs_fail_with_one_line(tmp_path) -> None:
    with pytest.raises(ConfigError, match="need clips"):
        main(tiny(tmp_path / "a", replay="vlm"))
    assert main(tiny(tmp_path / "b", total_steps=30, learning_starts=10)) == 0
    with pytest.raises(ConfigError, match="already holds a run"):
        main(tiny(tmp_path / "b"))
    with pytest.raises(ConfigError, match="no checkpoint"):
        main(TrainConfig(resume=str(tmp_path / "nothing"), progress=False))


def test_unreachable_vlm_fails_fast_through_the_cli(tmp_path, capsys) -> None:
    missing = tmp_path / "no-such-model"
    args = ["--run-dir", str(tmp_path / "r"), "--sim.image-size", "32", "--no-progress"]
    code = cli.main(["train", "scorer:hf", "--scorer.model", str(missing), *args])
    err = capsys.readouterr().err.strip()
    assert code == 1
    assert err.startswith("vlmrl train: error:") and len(err.splitlines()) == 1
    assert not (tmp_path / "r").exists()  # nothing written before the check


def test_resume_after_a_crash_keeps_episodes_committed_after_the_checkpoint(tmp_path, capsys) -> None:
    from buffer import make_buffer

    run = tmp_path / "run"
    base = tiny(run)
    cfg = dataclasses.replace(base, buffer=dataclasses.replace(base.buffer, storage="zarr"), total_steps=200)
    assert main(dataclasses.replace(cfg, stop_after_steps=100)) == 0
    # A crashed run commits episodes after its last checkpoint: add one to the store behind its back.
    store = make_buffer(
        cfg.buffer, {"state": ((23,), np.dtype(np.float32))}, 6, path=str(run / "buffer.zarr")
    )
    before = store.num_episodes
    steps = 5
    store.add_episode(
        {"state": np.zeros((steps + 1, 23), np.float32)},
        np.zeros((steps, 6), np.float32),
        np.zeros(steps, np.float32),
        np.zeros(steps, bool),
        np.r_[np.zeros(steps - 1, bool), True],
    )
    store.close()
    assert main(TrainConfig(resume=str(run), progress=False)) == 0
    assert "not exact" in capsys.readouterr().out
    assert load_checkpoint(run)["loop"].step >= 200
    assert load_checkpoint(run)["num_episodes_committed"] > before + 1


def test_demonstrations_are_stored_scored_and_not_counted_as_env_steps(tmp_path, capsys) -> None:
    run = tmp_path / "demos"
    base = with_camera(run)
    cfg = dataclasses.replace(
        base,
        sim=dataclasses.replace(
            base.sim, task="lift", reward="sparse", max_episode_steps=60, terminate_on_success=False
        ),
        replay="vlm",
        demo_episodes=2,
        total_steps=120,
        learning_starts=60,
    )
    assert main(cfg) == 0
    out = capsys.readouterr().out
    assert "2 demonstration episodes" in out
    assert "add --agent.layer-norm" in out  # the plain critic diverged on demonstrations
    checkpoint = load_checkpoint(run)
    loop = checkpoint["loop"]
    assert (loop.demo_episodes_added, loop.demo_steps) == (2, 120)
    assert loop.demo_successes == 2  # the scripted expert lifts the cube within 60 steps
    assert loop.step == 120  # env steps of the learner only
    assert loop.demo_rows == 2 * 61  # 60 transitions and the final observation per demonstration
    shares = [t["demo_share"] for t in loop.train_log if "demo_share" in t]
    assert shares and all(0.0 <= share <= 1.0 for share in shares)
    assert checkpoint["num_episodes_committed"] == 2 + loop.episode
    assert (
        f"episodes: {loop.episode} (the replay buffer holds {2 + loop.episode}"
        in (run / "report.md").read_text()
    )
    from buffer import make_buffer

    buffer = make_buffer(
        dataclasses.replace(cfg.buffer, sampler=checkpoint["config"].buffer.sampler),
        {"state": ((23,), np.dtype(np.float32)), "pixels/front": ((32, 32, 3), np.dtype(np.uint8))},
        6,
        path=str(run / "buffer.zarr"),
    )
    try:
        episodes = buffer.storage.episodes()
        for demo in (0, 1):
            start, end = episodes.bounds(episodes.first + demo)
            assert end - start == 61  # 60 transitions and the final observation
            rewards = buffer.storage.read("reward", np.arange(start, end - 1))
            assert rewards.max() == 1.0  # the demonstration's sparse success reward is in the buffer
            (score_column,) = [c for c in buffer.storage.columns() if c.startswith("scores/")]
            scores = buffer.storage.read(score_column, np.arange(start, end - 1))
            assert np.isfinite(scores).any()  # its clips were scored like any other
    finally:
        buffer.close()


def test_demonstrations_need_the_twin(tmp_path) -> None:
    with pytest.raises(ConfigError, match="demo_episodes must be >= 0"):
        main(tiny(tmp_path / "a", demo_episodes=-1))
    base = tiny(tmp_path / "b")
    with pytest.raises(ConfigError, match="scripted expert"):
        main(dataclasses.replace(base, sim=dataclasses.replace(base.sim, suite="robosuite"), demo_episodes=1))


def test_behaviour_cloning_needs_prior_data_in_each_batch(tmp_path) -> None:
    base = tiny(tmp_path / "a")
    cloning = dataclasses.replace(base.agent, bc_weight=0.4)
    with pytest.raises(ConfigError, match="add --demo-episodes N or --prior-data PATH"):
        main(dataclasses.replace(base, agent=cloning))
    with pytest.raises(ConfigError, match="with --prior-share > 0"):
        main(dataclasses.replace(base, agent=cloning, demo_episodes=2, prior_share=0.0))


def test_an_actor_reading_the_state_estimate_needs_the_asymmetric_critic_and_its_head(tmp_path) -> None:
    base = tiny(tmp_path / "a")
    estimating = dataclasses.replace(base.agent, actor_reads_estimate=True)
    with pytest.raises(ConfigError, match=r"add --asymmetric-critic and --agent\.privileged-aux-weight > 0"):
        main(dataclasses.replace(base, agent=estimating))
    with pytest.raises(ConfigError, match="add --asymmetric-critic"):
        main(dataclasses.replace(base, agent=estimating, asymmetric_critic=True, policy_obs="robot"))


def test_the_randomisation_curriculum_starts_nominal_and_reaches_the_full_ranges(tmp_path) -> None:
    from sim.randomization import Perturbation

    base = tiny(tmp_path / "ramp")
    sim = dataclasses.replace(base.sim, task="lift", randomize=RandomizeConfig(preset="strong"))
    trainer = Trainer.create(dataclasses.replace(base, sim=sim, randomize_ramp_steps=200))
    source, env = trainer.episode_source(), trainer.env.unwrapped
    mass_frac = PRESETS["strong"].cube_mass_frac
    sizes = []
    for step in (0, 100, 200, 400):
        trainer.state.step = step
        stats = source.collect(3, lambda obs: np.zeros(6, np.float32), lambda: None)
        assert stats["randomize_scale"] == min(1.0, step / 200)  # logged as train/randomize_scale
        sizes.append(abs(env.perturbation.cube_mass_scale - 1))
        if step == 0:  # the nominal twin: every draw zero
            p = env.perturbation
            cameras = [*p.camera_offset_m.values(), *p.camera_rotation.values(), p.camera_fovy_deg.values()]
            assert all(not any(v) for v in cameras)
            no_camera = {"camera_offset_m": {}, "camera_rotation": {}, "camera_fovy_deg": {}}
            assert dataclasses.replace(p, **no_camera) == Perturbation()
    assert sizes[0] == 0 and 0 < sizes[1] <= 0.5 * mass_frac and sizes[2] == sizes[3] > sizes[1]
    trainer.env.close()
    with pytest.raises(ConfigError, match=r"set --sim\.randomize\.preset"):
        main(dataclasses.replace(base, randomize_ramp_steps=100))
    with pytest.raises(ConfigError, match="randomize_ramp_steps must be >= 0"):
        main(dataclasses.replace(base, sim=sim, randomize_ramp_steps=-1))


def test_replay_sampler_settings_come_from_the_command_line() -> None:
    import tyro

    from buffer.config import PERSamplerConfig, VLMMixSamplerConfig
    from vlmrl.online import trainer
    from vlmrl.pipelines import train

    args = ["--replay", "vlm", "--vlm-sampler.warmup-steps", "2000", "--vlm-sampler.lambda-end", "0.8"]
    cfg = tyro.cli(train.Config, args=args)
    sampler = trainer.resolve_buffer_config(cfg, "oracle").sampler
    assert isinstance(sampler, VLMMixSamplerConfig)
    assert (sampler.warmup_steps, sampler.lambda_end) == (2000, 0.8)
    cfg = tyro.cli(train.Config, args=["--replay", "per", "--per-sampler.alpha", "0.9"])
    sampler = trainer.resolve_buffer_config(cfg, "oracle").sampler
    assert isinstance(sampler, PERSamplerConfig) and sampler.alpha == 0.9
    # A sampler of the replay's kind set on the buffer config (the Python API) still wins.
    cfg = dataclasses.replace(
        cfg, buffer=dataclasses.replace(cfg.buffer, sampler=PERSamplerConfig(alpha=0.3))
    )
    assert trainer.resolve_buffer_config(cfg, "oracle").sampler.alpha == 0.3


def test_calibrated_cameras_are_recorded_and_a_changed_calibration_warns_on_resume(tmp_path, capsys) -> None:
    from calibration import CameraIntrinsics, save_camera

    calib = tmp_path / "calibration"
    camera_matrix = np.array([[520.0, 0.0, 333.5], [0.0, 515.0, 230.5], [0.0, 0.0, 1.0]])
    save_camera("front_cam", CameraIntrinsics(camera_matrix, np.zeros(5), (640, 480)), 0.2, calib)
    run = tmp_path / "run"
    base = with_camera(run, total_steps=60, learning_starts=30)
    sim = dataclasses.replace(base.sim, camera_calibration={"front": "front_cam"}, calibration_dir=str(calib))
    cfg = dataclasses.replace(base, sim=sim)
    assert main(dataclasses.replace(cfg, stop_after_steps=30)) == 0
    recorded = json.loads((run / "cameras.json").read_text())
    assert recorded["front"]["camera_matrix"]  # what the run rendered, for later comparison
    capsys.readouterr()
    camera_matrix[0, 0] = 600.0  # the camera is recalibrated between the two invocations
    save_camera("front_cam", CameraIntrinsics(camera_matrix, np.zeros(5), (640, 480)), 0.2, calib)
    assert main(TrainConfig(resume=str(run), progress=False)) == 0
    assert "calibrated cameras differ" in capsys.readouterr().out


def test_a_run_that_cannot_start_leaves_no_run_directory(tmp_path) -> None:
    from sim.errors import SimError

    base = with_camera(tmp_path / "run")
    sim = dataclasses.replace(
        base.sim, camera_calibration={"front": "missing"}, calibration_dir=str(tmp_path)
    )
    with pytest.raises(SimError, match="missing"):
        main(dataclasses.replace(base, sim=sim))
    assert not (tmp_path / "run").exists()


def test_a_score_calibration_maps_the_clip_scores_and_a_resume_uses_the_runs_copy(tmp_path) -> None:
    from buffer import make_buffer
    from buffer.clips import clip_rows, plan_clips
    from sim.so101.tasks import TASKS
    from vlm import ScoreCalibration, VLMError, prompt_hash, scorer_prompt

    def save(temperature: float, scorer_id: str = "oracle") -> Path:
        return ScoreCalibration(
            scorer_id=scorer_id,
            prompt_hash=prompt_hash(scorer_prompt(TASKS["reach"]().description)),
            temperature=temperature,
            threshold=0.5,
            auc=0.9,
            accuracy=0.9,
            ece=0.05,
            ece_before=0.2,
            n_clips=40,
        ).save(tmp_path / "cal.json")

    refused = with_camera(tmp_path / "refused", score_calibration=save(2.0, scorer_id="oracle-noise0.3"))
    with pytest.raises(VLMError, match=r"calibrates scorer 'oracle-noise0\.3', not 'oracle'"):
        main(refused)
    assert not (tmp_path / "refused").exists()
    run = tmp_path / "run"
    cfg = with_camera(run, total_steps=60, learning_starts=30, score_calibration=save(2.0))
    assert main(dataclasses.replace(cfg, stop_after_steps=30)) == 0
    save(3.0)  # the file changes between the invocations; the resumed run keeps the copy it started with
    assert main(TrainConfig(resume=str(run), progress=False)) == 0
    assert ScoreCalibration.load(run / "score_calibration.json").temperature == 2.0
    assert "score calibration" in (run / "report.md").read_text()
    checkpoint = load_checkpoint(run)
    buffer = make_buffer(
        dataclasses.replace(cfg.buffer, sampler=checkpoint["config"].buffer.sampler),
        {"state": ((23,), np.dtype(np.float32)), "pixels/front": ((32, 32, 3), np.dtype(np.uint8))},
        6,
        path=str(run / "buffer.zarr"),
    )
    try:
        assert [c for c in buffer.storage.columns() if c.startswith("scores/")] == ["scores/oracle-cal2"]
        episodes = buffer.storage.episodes()
        for episode in range(episodes.first, episodes.first + episodes.count):
            start, end = episodes.bounds(episode)
            clips = plan_clips(episode, start, end, 4, 2, "pixels/front")
            progress = np.array(
                [buffer.storage.read("info/progress", clip_rows(c, start))[-1] for c in clips]
            )
            stored = buffer.storage.read("scores/oracle-cal2", np.array([c.clip_id for c in clips]))
            logit = np.log(np.clip(progress, 1e-6, 1 - 1e-6)) - np.log1p(-np.clip(progress, 1e-6, 1 - 1e-6))
            np.testing.assert_allclose(stored, 1 / (1 + np.exp(-logit / 2.0)), atol=1e-5)
    finally:
        buffer.close()


def test_a_checkpoint_from_before_new_config_fields_resumes_with_their_defaults(tmp_path) -> None:
    run = tmp_path / "old"
    cfg = tiny(run, total_steps=100)
    assert main(dataclasses.replace(cfg, stop_after_steps=50)) == 0
    state_file = run / "checkpoint" / "state.pt"
    state = torch.load(state_file, weights_only=False)
    # What an older version pickled: configs without the fields added since (default_factory and plain).
    del vars(state["config"].sim)["camera_calibration"]
    del vars(state["config"])["vlm_sampler"]
    del vars(state["loop"])["demo_rows"]
    torch.save(state, state_file)
    assert main(TrainConfig(resume=str(run), progress=False)) == 0
    resumed = load_checkpoint(run)
    assert resumed["loop"].step >= 100 and resumed["config"].sim.camera_calibration == {}


def test_the_demo_adds_demonstrations_a_layernorm_critic_and_its_budget_unless_told_otherwise() -> None:
    from vlmrl.pipelines.train import demo_config

    cfg = demo_config(TrainConfig(demo=True))
    assert (cfg.demo_episodes, cfg.total_steps, cfg.agent.layer_norm) == (25, 20_000, True)
    assert (cfg.agent.bc_weight, cfg.agent.bc_q_filter, cfg.buffer.gamma) == (0.4, False, 0.95)
    assert cfg.sim.task == "lift" and cfg.replay == "vlm"
    mine = demo_config(TrainConfig(demo=True, total_steps=5_000, demo_episodes=3))
    assert (mine.demo_episodes, mine.total_steps, mine.agent.layer_norm) == (3, 5_000, True)
    base = TrainConfig(demo=True)
    told = demo_config(
        dataclasses.replace(
            base,
            agent=dataclasses.replace(base.agent, bc_weight=1.0),
            buffer=dataclasses.replace(base.buffer, gamma=0.9),
        )
    )
    assert (told.agent.bc_weight, told.agent.bc_q_filter, told.buffer.gamma) == (1.0, True, 0.9)


def test_checkpoints_naming_the_config_classes_where_they_used_to_live_still_load(
    tmp_path, monkeypatch
) -> None:
    """Checkpoints pickle classes by module path: runs from before the learner loop name
    vlmrl.pipelines.train.TrainConfig and vlmrl.online.trainer.LoopState, which must keep resolving."""
    from vlmrl.loop.learner import LoopState

    monkeypatch.setattr(TrainConfig, "__module__", "vlmrl.pipelines.train")
    monkeypatch.setattr(LoopState, "__module__", "vlmrl.online.trainer")
    (tmp_path / "checkpoint").mkdir()
    torch.save({"config": TrainConfig(), "loop": LoopState(step=7)}, tmp_path / "checkpoint" / "state.pt")
    raw = (tmp_path / "checkpoint" / "state.pt").read_bytes()
    assert b"vlmrl.pipelines.train" in raw and b"vlmrl.online.trainer" in raw
    monkeypatch.undo()
    state = load_checkpoint(tmp_path)
    assert isinstance(state["config"], TrainConfig) and state["loop"].step == 7


def test_a_checkpoint_from_before_prior_share_resumes_without_prior_mixing(tmp_path) -> None:
    """prior_share's default (0.5) would change how a resumed run with demonstrations samples; a checkpoint
    written before the field existed gets the old behaviour's value (TrainConfig.LEGACY_DEFAULTS)."""
    from vlmrl.loop.learner import LoopState

    old = TrainConfig(demo_episodes=2)
    del vars(old)["prior_share"]
    (tmp_path / "checkpoint").mkdir()
    torch.save({"config": old, "loop": LoopState()}, tmp_path / "checkpoint" / "state.pt")
    assert load_checkpoint(tmp_path)["config"].prior_share == 0.0
    assert TrainConfig().prior_share == 0.5  # a new run keeps the new default


def test_a_checkpoint_from_before_the_patch_embedding_keeps_its_3x3_first_layer(tmp_path) -> None:
    """The pixel encoder's default first layer became a 4x4 patch embedding; a checkpoint written before
    PixelEncoderConfig.patch_size existed gets 0 (LEGACY_DEFAULTS), so its weights still fit."""
    from agents.encoders import PixelEncoder
    from vlmrl.loop.learner import LoopState

    old = TrainConfig()
    del vars(old.agent.pixel)["patch_size"]
    (tmp_path / "checkpoint").mkdir()
    torch.save({"config": old, "loop": LoopState()}, tmp_path / "checkpoint" / "state.pt")
    pixel = load_checkpoint(tmp_path)["config"].agent.pixel
    assert pixel.patch_size == 0
    assert PixelEncoder((64, 64, 3), pixel).convs[0].kernel_size == (3, 3)
    assert PixelEncoder((64, 64, 3), TrainConfig().agent.pixel).convs[0].kernel_size == (4, 4)


def test_configs_from_before_the_windup_bound_keep_the_unbounded_twin(tmp_path) -> None:
    """max_windup_deg's default (16) changes the twin's joint-delta dynamics: a checkpoint, a policy's run info
    or a recording's sim_config written before it existed gets 0 (SimConfig.LEGACY_DEFAULTS)."""
    from sim.config import SimConfig, stored_sim_settings
    from vlmrl.loop.learner import LoopState

    old = TrainConfig()
    del vars(old.sim)["max_windup_deg"]
    (tmp_path / "checkpoint").mkdir()
    torch.save({"config": old, "loop": LoopState()}, tmp_path / "checkpoint" / "state.pt")
    assert load_checkpoint(tmp_path)["config"].sim.max_windup_deg == 0.0
    assert stored_sim_settings({"task": "lift"}) == {"task": "lift", "max_windup_deg": 0.0}
    assert stored_sim_settings({"max_windup_deg": 16.0})["max_windup_deg"] == 16.0
    assert TrainConfig().sim.max_windup_deg == SimConfig().max_windup_deg == 16.0  # new runs: bounded


def test_a_learned_scorer_of_another_frame_size_is_refused_before_the_run_starts(tmp_path):
    """scorer:learned checks the camera and frame size it was fitted on against the run's at start."""
    from vlm import VLMError
    from vlm.backends.learned import build_net, save_learned
    from vlm.config import LearnedConfig
    from vlm.prompts import prompt_hash

    student = tmp_path / "student.pt"
    meta = dict(camera="front", image_hw=[24, 24], num_frames=4, width=8, prompt="q", labels="random")
    save_learned(student, build_net(4, 8), {**meta, "prompt_hash": prompt_hash("q")})
    run_dir = tmp_path / "run"
    cfg = with_camera(run_dir, scorer=LearnedConfig(path=str(student)))  # the twin renders 32x32
    with pytest.raises(VLMError, match=r"fitted on camera 'front' at 24x24 px.*at 32x32 px"):
        Trainer.create(cfg)
    assert not run_dir.exists()  # nothing left behind


def test_a_score_calibration_that_makes_ece_worse_warns_as_score_does(tmp_path, capsys) -> None:
    from sim.so101.tasks import TASKS
    from vlm import ScoreCalibration, prompt_hash, scorer_prompt

    worse = ScoreCalibration(
        scorer_id="oracle",
        prompt_hash=prompt_hash(scorer_prompt(TASKS["reach"]().description)),
        temperature=2.0,
        threshold=0.5,
        auc=0.9,
        accuracy=0.9,
        ece=0.3,
        ece_before=0.1,
        n_clips=40,
    ).save(tmp_path / "worse.json")
    cfg = with_camera(tmp_path / "run", total_steps=30, learning_starts=30, score_calibration=worse)
    assert main(cfg) == 0
    assert (
        "makes the expected calibration error worse on its own clips (0.100 -> 0.300)"
        in capsys.readouterr().out
    )


def test_prior_data_from_an_earlier_runs_store_is_the_prior_part_of_each_batch(tmp_path, capsys) -> None:
    """--prior-data copies a recorded store's episodes into the buffer before training (RLPD)."""
    from buffer.samplers.prior_mix import PriorMixSampler

    source = tmp_path / "earlier"
    assert main(with_camera(source, total_steps=50, learning_starts=50)) == 0
    earlier = load_checkpoint(source)["num_episodes_committed"]
    run = tmp_path / "run"
    cfg = with_camera(run, total_steps=75, learning_starts=25, prior_data=source / "buffer.zarr")
    assert main(cfg) == 0
    assert f"{earlier} episodes of prior data from" in capsys.readouterr().out
    checkpoint = load_checkpoint(run)
    loop = checkpoint["loop"]
    assert loop.prior_episodes_added == earlier
    assert checkpoint["num_episodes_committed"] == earlier + loop.episode
    assert isinstance(checkpoint["config"].buffer, BufferConfig)
    shares = [t["demo_share"] for t in loop.train_log if "demo_share" in t]
    assert shares and min(shares) > 0.2  # half of each batch comes from the prior episodes
    trainer = Trainer.resume(run)  # resumed: the prior data is not added twice
    assert isinstance(trainer.buffer.sampler, PriorMixSampler)
    assert trainer.state.prior_episodes_added == earlier
    trainer.buffer.close()
    trainer.env.close()
    trainer.eval_env.close()
    if trainer.link is not None:
        trainer.link.close()

    wrong = with_camera(tmp_path / "wrong", prior_data=source / "buffer.zarr")
    wrong = dataclasses.replace(wrong, sim=dataclasses.replace(wrong.sim, image_size=24))
    with pytest.raises(ConfigError, match=r"'pixels/front' is \(\(32, 32, 3\), 'uint8'\) there"):
        main(wrong)
    assert not (tmp_path / "wrong").exists()


def test_a_state_teacher_is_distilled_into_a_robot_observation_actor(tmp_path) -> None:
    assert main(tiny(tmp_path / "teacher", total_steps=120)) == 0  # a state policy of reach
    teacher = tmp_path / "teacher" / "policy.pt"
    base = tiny(tmp_path / "student", policy_obs="robot", asymmetric_critic=True, replay="uniform")
    base = dataclasses.replace(base, sim=dataclasses.replace(base.sim, cameras=("front",), image_size=32))
    taught = dataclasses.replace(
        base, teacher_policy=teacher, agent=dataclasses.replace(base.agent, teacher_weight=1.0)
    )
    trainer = Trainer.create(taught)
    assert trainer.agent.teacher_keys == ("state",) and trainer.agent.teacher is not None
    assert main(dataclasses.replace(taught, run_dir=str(tmp_path / "run"))) == 0
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

    events = EventAccumulator(str(tmp_path / "run" / "tb"), size_guidance={"scalars": 0})
    events.Reload()
    losses = [e.value for e in events.Scalars("train/teacher_loss")]
    assert losses and all(loss > 0 for loss in losses)  # logged, and the actor is not the teacher

    with pytest.raises(ConfigError, match="a teacher needs both --teacher-policy PATH"):
        main(dataclasses.replace(base, teacher_policy=teacher))
    with pytest.raises(
        ConfigError, match=r"which this run's agent does not store .*needs --asymmetric-critic"
    ):
        main(dataclasses.replace(taught, asymmetric_critic=False))
    lift = dataclasses.replace(taught, sim=dataclasses.replace(taught.sim, task="lift"))
    with pytest.raises(ConfigError, match="its task is 'reach', this run's is 'lift'"):
        main(lift)
    with pytest.raises(ConfigError, match=r"--teacher-policy: .*not a vlmrl policy file"):
        main(dataclasses.replace(taught, teacher_policy=tmp_path / "teacher" / "config.json"))


def test_potential_shaping_reaches_the_buffer_and_stays_out_of_evaluation(tmp_path) -> None:
    from buffer import make_buffer

    run = tmp_path / "shaped"
    base = tiny(run)
    cfg = dataclasses.replace(
        base,
        sim=dataclasses.replace(base.sim, reward="sparse"),
        buffer=dataclasses.replace(base.buffer, storage="zarr"),
        replay="uniform",
        reward_shaping="potential",
        total_steps=100,
        eval_every_steps=100,
    )
    assert main(cfg) == 0
    buffer = make_buffer(
        dataclasses.replace(cfg.buffer, sampler=load_checkpoint(run)["config"].buffer.sampler),
        {"state": ((23,), np.dtype(np.float32))}, 6, path=str(run / "buffer.zarr"),
    )  # fmt: skip
    try:
        rows = buffer.storage.episodes().next_row
        rewards = buffer.storage.read("reward", np.arange(rows))
    finally:
        buffer.close()
    assert (rewards < 0).any()  # a sparse reward is never negative: these are the shaping terms
    evals = [json.loads(line) for line in (run / "evals.jsonl").read_text().splitlines()]
    assert evals and all(e["return"] >= 0.0 for e in evals)  # evaluations count the task's own sparse reward
    with pytest.raises(ConfigError, match="--reward-shaping runs in the learner's env only"):
        main(dataclasses.replace(cfg, run_dir=str(tmp_path / "actors"), actors=1))
