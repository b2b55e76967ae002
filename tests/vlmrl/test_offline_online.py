"""Offline to online (issue #16): `vlmrl train --offline DATA --then-online STEPS` in the twin, with the
data as RLPD prior data, and `vlmrl finetune --from` an offline run on the twin robot."""

from __future__ import annotations

import dataclasses
import json

import numpy as np
import pytest
import torch

from buffer import BufferConfig
from sim.config import SimConfig
from sim.factory import make_env
from vlmrl import cli
from vlmrl.errors import ConfigError
from vlmrl.loop.assembly import open_episode_store
from vlmrl.offline.datasets import mixed_quality_episodes
from vlmrl.online.config import TrainConfig
from vlmrl.online.offline_handover import online_config

SIM = SimConfig(task="lift", cameras=("front",), image_size=32, action_mode="delta", max_episode_steps=8)


@pytest.fixture(scope="module")
def twin_store(tmp_path_factory):
    """A twin store as benchmarks/offline_experiment.py writes it (sim config in its attributes): one
    expert, one noisy and one random lift episode of 8 steps, 32 px front camera."""
    path = tmp_path_factory.mktemp("twin") / "episodes.zarr"
    env = make_env(SIM)
    rollouts = mixed_quality_episodes(env, expert=1, noisy=1, random=1, noise_std=0.3, seed=0)
    spec = {k: (tuple(s.shape), np.dtype(s.dtype)) for k, s in env.observation_space.spaces.items()}
    attrs = {"task_description": "lift", "robot_type": "sim", "sim_config": dataclasses.asdict(SIM)}
    buffer = open_episode_store(
        path, BufferConfig(storage="zarr", capacity_steps=64), spec, env.action_space.shape[0],
        ("success", "progress"), attrs,
    )  # fmt: skip
    with buffer:
        for r in rollouts:
            buffer.add_episode(r["obs"], r["action"], r["reward"], r["terminated"], r["truncated"], r["info"])
    env.close()
    return path


def args(run, *extra: str, policy_obs: str = "state") -> list[str]:
    return [
        "train", "--run-dir", str(run), "--total-steps", "10", "--batch-size", "8", "--eval-every-steps", "10",
        "--eval-episodes", "1", "--iql.hidden-dims", "16", "16", "--iql.pixel.channels", "4",
        "--iql.pixel.num-layers", "2", "--video-episodes", "0", "--no-progress", "--policy-obs", policy_obs, *extra,
    ]  # fmt: skip


def test_then_online_continues_in_the_twin_from_the_offline_agent_with_the_data_as_prior(
    twin_store, tmp_path
):
    run = tmp_path / "run"
    assert cli.main(args(run, "--offline", str(twin_store), "--then-online", "16")) == 0
    online = run / "online"
    cfg = json.loads((online / "config.json").read_text())
    assert cfg["agent"]["hidden_dims"] == [16, 16]  # the offline agent's networks
    assert cfg["agent_from"] == str(run) and cfg["prior_data"] == str(twin_store)
    assert cfg["learning_starts"] == 0 and cfg["total_steps"] == 16  # the policy acts from the first step
    assert (online / "policy.pt").is_file()
    state = torch.load(online / "checkpoint" / "state.pt", weights_only=False)
    assert state["loop"].prior_episodes_added == 3 and state["loop"].step >= 16
    assert state["agent"]["num_updates"] > 0

    # The online agent starts from the offline one: its policy and Q-networks, before any update.
    from vlmrl.online.trainer import Trainer

    start = online_config(TrainConfig(eval_episodes=1, video_episodes=0), run, 8)
    trainer = Trainer.create(dataclasses.replace(start, run_dir=str(tmp_path / "fresh")))
    try:
        offline = torch.load(run / "checkpoint.pt", weights_only=False)["agent"]
        for name in ("actor", "critic", "encoder"):
            for key, value in offline[name].items():
                assert torch.equal(trainer.agent.state_dict()[name][key], value), (name, key)
    finally:
        trainer.link.close()
        trainer.buffer.close()
        trainer.env.close()
        trainer.eval_env.close()


def test_then_online_refuses_data_recorded_on_a_robot_and_a_missing_offline(recorded, tmp_path, capsys):
    run = tmp_path / "run"
    code = cli.main(
        args(run, "--offline", str(recorded / "lerobot"), "--then-online", "8", policy_obs="robot")
    )
    err = capsys.readouterr().err.strip()
    assert code == 1 and "vlmrl finetune --from" in err and len(err.splitlines()) == 1, err
    assert not run.exists()  # refused before the offline run
    with pytest.raises(ConfigError, match="give --offline DATA too"):
        from vlmrl.pipelines.train import main

        main(TrainConfig(then_online=8))


def test_finetune_from_an_offline_run_on_the_twin(recorded, tmp_path):
    """`vlmrl record` on the twin -> offline IQL on robot keys -> `vlmrl finetune --from` it."""
    from tests.vlmrl.test_finetune import config as finetune_config
    from vlmrl.pipelines import finetune

    run = tmp_path / "offline"
    assert cli.main(args(run, "--offline", str(recorded / "episodes.zarr"), policy_obs="robot")) == 0
    cfg = finetune_config(tmp_path, run, episodes=1, batch_size=4)
    last = finetune.run(cfg)
    assert last["steps"] == 6 and last["updates"] == 6
    saved = torch.load(tmp_path / "ft" / "checkpoint" / "state.pt", weights_only=False)
    assert saved["train_config"].agent.hidden_dims == (16, 16)  # the offline agent's networks

    state_run = tmp_path / "state-offline"
    assert cli.main(args(state_run, "--offline", str(recorded / "episodes.zarr"))) == 0
    with pytest.raises(ConfigError, match="privileged 'state'"):
        finetune.run(dataclasses.replace(cfg, from_run=state_run, out_dir=tmp_path / "ft2"))
