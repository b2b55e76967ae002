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
    np.testing.assert_array_equal(buf.storage.read("info/success", rows), [0, 0, 0, 0, 0])
    frames = buf.storage.read("pixels/front", rows).astype(int)
    expected = np.stack([smooth_frame(0, t) for t in range(5)]).astype(int)
    assert np.abs(frames - expected).max() <= 3  # lossless x264 in yuv444: only colour conversion rounding


def test_not_a_dataset_fails_clearly(tmp_path: Path):
    with pytest.raises(BufferError, match=r"meta/info.json: not a LeRobotDataset"):
        lerobot_spec(tmp_path)
