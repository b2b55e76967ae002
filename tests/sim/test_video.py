"""Video and frame-strip writers, and the random-rollout showcase used by `make demo`."""

from __future__ import annotations

from pathlib import Path

import imageio.v2 as imageio
import numpy as np
import pytest

from sim import SimConfig
from sim.errors import SimError
from sim.showcase import random_rollout_video
from sim.video import write_frame_strip, write_video


def _frames(n: int, size: int = 32) -> np.ndarray:
    frames = np.zeros((n, size, size, 3), dtype=np.uint8)
    for t in range(n):
        frames[t, :, : (t + 1) * size // n] = 255  # a white bar growing left to right
    return frames


def test_video_has_every_frame_at_the_right_size(tmp_path: Path) -> None:
    path = write_video(_frames(12), tmp_path / "clip.mp4", fps=10)
    with imageio.get_reader(path) as reader:
        decoded = [frame for frame in reader]
        fps = reader.get_meta_data()["fps"]
    assert len(decoded) == 12 and decoded[0].shape == (32, 32, 3) and fps == 10
    assert decoded[-1].mean() > decoded[0].mean() + 100  # content survives lossy encoding


def test_odd_sizes_are_padded(tmp_path: Path) -> None:
    path = write_video(np.zeros((3, 31, 33, 3), dtype=np.uint8), tmp_path / "odd.mp4")
    with imageio.get_reader(path) as reader:
        assert reader.get_data(0).shape == (32, 34, 3)


def test_frame_strip_picks_evenly_spaced_frames(tmp_path: Path) -> None:
    frames = _frames(10)
    strip = imageio.imread(write_frame_strip(frames, tmp_path / "strip.png", n=4))
    assert strip.shape == (32, 4 * 32, 3)
    np.testing.assert_array_equal(strip[:, :32], frames[0])
    np.testing.assert_array_equal(strip[:, -32:], frames[-1])


def test_bad_frames_raise_sim_error(tmp_path: Path) -> None:
    with pytest.raises(SimError, match="uint8"):
        write_video(np.zeros((2, 8, 8, 3), dtype=np.float32), tmp_path / "x.mp4")
    with pytest.raises(SimError, match="n >= 1"):
        write_frame_strip(_frames(3), tmp_path / "x.png", n=0)


def test_random_rollout_writes_a_video_and_a_strip(tmp_path: Path) -> None:
    paths = random_rollout_video(
        SimConfig(task="push", image_size=48, cameras=()), tmp_path / "demo", n_steps=10
    )
    assert set(paths) == {"video", "strip"}
    with imageio.get_reader(paths["video"]) as reader:
        assert sum(1 for _ in reader) == 11
    assert imageio.imread(paths["strip"]).shape == (48, 8 * 48, 3)
