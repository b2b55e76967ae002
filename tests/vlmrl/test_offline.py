"""vlmrl train --offline end to end: vlmrl record (twin) -> vlmrl score -> IQL on the zarr store (twin
evaluation) and on its LeRobotDataset v3.0 export (held-out metrics); exact resume; bad input in one line."""

from __future__ import annotations

import dataclasses
import json
import shutil

import numpy as np
import pytest
import torch
import zarr

from agents.config import IQLConfig, PixelEncoderConfig
from vlmrl import cli
from vlmrl.errors import ConfigError
from vlmrl.offline.datasets import label_rewards, load_episodes
from vlmrl.offline.run import OfflineConfig, main

TINY = IQLConfig(hidden_dims=(16, 16), pixel=PixelEncoderConfig(channels=4, num_layers=2, feature_dim=8))


def offline_cfg(data, run_dir, **overrides) -> OfflineConfig:
    base = dict(
        data=data,
        policy_obs="robot",
        run_dir=str(run_dir),
        agent=TINY,
        gradient_steps=20,
        batch_size=8,
        eval_every_steps=10,
        eval_episodes=1,
        checkpoint_every_steps=10,
        holdout_fraction=0.34,
    )
    return OfflineConfig(**(base | overrides))


def test_offline_on_a_twin_store_evaluates_in_the_twin_and_exports(recorded, tmp_path):
    store = recorded / "episodes.zarr"
    episodes = load_episodes(store)
    assert set(episodes.aux) == {"oracle"} and episodes.num_episodes == 3
    sparse = label_rewards(episodes, "sparse")
    both = label_rewards(episodes, "sparse+aux", aux_weight=0.5)
    np.testing.assert_allclose(both, sparse + 0.5 * episodes.aux["oracle"] * _not_last(episodes))
    assert main(offline_cfg(store, tmp_path / "run", reward="sparse+aux")) == 0
    report = (tmp_path / "run" / "report.md").read_text()
    assert "success rate in the SO-101 twin" in report and "sparse+aux" in report
    assert "success_rate" in report  # twin evaluation, not the held-out metrics
    from agents.export import load_policy

    policy = load_policy(tmp_path / "run" / "policy.pt")
    assert sorted(policy.obs_spec) == sorted(k for k in episodes.obs if k != "state")  # joints + pixels


def _not_last(episodes) -> np.ndarray:
    mask = np.ones(len(episodes.action), np.float32)
    mask[episodes.ends - 1] = 0.0
    return mask


def test_offline_on_a_lerobot_export_reports_held_out_metrics(recorded, tmp_path):
    data = recorded / "lerobot"
    assert load_episodes(data).aux.keys() == {"oracle"}  # the sidecar parquet vlmrl score wrote
    run = tmp_path / "run"
    code = cli.main(["train", "--offline", str(data), "--reward", "scorer:oracle", *cli_args(run)])
    assert code == 0
    history = torch.load(run / "checkpoint.pt", weights_only=False)["history"]
    assert {"value_success", "value_failure", "value_auc", "action_mae"} <= set(history[-1])
    assert np.isfinite(history[-1]["action_mae"])


def cli_args(run) -> list[str]:
    return [
        "--run-dir", str(run), "--total-steps", "20", "--batch-size", "8", "--eval-every-steps", "10",
        "--iql.hidden-dims", "16", "16", "--iql.pixel.channels", "4", "--iql.pixel.num-layers", "2",
        "--no-progress", "--policy-obs", "robot",
    ]  # fmt: skip


def test_resume_continues_exactly(recorded, tmp_path):
    store = recorded / "episodes.zarr"
    assert main(offline_cfg(store, tmp_path / "whole")) == 0
    assert main(offline_cfg(store, tmp_path / "split", stop_after_steps=10)) == 0
    assert main(OfflineConfig(resume=str(tmp_path / "split"))) == 0
    whole = torch.load(tmp_path / "whole" / "checkpoint.pt", weights_only=False)
    split = torch.load(tmp_path / "split" / "checkpoint.pt", weights_only=False)
    assert split["step"] == whole["step"] == 20
    for name in ("actor", "critic", "value"):
        for a, b in zip(whole["agent"][name].values(), split["agent"][name].values(), strict=True):
            assert torch.equal(a, b), name


def state_only_store(path):
    from buffer import BufferConfig, make_buffer

    buffer = make_buffer(
        BufferConfig(storage="zarr", capacity_steps=64),
        {"state": ((3,), np.dtype(np.float32))},
        2,
        ("success",),
        path=str(path),
    )
    with buffer:
        buffer.add_episode(
            {"state": np.zeros((5, 3), np.float32)},
            np.zeros((4, 2)),
            np.zeros(4),
            np.zeros(4, bool),
            np.eye(4, dtype=bool)[3],
        )
    return path


