"""LeRobotDataset import/export: a v3.0 round trip through lerobot's writer, a hand-written v2.1 import."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from buffer import BufferConfig, BufferError, make_buffer
from buffer.io import export_lerobot, import_lerobot, lerobot_spec

H, W = 32, 48
OBS_SPEC = {"state": ((3,), np.float32), "pixels/front": ((H, W, 3), np.uint8)}


def smooth_frame(e: int, t: int) -> np.ndarray:
    """A frame video codecs keep close: a gradient whose level encodes (e, t)."""
    yy, xx = np.mgrid[0:H, 0:W]
    base = (yy * 2 + xx + 20 * t + 60 * e) % 200 + 20
    return np.stack([base, 255 - base, np.full_like(base, 30 * e + 40)], -1).astype(np.uint8)


def fill(buf, n_episodes: int = 3) -> None:
    for e in range(n_episodes):
        t_len = 4 + e
        obs = {
            "state": np.array([[e, t, e * t] for t in range(t_len + 1)], np.float32),
            "pixels/front": np.stack([smooth_frame(e, t) for t in range(t_len + 1)]),
        }
        terminated = np.zeros(t_len, bool)
        truncated = np.zeros(t_len, bool)
        (terminated if e % 2 == 0 else truncated)[-1] = True
        info = {"success": np.arange(t_len + 1) == t_len, "progress": np.linspace(0, 1, t_len + 1)}
        buf.add_episode(
            obs, np.full((t_len, 2), e, np.float32), np.arange(t_len) * 0.5, terminated, truncated, info
        )


@pytest.mark.slow
def test_v3_export_then_import_round_trip(tmp_path: Path):
    src = make_buffer(BufferConfig(capacity_steps=100), OBS_SPEC, 2)
    fill(src)
    assert export_lerobot(src, tmp_path / "ds", fps=10, task="lift the cube") == 3
    assert json.loads((tmp_path / "ds" / "meta" / "info.json").read_text())["codebase_version"] == "v3.0"

    obs_spec, action_dim, info_keys = lerobot_spec(tmp_path / "ds")
    assert obs_spec == OBS_SPEC and action_dim == 2 and set(info_keys) == {"success", "progress"}
    dst = make_buffer(
        BufferConfig(storage="zarr", capacity_steps=100), obs_spec, action_dim, info_keys, str(tmp_path / "z")
    )
    assert import_lerobot(tmp_path / "ds", dst) == 3
    for e in range(3):
        rows_a, rows_b = np.arange(*src.episode_rows(e)), np.arange(*dst.episode_rows(e))
        for name in ["state", "action", "reward", "terminated", "truncated", "info/success", "info/progress"]:
            np.testing.assert_array_equal(
                src.storage.read(name, rows_a), dst.storage.read(name, rows_b), err_msg=name
            )
        a = src.storage.read("pixels/front", rows_a).astype(int)
        b = dst.storage.read("pixels/front", rows_b).astype(int)
        assert np.abs(a - b).mean() < 6, "frames changed more than the video codec's loss"


def write_v21(root: Path, episodes: list[int]) -> None:
    """A LeRobotDataset v2.1 written by hand: per-episode parquet + mp4, meta/info.json, episodes.jsonl."""
    import av
    import pyarrow as pa
    import pyarrow.parquet as pq

    features = {
        "observation.state": {"dtype": "float32", "shape": [3], "names": None},
        "observation.images.front": {
            "dtype": "video",
            "shape": [H, W, 3],
            "names": ["height", "width", "channels"],
        },
        "action": {"dtype": "float32", "shape": [2], "names": None},
        "next.reward": {"dtype": "float32", "shape": [1], "names": None},
        "next.done": {"dtype": "bool", "shape": [1], "names": None},
        "next.success": {"dtype": "bool", "shape": [1], "names": None},
        "timestamp": {"dtype": "float32", "shape": [1], "names": None},
        "frame_index": {"dtype": "int64", "shape": [1], "names": None},
        "episode_index": {"dtype": "int64", "shape": [1], "names": None},
        "index": {"dtype": "int64", "shape": [1], "names": None},
        "task_index": {"dtype": "int64", "shape": [1], "names": None},
    }
    info = {
        "codebase_version": "v2.1",
        "fps": 10,
        "chunks_size": 1000,
        "total_episodes": len(episodes),
        "data_path": "data/chunk-{episode_chunk:03d}/episode_{episode_index:06d}.parquet",
        "video_path": "videos/chunk-{episode_chunk:03d}/{video_key}/episode_{episode_index:06d}.mp4",
        "features": features,
    }
    (root / "meta").mkdir(parents=True)
    (root / "meta" / "info.json").write_text(json.dumps(info))
    lines = [json.dumps({"episode_index": e, "tasks": ["push"], "length": n}) for e, n in enumerate(episodes)]
    (root / "meta" / "episodes.jsonl").write_text("\n".join(lines) + "\n")
    (root / "meta" / "tasks.jsonl").write_text(json.dumps({"task_index": 0, "task": "push"}) + "\n")
    index = 0
    for e, n in enumerate(episodes):
        table = pa.table(
            {
                "observation.state": [[float(e), float(t), 0.5] for t in range(n)],
                "action": [[float(t), -float(t)] for t in range(n)],
                "next.reward": [float(t == n - 1) for t in range(n)],
                "next.done": [t == n - 1 for t in range(n)],
                "next.success": [t == n - 1 for t in range(n)],
                "timestamp": [t / 10 for t in range(n)],
                "frame_index": list(range(n)),
                "episode_index": [e] * n,
                "index": list(range(index, index + n)),
                "task_index": [0] * n,
            }
        )
        index += n
        data = root / info["data_path"].format(episode_chunk=0, episode_index=e)
        data.parent.mkdir(parents=True, exist_ok=True)
        pq.write_table(table, data)
        video = root / info["video_path"].format(
            episode_chunk=0, video_key="observation.images.front", episode_index=e
        )
        video.parent.mkdir(parents=True, exist_ok=True)
        with av.open(str(video), "w") as container:
            stream = container.add_stream("libx264", rate=10)
            stream.width, stream.height, stream.pix_fmt = W, H, "yuv444p"
            stream.options = {"crf": "0"}
            for t in range(n):
                for packet in stream.encode(av.VideoFrame.from_ndarray(smooth_frame(e, t), format="rgb24")):
                    container.mux(packet)
            for packet in stream.encode():
                container.mux(packet)


def test_v21_import(tmp_path: Path):
    write_v21(tmp_path / "ds", [5, 3])
    obs_spec, action_dim, info_keys = lerobot_spec(tmp_path / "ds")
    assert obs_spec == OBS_SPEC and info_keys == ("success",)
    buf = make_buffer(BufferConfig(capacity_steps=50), obs_spec, action_dim, info_keys)
    assert import_lerobot(tmp_path / "ds", buf) == 2
    assert buf.num_episodes == 2 and buf.num_transitions == 4 + 2
    rows = np.arange(*buf.episode_rows(0))
    np.testing.assert_array_equal(buf.storage.read("state", rows)[:, 1], np.arange(5))
    np.testing.assert_array_equal(buf.storage.read("action", rows)[:4, 0], np.arange(4))
    np.testing.assert_array_equal(buf.storage.read("terminated", rows), [0, 0, 0, 1, 0])
    # next.success on the last frame only: its transition is dropped, the final observation keeps it.
    np.testing.assert_array_equal(buf.storage.read("info/success", rows), [0, 0, 0, 0, 1])
    frames = buf.storage.read("pixels/front", rows).astype(int)
    expected = np.stack([smooth_frame(0, t) for t in range(5)]).astype(int)
    assert np.abs(frames - expected).max() <= 3  # lossless x264 in yuv444: only colour conversion rounding


def test_not_a_dataset_fails_clearly(tmp_path: Path):
    with pytest.raises(BufferError, match=r"meta/info.json: not a LeRobotDataset"):
        lerobot_spec(tmp_path)


MOTORS = ["shoulder_pan.pos", "shoulder_lift.pos", "elbow_flex.pos"]
ROBOT_OBS = {m: ((1,), np.float32) for m in MOTORS} | {"pixels/front": ((H, W, 3), np.uint8)}


def fill_robot(buf, n_episodes: int = 2, t_len: int = 4) -> None:
    """Episodes as `LeRobotEnv` records them: one (1,) key per motor, actions = absolute joint targets."""
    for e in range(n_episodes):
        joints = np.array([[10 * e + t, -t, 0.5 * t] for t in range(t_len + 1)], np.float32)
        obs = {m: joints[:, i : i + 1] for i, m in enumerate(MOTORS)}
        obs["pixels/front"] = np.stack([smooth_frame(e, t) for t in range(t_len + 1)])
        terminated = np.arange(t_len) == t_len - 1
        info = {"success": np.arange(t_len + 1) == t_len, "progress": np.linspace(0, 1, t_len + 1)}
        buf.add_episode(obs, joints[1:] + 1.0, np.zeros(t_len), terminated, np.zeros(t_len, bool), info)


@pytest.mark.slow
def test_export_is_consumed_by_lerobots_own_dataset_and_replay_code_path(tmp_path: Path):
    """LeRobot's replay script (lerobot/scripts/lerobot_replay.py, 0.4.4) loads one episode with
    LeRobotDataset, filters its frames, and sends `{name: action[i] for i, name in
    enumerate(dataset.features["action"]["names"])}` to the robot each frame. The same steps here, with
    a robot that records what it was sent (the script itself imports lerobot.policies)."""
    from lerobot.datasets.lerobot_dataset import LeRobotDataset

    src = make_buffer(BufferConfig(capacity_steps=100), ROBOT_OBS, len(MOTORS))
    fill_robot(src)
    root = tmp_path / "ds"
    assert export_lerobot(src, root, fps=10, robot_type="so101_follower", action_names=MOTORS) == 2
    assert not (root / "images").exists()  # lerobot's staging folder does not stay behind

    dataset = LeRobotDataset("local/vlmrl-export", root=root, episodes=[1])
    assert dataset.meta.robot_type == "so101_follower"
    assert dataset.features["observation.state"]["names"] == MOTORS
    episode_frames = dataset.hf_dataset.filter(lambda x: x["episode_index"] == 1)
    actions = episode_frames.select_columns("action")
    sent = []
    for idx in range(len(episode_frames)):
        action_array = actions[idx]["action"]
        sent.append(
            {name: float(action_array[i]) for i, name in enumerate(dataset.features["action"]["names"])}
        )
    targets = np.array([[10 + t, -t, 0.5 * t] for t in range(1, 5)], np.float32) + 1.0  # joints[1:] + 1
    assert [list(a) for a in sent] == [MOTORS] * 5
    got = np.array([[a[m] for m in MOTORS] for a in sent])
    np.testing.assert_allclose(got[:4], targets)  # the recorded targets, in order
    np.testing.assert_allclose(got[4], got[3])  # the final frame holds the last target, not zeros
    state = np.asarray(dataset[0]["observation.state"])  # the first frame of episode 1
    np.testing.assert_allclose(state, [10, 0, 0])

    # Our own import splits the named state back into the motor keys: a round trip.
    obs_spec, action_dim, info_keys = lerobot_spec(root)
    assert obs_spec == ROBOT_OBS and action_dim == 3
    dst = make_buffer(BufferConfig(capacity_steps=100), obs_spec, action_dim, info_keys)
    assert import_lerobot(root, dst) == 2
    rows_a, rows_b = np.arange(*src.episode_rows(1)), np.arange(*dst.episode_rows(1))
    for name in [*MOTORS, "action"]:
        np.testing.assert_array_equal(src.storage.read(name, rows_a), dst.storage.read(name, rows_b))


def test_export_refuses_action_names_that_do_not_fit(tmp_path: Path):
    src = make_buffer(BufferConfig(capacity_steps=100), ROBOT_OBS, len(MOTORS))
    fill_robot(src, n_episodes=1)
    with pytest.raises(BufferError, match=r"2 action names .* for 3 actions"):
        export_lerobot(src, tmp_path / "ds", fps=10, action_names=MOTORS[:2])
    assert not (tmp_path / "ds").exists()
