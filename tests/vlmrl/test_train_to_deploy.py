"""A policy trained by `vlmrl train` on what a robot provides runs through `vlmrl deploy` on the twin."""

import dataclasses
import json
import shlex
from pathlib import Path
from types import SimpleNamespace

import gymnasium as gym
import numpy as np
import pytest
import torch

from agents.config import SACConfig
from buffer.config import BufferConfig
from robot.config import ArmConfig, LeRobotEnvConfig, WatchdogConfig
from robot.contract import JOINT_KEYS
from sim.config import SimConfig
from tests.vlmrl.pipeline_helpers import finetune_config
from vlmrl import cli
from vlmrl.errors import ConfigError
from vlmrl.online.trainer import Trainer
from vlmrl.pipelines import deploy
from vlmrl.pipelines.train import TrainConfig, main


def robot_policy_run(run_dir, **overrides):
    fields = dict(
        sim=SimConfig(
            task="reach", action_mode="absolute", cameras=("front",), image_size=32, max_episode_steps=10
        ),
        agent=SACConfig(hidden_dims=(16, 16)),
        buffer=BufferConfig(capacity_steps=500),
        policy_obs="robot",
        replay="uniform",
        total_steps=40,
        learning_starts=20,
        batch_size=8,
        eval_every_steps=1_000,
        eval_episodes=1,
        video_episodes=0,
        run_dir=str(run_dir),
        progress=False,
    )
    return TrainConfig(**(fields | overrides))


def test_robot_policy_reads_joints_and_pixels_only_and_deploys_on_the_twin(tmp_path):
    run_dir = tmp_path / "run"
    assert main(robot_policy_run(run_dir)) == 0
    state = torch.load(run_dir / "checkpoint" / "state.pt", weights_only=False)
    assert set(state["policy_obs_spec"]) == {*JOINT_KEYS, "pixels/front"}  # no privileged sim state

    cfg = deploy.Config(
        policy=run_dir / "policy.pt",
        task="reach",
        robot=ArmConfig(type="sim_so101", cameras=("front",), calibration_dir=str(tmp_path / "calib")),
        env=LeRobotEnvConfig(
            control_hz=200.0,
            max_episode_steps=5,
            image_size=32,
            reset_settle_steps=1,
            keyboard_estop=False,
            watchdog=WatchdogConfig(enabled=False),
        ),
        twin_control_hz=20.0,
        episodes=1,
        out_dir=tmp_path / "deploy",
    )
    assert deploy.main(cfg) == 0
    metrics = json.loads((tmp_path / "deploy" / "metrics.json").read_text())
    assert metrics["episodes"][0]["steps"] == 5


def test_robot_policy_needs_an_arm_with_joint_keys(tmp_path):
    cfg = robot_policy_run(
        tmp_path / "run", sim=SimConfig(suite="robosuite", task="Lift", cameras=("agentview",))
    )
    with pytest.raises(ConfigError, match="policy_obs 'robot'"):
        Trainer.create(cfg)


DEPLOYABLE_DOC = Path(__file__).resolve().parents[2] / "docs" / "deployable.md"


def guide_command(start: str) -> list[str]:
    """The command of docs/deployable.md that begins with ``start`` (with its backslash-continued lines), split
    as a shell would (comments dropped)."""
    text = DEPLOYABLE_DOC.read_text().replace("\\\n", " ")
    lines = [line for line in text.splitlines() if line.startswith(start)]
    assert len(lines) == 1, f"docs/deployable.md should hold one line starting {start!r}, found {len(lines)}"
    return shlex.split(lines[0], comments=True)