def test_bad_input_gets_one_line(recorded, tmp_path, capsys):
    store = recorded / "episodes.zarr"
    state_only = state_only_store(tmp_path / "state.zarr")
    truncated = tmp_path / "truncated.zarr"
    shutil.copytree(store, truncated)
    text = (truncated / "zarr.json").read_text()
    (truncated / "zarr.json").write_text(text[: len(text) // 2])  # metadata read through buffer.metadata
    cases = {
        "zarr.json": (truncated, []),
        "no aux_reward/hf-x": (store, ["--reward", "scorer:hf-x"]),
        "has no LeRobot joint keys": (state_only, []),  # cli_args ask for --policy-obs robot
        "neither a vlmrl zarr store": (tmp_path / "nothing", []),
        "expected sparse, aux": (store, ["--reward", "dense"]),
    }
    for expected, (data, args) in cases.items():
        code = cli.main(["train", "--offline", str(data), *cli_args(tmp_path / "bad"), *args])
        err = capsys.readouterr().err.strip()
        assert code == 1 and expected in err and len(err.splitlines()) == 1, err
        assert "vlmrl score" in err or not expected.startswith("no aux")
    assert not (tmp_path / "bad").exists()  # a run that cannot start leaves no directory


def test_empty_nan_actionless_and_mismatched_datasets_get_one_line(recorded, tmp_path, capsys):
    """Through the CLI, as a user meets them: exit code 1, one line naming what is wrong, no run directory."""
    from buffer import BufferConfig, make_buffer

    empty = tmp_path / "empty.zarr"
    make_buffer(
        BufferConfig(storage="zarr", capacity_steps=64),
        {"state": ((3,), np.dtype(np.float32))},
        2,
        (),
        path=str(empty),
    ).close()
    nan_store = tmp_path / "nan.zarr"
    shutil.copytree(recorded / "episodes.zarr", nan_store)
    action = zarr.open_array(str(nan_store / "action"), mode="a")
    action[3, 1] = np.nan
    actionless = tmp_path / "actionless"
    shutil.copytree(recorded / "lerobot", actionless)
    info = json.loads((actionless / "meta" / "info.json").read_text())
    del info["features"]["action"]
    (actionless / "meta" / "info.json").write_text(json.dumps(info))
    cases = {
        "holds no episodes": (empty, "state"),
        "'action' holds NaN or inf (episode 0, step 3)": (nan_store, "robot"),
        "no 'action' feature": (actionless, "robot"),
        "holds no camera frames": (empty, "pixels"),  # keys against --policy-obs (robot: test_bad_input...)
    }
    for expected, (data, policy_obs) in cases.items():
        code = cli.main(["train", "--offline", str(data), *cli_args(tmp_path / "bad")[:-1], policy_obs])
        err = capsys.readouterr().err.strip()
        assert code == 1 and expected in err and len(err.splitlines()) == 1, err
    assert not (tmp_path / "bad").exists()
    with pytest.raises(ConfigError, match="holds no episodes"):
        load_episodes(empty)


def test_sparse_reward_marks_transitions_that_reach_success(recorded):
    episodes = load_episodes(recorded / "episodes.zarr")
    rewards = label_rewards(episodes, "sparse")
    for s, e in zip(episodes.starts, episodes.ends):
        np.testing.assert_array_equal(
            rewards[s : e - 1], (episodes.success[s + 1 : e] > 0.5).astype(np.float32)
        )
        assert rewards[e - 1] == 0.0
    with pytest.raises(ConfigError, match="expected sparse, aux"):
        label_rewards(episodes, "dense")
    assert dataclasses.is_dataclass(OfflineConfig())


@pytest.mark.parametrize("camera_dtype", ["video", "image"])
def test_offline_on_a_dataset_written_by_lerobots_own_recorder(tmp_path, camera_dtype):
    """A LeRobotDataset v3.0 made by lerobot's LeRobotDataset.create / add_frame / save_episode (its
    recorder's API), cameras as AV1 video or as PNG images (video_path null), success marked on the last
    frame only, as LeRobot's recorders do."""
    from lerobot.datasets.lerobot_dataset import LeRobotDataset

    motors = [
        f"{m}.pos"
        for m in ("shoulder_pan", "shoulder_lift", "elbow_flex", "wrist_flex", "wrist_roll", "gripper")
    ]
    features = {
        "observation.state": {"dtype": "float32", "shape": (6,), "names": motors},
        "action": {"dtype": "float32", "shape": (6,), "names": motors},
        "observation.images.front": {"dtype": camera_dtype, "shape": (32, 32, 3), "names": ["height", "width", "channels"]},
        "next.success": {"dtype": "bool", "shape": (1,), "names": None},
    }  # fmt: skip
    root = tmp_path / "native"
    dataset = LeRobotDataset.create(
        "local/native", fps=20, features=features, root=root, robot_type="so101_follower",
        use_videos=camera_dtype == "video",
    )  # fmt: skip
    rng = np.random.default_rng(0)
    for episode in range(3):
        for frame in range(8):
            dataset.add_frame({
                "observation.state": rng.normal(size=6).astype(np.float32),
                "action": rng.normal(size=6).astype(np.float32),
                "observation.images.front": rng.integers(0, 256, (32, 32, 3), dtype=np.uint8),
                "next.success": np.array([episode == 0 and frame == 7]),
                "task": "Pick up the red cube.",
            })  # fmt: skip
        dataset.save_episode()
    dataset.finalize()
    assert json.loads((root / "meta" / "info.json").read_text())["codebase_version"] == "v3.0"
    episodes = load_episodes(root)
    assert episodes.num_episodes == 3 and episodes.action.shape == (24, 6)
    assert episodes.episode_success().tolist() == [True, False, False]  # the last frame's success is kept
    run = tmp_path / "run"
    assert cli.main(["train", "--offline", str(root), *cli_args(run)]) == 0
    history = torch.load(run / "checkpoint.pt", weights_only=False)["history"]
    assert {"action_mae", "value_auc"} <= set(history[-1]) and (run / "policy.pt").is_file()


def test_a_train_config_becomes_the_offline_run_it_asks_for() -> None:
    from pathlib import Path

    from vlmrl.offline.run import from_train_config
    from vlmrl.online.config import TrainConfig

    base = TrainConfig()
    same = dict(  # fields of the same name and meaning in both configs
        batch_size=64,
        eval_every_steps=321,
        eval_episodes=7,
        checkpoint_every_steps=111,
        stop_after_steps=99,
        seed=5,
        run_dir="runs/x",
        resume="runs/y",
        torch_threads=2,
    )
    cfg = dataclasses.replace(
        base,
        offline=Path("rec/episodes.zarr"),
        reward="sparse+aux",
        aux_reward_weight=0.25,
        policy_obs="robot",
        iql=dataclasses.replace(base.iql, expectile=0.8),
        buffer=dataclasses.replace(base.buffer, gamma=0.95),
        total_steps=1234,
        **same,
        then_online=4000,
    )
    assert from_train_config(cfg) == OfflineConfig(
        data=Path("rec/episodes.zarr"),
        reward="sparse+aux",
        aux_weight=0.25,
        policy_obs="robot",
        agent=dataclasses.replace(base.iql, expectile=0.8, seed=5),
        gamma=0.95,
        gradient_steps=1234,
        **same,
        then_online_steps=4000,
    )
    plain = from_train_config(dataclasses.replace(base, aux_reward_weight=0.0))
    assert plain.aux_weight == 1.0 and plain.data == Path("")  # no weight given: the aux reward counts once


@pytest.mark.parametrize(
    ("policy_obs", "available", "keys"),
    [
        ("auto", ["state", "pixels/front"], ["state"]),
        ("state", ["state", "pixels/front"], ["state"]),
        ("pixels", ["state", "pixels/wrist", "pixels/front"], ["state", "pixels/front", "pixels/wrist"]),
        (
            "auto",
            ["gripper.pos", "shoulder_pan.pos", "pixels/front"],
            ["gripper.pos", "shoulder_pan.pos", "pixels/front"],
        ),
        ("robot", ["state", "elbow.pos", "pixels/front"], ["elbow.pos", "pixels/front"]),
    ],
)
def test_the_policy_reads_the_keys_its_kind_needs(policy_obs, available, keys) -> None:
    from vlmrl.offline.run import select_obs_keys

    assert select_obs_keys(policy_obs, available, "data.zarr") == keys


@pytest.mark.parametrize(
    ("policy_obs", "available", "message"),
    [
        (
            "state",
            ["elbow.pos"],
            r"^--policy-obs state: data.zarr has no 'state' observation \(it has \['elbow.pos'\]\); use --policy-obs robot$",
        ),
        (
            "pixels",
            ["elbow.pos", "pixels/front"],
            r"^--policy-obs pixels: data.zarr has no 'state' observation",
        ),
        (
            "pixels",
            ["state"],
            r"^--policy-obs pixels: data.zarr holds no camera frames \(it has \['state'\]\)$",
        ),
        (
            "robot",
            ["state", "pixels/front"],
            r"^--policy-obs robot: data.zarr has no LeRobot joint keys \(\*\.pos; it has",
        ),
    ],
)
def test_data_without_what_the_policy_needs_is_refused_in_one_line(policy_obs, available, message) -> None:
    from vlmrl.offline.run import select_obs_keys

    with pytest.raises(ConfigError, match=message):
        select_obs_keys(policy_obs, available, "data.zarr")


def test_without_a_twin_the_action_box_is_the_datas_range_widened_by_five_percent() -> None:
    import gymnasium as gym

    from vlmrl.offline.run import action_box

    class Data:
        action = np.array(
            [[0.0, 1.0, 2.0], [1.0, 1.0, -2.0], [9.0, 9.0, 9.0]], np.float32
        )  # last row: no step

        def transition_rows(self) -> np.ndarray:
            return np.array([0, 1])

    box = action_box(Data(), None, gym)
    np.testing.assert_allclose(box.low, [-0.05, 1.0 - 1e-3, -2.2], rtol=1e-6)
    np.testing.assert_allclose(box.high, [1.05, 1.0 + 1e-3, 2.2], rtol=1e-6)
    assert box.dtype == np.float32
    twin = gym.spaces.Box(-1.0, 1.0, (3,), np.float32)

    class Env:
        action_space = twin

    assert action_box(Data(), Env(), gym) is twin
