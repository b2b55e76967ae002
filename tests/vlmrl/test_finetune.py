"""vlmrl finetune end to end on the twin: sim checkpoint -> robot episodes -> zarr -> async scores -> SAC."""

import json
from types import SimpleNamespace

import numpy as np
import pytest
import torch

from agents.config import SACConfig
from agents.export import load_policy
from agents.sac import SAC
from buffer import BufferConfig, make_buffer
from robot.config import SO101_JOINT_KEYS, ArmConfig, LeRobotEnvConfig, WatchdogConfig
from sim import SimConfig, make_env
from vlm.config import AuxRewardConfig, OracleConfig, WorkerConfig
from vlmrl.errors import ConfigError
from vlmrl.pipelines import finetune

ROBOT_OBS = {"pixels/front": ((32, 32, 3), np.dtype(np.uint8))} | {
    k: ((1,), np.dtype(np.float32)) for k in SO101_JOINT_KEYS
}


def sim_run(tmp_path, obs_spec=ROBOT_OBS):
    """A run directory shaped like `vlmrl train`'s checkpoint, with an agent reading robot keys."""
    sim_cfg = SimConfig(task="lift", cameras=("front",), image_size=32)
    env = make_env(sim_cfg)
    agent = SAC(SACConfig(hidden_dims=(32, 32)), obs_spec, env.action_space)
    env.close()
    train = SimpleNamespace(
        sim=sim_cfg,
        agent=agent.cfg,
        policy_obs="pixels",
        buffer=BufferConfig(),
        batch_size=8,
        scorer=OracleConfig(),
        prompt="",
        aux_reward=AuxRewardConfig(kind="scaled"),
        aux_reward_weight=0.5,
        worker=WorkerConfig(),
    )
    run = tmp_path / "sim_run"
    (run / "checkpoint").mkdir(parents=True)
    spec = {k: [list(s), d.name] for k, (s, d) in obs_spec.items()}
    torch.save(
        {"config": train, "agent": agent.state_dict(), "policy_obs_spec": spec},
        run / "checkpoint" / "state.pt",
    )
    return run, agent


def config(tmp_path, run, **overrides):
    base = dict(
        from_run=run,
        robot=ArmConfig(type="sim_so101", cameras=("front",), calibration_dir=str(tmp_path / "calib")),
        env=LeRobotEnvConfig(
            control_hz=200.0,
            max_episode_steps=6,
            image_size=32,
            reset_settle_steps=1,
            keyboard_estop=False,
            watchdog=WatchdogConfig(enabled=False),
        ),
        twin_control_hz=20.0,
        out_dir=tmp_path / "ft",
        episodes=2,
        buffer=BufferConfig(storage="zarr", capacity_steps=200, clip_length=3, clip_stride=1),
        wait_for_scores_s=60.0,
    )
    return finetune.Config(**(base | overrides))


def test_finetune_learns_on_the_twin_and_persists_everything(tmp_path):
    run, initial = sim_run(tmp_path)
    assert finetune.main(config(tmp_path, run)) == 0
    out = tmp_path / "ft"
    lines = [json.loads(line) for line in (out / "metrics.jsonl").read_text().splitlines()]
    assert [m["steps"] for m in lines] == [6, 6]
    assert "updates" not in lines[0] and lines[1]["updates"] == 6.0  # 6 < batch 8 after one episode
    assert lines[1]["scored"] == 4  # two clips of 3 frames per 7-frame episode
    meta = {
        k: (tuple(s), np.dtype(d))
        for k, (s, d) in json.loads((out / "buffer.zarr" / "zarr.json").read_text())["attributes"][
            "vlmrl_buffer"
        ]["env"]["obs_spec"].items()
    }
    buf = make_buffer(
        BufferConfig(storage="zarr", capacity_steps=200),
        meta,
        6,
        finetune.INFO_KEYS,
        path=str(out / "buffer.zarr"),
    )
    assert buf.num_episodes == 2 and buf.num_transitions == 12
    columns = buf.storage.columns()
    assert any(c.startswith("scores/oracle") for c in columns) and any(
        c.startswith("aux_reward/oracle") for c in columns
    )
    buf.close()
    policy = load_policy(out / "policy.pt")
    obs = {k: np.zeros(s, d) for k, (s, d) in ROBOT_OBS.items()}
    assert not np.allclose(policy(obs), initial.act(obs, deterministic=True))  # the updates changed it
    assert (out / "checkpoint" / "state.pt").is_file() and json.loads((out / "config.json").read_text())[
        "from_run"
    ] == str(run)


def test_intervention_drives_with_the_keyboard_and_is_stored(tmp_path, monkeypatch):
    from robot import teleop

    run, _ = sim_run(tmp_path)
    real_keys, real_jog = teleop.OperatorKeys, teleop.KeyboardJog

    def taking_over(listen=True):
        keys = real_keys(listen=False)
        keys.press("space")
        return keys

    def held_w(keys, step, listen=True):
        jog = real_jog(keys, step, listen=False)
        jog.press("w")
        return jog

    monkeypatch.setattr(teleop, "OperatorKeys", taking_over)
    monkeypatch.setattr(teleop, "KeyboardJog", held_w)
    assert finetune.main(config(tmp_path, run, episodes=1, wait_for_scores_s=0.0)) == 0
    stats = json.loads((tmp_path / "ft" / "metrics.jsonl").read_text())
    assert stats["interventions"] == 6
    meta = json.loads((tmp_path / "ft" / "buffer.zarr" / "zarr.json").read_text())["attributes"][
        "vlmrl_buffer"
    ]["env"]
    spec = {k: (tuple(s), np.dtype(d)) for k, (s, d) in meta["obs_spec"].items()}
    buf = make_buffer(
        BufferConfig(storage="zarr", capacity_steps=200),
        spec,
        6,
        finetune.INFO_KEYS,
        path=str(tmp_path / "ft" / "buffer.zarr"),
    )
    lift = buf.storage.read("action", np.arange(6))[:, 1]
    assert np.diff(lift) == pytest.approx(np.full(5, 2.0))
    assert buf.storage.read("info/intervention", np.arange(6)) == pytest.approx(np.ones(6))
    buf.close()


def test_a_policy_on_privileged_sim_state_is_refused(tmp_path):
    run, _ = sim_run(tmp_path, {"state": ((24,), np.dtype(np.float32))})
    with pytest.raises(ConfigError, match="reads 'state' as float32"):
        finetune.main(config(tmp_path, run))
    with pytest.raises(ConfigError, match="no checkpoint"):
        finetune.main(config(tmp_path, tmp_path / "nowhere"))