def test_the_guides_reach_train_then_deploy_lines_run_as_written(tmp_path, monkeypatch, capsys):
    """Issue #15, item 1: the reach train -> deploy on the twin, in docs/deployable.md's own words; only
    budgets are appended (later options win), and it runs in a scratch directory."""
    train = guide_command("vlmrl train --sim.task reach --policy-obs robot")
    deploy_twin = guide_command("vlmrl deploy --policy runs/reach-robot/policy.pt  ")
    assert train[:2] == ["vlmrl", "train"] and deploy_twin[:2] == ["vlmrl", "deploy"]
    monkeypatch.chdir(tmp_path)
    budget = [
        "--total-steps", "40", "--learning-starts", "20", "--batch-size", "8", "--eval-every-steps", "1000",
        "--eval-episodes", "1", "--video-episodes", "0", "--no-progress", "--sim.max-episode-steps", "10",
        "--agent.hidden-dims", "16", "16", "--buffer.capacity-steps", "500",
    ]  # fmt: skip
    assert cli.main(train[1:] + budget) == 0
    short = ["--env.max-episode-steps", "5", "--env.no-keyboard-estop", "--env.watchdog.no-enabled"]
    assert cli.main(deploy_twin[1:] + short) == 0
    out = capsys.readouterr().out
    assert "on so101 'reach': observes robot (front, 64 px)" in out and "deploy: 1 episode(s)" in out
    written = json.loads((tmp_path / "runs" / "deploy" / "config.json").read_text())
    assert (
        written["task"] == "reach"
        and written["env"]["image_size"] == 64
        and written["env"]["control_hz"] == 20.0
    )


