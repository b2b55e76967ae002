"""One state layout for recordings and training (issue 36, item 6).

A recording of the twin stores what a training run stores (``state`` is the twin's state vector, beside the
joint keys and the cameras), so it is ``vlmrl train --prior-data`` for a state policy and for a robot policy;
its LeRobot export names ``observation.state`` by the joint keys; ``vlmrl record`` takes the twin's camera
options and randomisation as ``vlmrl train`` names them (``--sim.*``).
"""

from __future__ import annotations

import dataclasses
import json

import numpy as np
import pytest
import zarr

from agents.config import SACConfig
from buffer.config import BufferConfig
from buffer.io import LeRobotReader, lerobot_spec
from buffer.metadata import read_store_metadata
from robot.config import SO101_JOINT_KEYS
from sim.config import SimConfig
from sim.so101.env import STATE_NAMES
from tests.vlmrl.pipeline_helpers import record_config
from vlmrl import cli
from vlmrl.errors import ConfigError
from vlmrl.loop.checkpoint import load_checkpoint
from vlmrl.offline.datasets import load_episodes
from vlmrl.pipelines import record
from vlmrl.pipelines.train import TrainConfig, main


def train_config(run, store, policy_obs: str, cameras: tuple[str, ...]) -> TrainConfig:
    """A few hundred steps of reach in absolute joint targets (the recorded actions' kind)."""
    return TrainConfig(
        sim=SimConfig(
            task="reach",
            reward="shaped",
            action_mode="absolute",
            cameras=cameras,
            image_size=32,
            max_episode_steps=25,
        ),
        agent=SACConfig(hidden_dims=(16, 16)),
        buffer=BufferConfig(capacity_steps=2_000),
        replay="uniform",
        policy_obs=policy_obs,  # type: ignore[arg-type]
        total_steps=150,
        learning_starts=100,
        batch_size=16,
        eval_every_steps=10_000,
        eval_episodes=1,
        video_episodes=0,
        checkpoint_every_steps=10_000,
        run_dir=str(run),
        progress=False,
        prior_data=store,
    )


def test_a_recording_of_the_twin_is_prior_data_for_training_and_exports_joint_names(tmp_path, capsys):
    assert record.main(record_config(tmp_path, task="reach")) == 0
    store = tmp_path / "rec" / "episodes.zarr"
    meta = read_store_metadata(store)
    assert meta.obs_spec["state"] == ((len(STATE_NAMES),), np.dtype(np.float32))  # the training layout
    assert all(meta.obs_spec[k] == ((1,), np.dtype(np.float32)) for k in SO101_JOINT_KEYS)
    assert meta.record["state_names"] == list(STATE_NAMES) and meta.record["action_mode"] == "absolute"
    assert SimConfig(**meta.record["sim_config"]).task == "reach"
    episodes = load_episodes(store)  # the state read with the joints it was observed with
    joints = np.concatenate([episodes.obs[k] for k in SO101_JOINT_KEYS], axis=1)
    np.testing.assert_allclose(episodes.obs["state"][:, :5], np.radians(joints[:, :5]), atol=1e-5)
    np.testing.assert_allclose(episodes.obs["state"][:, 5], joints[:, 5] / 100.0, atol=1e-6)
    assert np.ptp(episodes.obs["state"][:, 6:9], axis=0).max() > 0.01  # the tool centre point moved

    # The export: observation.state is the joint keys, by name; the twin's state beside it, by name.
    features = LeRobotReader(tmp_path / "rec" / "lerobot").features
    assert features["observation.state"]["names"] == list(SO101_JOINT_KEYS)
    assert features["observation.environment_state"]["names"] == list(STATE_NAMES)
    obs_spec, _, _ = lerobot_spec(tmp_path / "rec" / "lerobot")  # imported back under the store's keys
    assert {k: v for k, v in obs_spec.items() if k != "pixels/front"} == {
        k: v for k, v in meta.obs_spec.items() if k != "pixels/front"
    }

    # Prior data for the default state policy and for a robot policy (joints + camera), mapped by key name.
    for policy_obs, cameras in (("state", ()), ("robot", ("front",))):
        run = tmp_path / f"run-{policy_obs}"
        assert main(train_config(run, store, policy_obs, cameras)) == 0
        assert "2 episodes of prior data from" in capsys.readouterr().out
        assert load_checkpoint(run)["loop"].prior_episodes_added == 2

    # Recorded joint targets are not joint deltas: another action mode is refused in one line.
    delta = train_config(tmp_path / "delta", store, "state", ())
    delta = dataclasses.replace(delta, sim=dataclasses.replace(delta.sim, action_mode="delta"))
    with pytest.raises(ConfigError, match=r"its actions are absolute .* --sim\.action-mode delta"):
        main(delta)
    assert not (tmp_path / "delta").exists()


def record_args(tmp_path, out: str, *extra: str) -> list[str]:
    """``vlmrl record`` of one scripted 10-step episode of the twin (``pipeline_helpers.record_config``)."""
    return [
        "record", "--robot.type", "sim_so101", "--robot.cameras", "front",
        "--robot.calibration-dir", str(tmp_path / "calib"), "--env.control-hz", "200",
        "--env.max-episode-steps", "10", "--env.image-size", "32", "--env.reset-settle-steps", "1",
        "--env.no-keyboard-estop", "--env.watchdog.no-enabled", "--twin-control-hz", "20",
        "--source", "scripted", "--episodes", "1", "--no-export-lerobot", "--out-dir", str(tmp_path / out),
        *extra,
    ]  # fmt: skip


def test_record_takes_the_twins_camera_options_and_randomisation(tmp_path):
    cameras = ["--sim.cameras", "front", "wrist", "--sim.image-size", "24"]
    assert cli.main(record_args(tmp_path, "nominal", *cameras)) == 0
    randomized = [*cameras, "--sim.randomize.preset", "light", "--sim.randomize.color", "0.3"]
    assert cli.main(record_args(tmp_path, "randomized", *randomized)) == 0
    frames = {}
    for name in ("nominal", "randomized"):
        store = tmp_path / name / "episodes.zarr"
        meta = read_store_metadata(store)
        assert {meta.obs_spec[f"pixels/{c}"][0] for c in ("front", "wrist")} == {(24, 24, 3)}
        frames[name] = np.asarray(zarr.open_group(str(store), mode="r")["pixels/front"][0])
        sim = meta.record["sim_config"]
        assert sim["cameras"] == ["front", "wrist"] and sim["image_size"] == 24
    written = json.loads((tmp_path / "randomized" / "config.json").read_text())
    assert written["sim"]["randomize"]["preset"] == "light"
    assert meta.record["sim_config"]["randomize"]["color"] == 0.3
    assert not np.array_equal(frames["nominal"], frames["randomized"])  # the same seed, randomised


def test_twin_options_are_refused_for_a_real_arm(tmp_path):
    from sim.config import RandomizeConfig, TwinConfig

    cfg = record_config(tmp_path, sim=TwinConfig(randomize=RandomizeConfig(preset="light")))
    arm = dataclasses.replace(cfg.robot, type="so101_follower", port="/dev/null")
    cfg = dataclasses.replace(cfg, robot=arm)
    with pytest.raises(ConfigError, match=r"--sim\.\* options set the twin's"):
        record.twin_options(cfg)
