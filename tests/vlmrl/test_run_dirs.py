"""Commands failing on bad input leave the previous run's directory as it was (issue 15, item 6).

They used to write config.json first (overwriting the last run's provenance) and leave a fresh
safety.jsonl behind. record and score have their own tests (test_record.py, test_score.py); deploy and
finetune here.
"""

import numpy as np
import pytest

from agents.config import SACConfig
from agents.export import export_policy
from agents.sac import SAC
from robot.config import SO101_JOINT_KEYS, ArmConfig, LeRobotEnvConfig, WatchdogConfig
from sim import SimConfig, make_env
from vlmrl.errors import ConfigError
from vlmrl.pipelines import deploy


def tree(root):
    return {str(p.relative_to(root)): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()}


def policy_for(tmp_path, image_size, name):
    env = make_env(SimConfig(task="lift", cameras=()))
    spec = {"pixels/front": ((image_size, image_size, 3), np.dtype(np.uint8))} | {
        k: ((1,), np.dtype(np.float32)) for k in SO101_JOINT_KEYS
    }
    path = export_policy(SAC(SACConfig(hidden_dims=(8,)), spec, env.action_space), tmp_path / name)
    env.close()
    return path


def deploy_config(tmp_path, policy, out_dir):
    return deploy.Config(
        policy=policy,
        robot=ArmConfig(type="sim_so101", cameras=("front",), calibration_dir=str(tmp_path / "calib")),
        env=LeRobotEnvConfig(
            control_hz=200.0,
            max_episode_steps=4,
            image_size=24,
            reset_settle_steps=1,
            keyboard_estop=False,
            watchdog=WatchdogConfig(enabled=False),
        ),
        twin_control_hz=20.0,
        out_dir=out_dir,
        video_camera=None,
    )


def test_deploy_failing_on_a_policy_that_does_not_fit_leaves_the_last_run_untouched(tmp_path):
    out = tmp_path / "deploy"
    assert deploy.main(deploy_config(tmp_path, policy_for(tmp_path, 24, "good.pt"), out)) == 0
    before = tree(out)
    assert {"config.json", "metrics.json", "safety.jsonl"} <= set(before)
    other = policy_for(tmp_path, 16, "other.pt")  # reads 16 px frames; the robot env gives 24 px
    with pytest.raises(ConfigError, match=r"reads 'pixels/front' as uint8\[16, 16, 3\]"):
        deploy.main(deploy_config(tmp_path, other, out))
    assert tree(out) == before
    fresh = tmp_path / "fresh"
    with pytest.raises(ConfigError, match="uint8"):
        deploy.main(deploy_config(tmp_path, other, fresh))
    assert not fresh.exists()  # no empty safety.jsonl or config.json left behind


def test_finetune_failing_on_a_robot_that_does_not_fit_leaves_the_last_run_untouched(tmp_path):
    from types import SimpleNamespace

    import torch

    from buffer import BufferConfig
    from vlm.config import AuxRewardConfig, OracleConfig, WorkerConfig
    from vlmrl.pipelines import finetune

    sim_cfg = SimConfig(task="lift", cameras=("front",), image_size=32)
    env = make_env(sim_cfg)
    obs = {"pixels/front": ((32, 32, 3), np.dtype(np.uint8))} | {
        k: ((1,), np.dtype(np.float32)) for k in SO101_JOINT_KEYS
    }
    agent = SAC(SACConfig(hidden_dims=(8,)), obs, env.action_space)
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
    spec = {k: [list(s), d.name] for k, (s, d) in obs.items()}
    torch.save(
        {"config": train, "agent": agent.state_dict(), "policy_obs_spec": spec},
        run / "checkpoint" / "state.pt",
    )
    base = deploy_config(tmp_path, None, tmp_path / "ft")  # a 24 px robot env: the policy reads 32 px
    fields = {f: getattr(base, f) for f in ("robot", "env", "twin_control_hz")}

    def cfg(out_dir):
        return finetune.Config(
            from_run=run,
            out_dir=out_dir,
            episodes=1,
            buffer=BufferConfig(storage="zarr", capacity_steps=50),
            **fields,
        )

    fresh = tmp_path / "fresh"
    with pytest.raises(ConfigError, match=r"trained on 32 px frames, not --env\.image-size 24"):
        finetune.main(cfg(fresh))
    assert not fresh.exists()  # no config.json, empty safety.jsonl or empty buffer.zarr left behind
    previous = tmp_path / "ft"
    previous.mkdir()
    (previous / "config.json").write_text('{"from": "the previous run"}\n')
    (previous / "safety.jsonl").write_text('{"step": 3}\n')
    before = tree(previous)
    with pytest.raises(ConfigError, match=r"not --env\.image-size 24"):
        finetune.main(cfg(previous))
    assert tree(previous) == before