def test_the_readme_quick_start_state_policy_is_refused_for_the_real_reason(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    run = robot_policy_run(
        tmp_path / "state", policy_obs="state", sim=SimConfig(task="reach", cameras=(), max_episode_steps=10)
    )
    assert main(dataclasses.replace(run, replay="uniform")) == 0
    assert cli.main(["deploy", "--policy", str(tmp_path / "state" / "policy.pt")]) == 1
    err = capsys.readouterr().err
    assert "privileged 'state' vector" in err and "--policy-obs robot" in err and "image-size" not in err


def _bellman_error(agent, batch) -> float:
    """Mean |Q_i(s, a) - (r + d * (min_j Q'_j(s', a') - alpha log pi(a'|s')))| of ``agent`` on ``batch``,
    a' drawn with fixed noise: SAC's own regression target."""
    from agents.networks import squash

    with torch.no_grad():
        obs, next_obs = _prepared(agent, batch.obs), _prepared(agent, batch.next_obs)
        next_features = agent.encoder(next_obs)
        mean, log_std = agent.actor(next_features)
        noise = torch.randn(mean.shape, generator=torch.Generator().manual_seed(0))
        next_action, log_pi = squash(mean, log_std, noise)
        next_in = torch.cat([next_features, agent.encoder.privileged(next_obs)], -1)
        soft_value = agent.critic_target(next_in, next_action).min(0).values - agent.alpha * log_pi
        target = torch.as_tensor(batch.reward) + torch.as_tensor(batch.discount) * soft_value
        features = torch.cat([agent.encoder(obs), agent.encoder.privileged(obs)], -1)
        q = agent.critic(features, agent.to_unit(torch.as_tensor(batch.action)))
        return float((q - target).abs().mean())


def _prepared(agent, obs):
    """Observation tensors as the update feeds them to the encoder (frames pooled to the policy image)."""
    tensors = agent.obs_to_tensors(obs)
    return agent.encoder.prepare(tensors) if agent.has_pixels else tensors


def test_finetune_on_the_twin_learns_from_the_robots_transitions(tmp_path):
    """Issue #15 (9): finetune's updates fit the critic to what the robot collected (its Bellman error on
    those transitions falls below the sim agent's) and move the actor up that critic; a finetune that
    collected but did not learn (or learned from other data) would pass a "policy changed" check only."""
    from agents.sac import SAC
    from buffer import make_buffer
    from vlmrl.loop.checkpoint import load_checkpoint
    from vlmrl.pipelines import finetune

    torch.set_num_threads(1)
    run_dir = tmp_path / "run"
    # Trained in sim on the shaped reward (progress - 1 < 0 per step), the critic expects negative rewards;
    # the twin behind LeRobot gives the sparse one (0 until success), so finetuning must relearn it.
    sim = SimConfig(
        task="reach",
        action_mode="absolute",
        cameras=("front",),
        image_size=32,
        max_episode_steps=10,
        reward="shaped",
    )
    agent = SACConfig(hidden_dims=(16, 16), utd_ratio=20, critic_lr=3e-3, tau=0.05)
    assert main(robot_policy_run(run_dir, sim=sim, agent=agent)) == 0
    sim_state = load_checkpoint(run_dir)
    cfg = finetune_config(
        tmp_path, run_dir, task="reach",
        env=LeRobotEnvConfig(
            control_hz=200.0, max_episode_steps=8, reset_settle_steps=1, keyboard_estop=False,
            watchdog=WatchdogConfig(enabled=False),
        ),
    )  # fmt: skip
    assert finetune.main(cfg) == 0
    spec = {k: (tuple(s), np.dtype(d)) for k, (s, d) in sim_state["policy_obs_spec"].items()}
    train = sim_state["config"]
    space = gym.spaces.Box(-1.0, 1.0, (6,), np.float32) if train.sim.action_mode != "absolute" else None
    before = SAC(train.agent, spec, space or _absolute_actions())
    before.load_state_dict(sim_state["agent"])
    after = SAC(train.agent, spec, space or _absolute_actions())
    after.load_state_dict(load_checkpoint(tmp_path / "ft")["agent"])
    assert after.num_updates - before.num_updates >= 8 * 20  # the second episode's updates, at least
    store = tmp_path / "ft" / "buffer.zarr"
    meta = json.loads((store / "zarr.json").read_text())["attributes"]["vlmrl_buffer"]["env"]["obs_spec"]
    buf = make_buffer(
        BufferConfig(storage="zarr", capacity_steps=200, aux_reward_scorer="", seed=1),
        {k: (tuple(s), np.dtype(d)) for k, (s, d) in meta.items()},
        6,
        finetune.INFO_KEYS,
        path=str(store),
    )
    batch = buf.sample(64, keys=list(spec))
    buf.close()
    assert _bellman_error(after, batch) < 0.7 * _bellman_error(before, batch)  # measured 0.31 vs 0.68
    with torch.no_grad():  # the actor climbed the critic it learned: its action scores higher than before
        obs_after, obs_before = _prepared(after, batch.obs), _prepared(before, batch.obs)
        features = after.encoder(obs_after)
        critic_in = torch.cat([features, after.encoder.privileged(obs_after)], -1)
        q_new = after.critic(critic_in, torch.tanh(after.actor(features)[0])).min(0).values
        q_old = after.critic(critic_in, torch.tanh(before.actor(before.encoder(obs_before))[0])).min(0).values
    assert float(q_new.mean()) > float(q_old.mean())


def _absolute_actions() -> gym.spaces.Box:
    from robot.config import SO101_JOINT_KEYS, SO101_JOINT_LIMITS

    return gym.spaces.Box(
        np.array([SO101_JOINT_LIMITS[k][0] for k in SO101_JOINT_KEYS], np.float32),
        np.array([SO101_JOINT_LIMITS[k][1] for k in SO101_JOINT_KEYS], np.float32),
    )


def test_finetune_takes_the_image_size_from_the_sim_run_and_refuses_what_it_cannot_run(tmp_path):
    """Issue #15 (item 7): finetune needed --env.image-size by hand; a joint-delta agent's actions were sent
    to the arm as joint targets (a joint-delta one runs since issue #13, an end-effector one since issue #32)."""
    from tests.vlmrl.test_finetune import config as finetune_config
    from tests.vlmrl.test_finetune import sim_run
    from vlmrl.pipelines import finetune

    run, _ = sim_run(tmp_path)  # trained on 32 px frames
    default_size = dataclasses.replace(
        finetune_config(tmp_path, run).env, image_size=LeRobotEnvConfig().image_size
    )
    cfg = dataclasses.replace(finetune_config(tmp_path, run), env=default_size)
    assert (
        finetune.fit_to_sim_run(
            cfg, torch.load(run / "checkpoint" / "state.pt", weights_only=False)["config"]
        ).env.image_size
        == 32
    )
    with pytest.raises(ConfigError, match=r"trained on 32 px frames, not --env.image-size 48"):
        finetune.main(dataclasses.replace(cfg, env=dataclasses.replace(cfg.env, image_size=48)))
    state = torch.load(run / "checkpoint" / "state.pt", weights_only=False)
    delta = dataclasses.replace(state["config"].sim, action_mode="delta", max_windup_deg=12.0)
    train_cfg = SimpleNamespace(**vars(state["config"]) | {"sim": delta})
    assert finetune.fit_to_sim_run(cfg, train_cfg).env.max_windup_deg == 12.0  # the run's anti-windup bound
    with pytest.raises(ConfigError, match=r"--sim.max-windup-deg 12, not --env.max-windup-deg 3"):
        finetune.fit_to_sim_run(
            dataclasses.replace(cfg, env=dataclasses.replace(cfg.env, max_windup_deg=3.0)), train_cfg
        )
