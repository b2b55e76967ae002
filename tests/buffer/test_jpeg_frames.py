"""frame_codec="jpeg" (issue 18, item 4): lossy frames with a bounded error, recorded in the store,
reopened as stored, readable by plain zarr-python with the codec registered as docs/recordings.md says."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from buffer import BufferConfig, BufferError, make_buffer
from buffer.metadata import read_store_metadata

SHAPE = (32, 32, 3)
OBS_SPEC = {"state": ((2,), np.float32), "pixels/front": (SHAPE, np.uint8)}
RECORDINGS_DOC = Path(__file__).resolve().parents[2] / "docs" / "recordings.md"


def camera_frames(episode: int, n: int) -> np.ndarray:
    """A gradient scene with a moving coloured square and sigma-3 sensor noise (camera-like)."""
    rng = np.random.default_rng(episode)
    yy, xx = np.mgrid[0:32, 0:32]
    scene = np.stack([yy * 6, xx * 6, (yy + xx) * 3], axis=-1) + 30
    frames = np.empty((n, *SHAPE), np.uint8)
    for t in range(n):
        img = scene.copy()
        img[t % 24 : t % 24 + 8, 10:18] = (200, 60, 30)
        frames[t] = np.clip(img + rng.normal(0, 3, SHAPE), 0, 255)
    return frames


def add_episode(buf, episode: int, n: int = 12) -> np.ndarray:
    frames = camera_frames(episode, n)
    steps = n - 1
    buf.add_episode(
        {"state": np.zeros((n, 2), np.float32), "pixels/front": frames},
        np.zeros((steps, 2), np.float32),
        np.zeros(steps, np.float32),
        np.zeros(steps, bool),
        np.arange(steps) == steps - 1,
        {"success": np.zeros(n, np.float32)},
    )
    return frames


def open_store(path: Path, **fields):
    cfg = BufferConfig(storage="zarr", capacity_steps=120, frames_per_shard=16, **fields)
    return make_buffer(cfg, OBS_SPEC, 2, info_keys=("success",), path=str(path))


def stored_frames(buf, n_rows: int) -> np.ndarray:
    return buf.storage.read("pixels/front", np.arange(n_rows))


def test_default_quality_round_trip_error_is_bounded_and_recorded(tmp_path):
    buf = open_store(tmp_path / "s.zarr", frame_codec="jpeg")
    written = np.concatenate([add_episode(buf, e) for e in range(3)])
    err = np.abs(stored_frames(buf, len(written)).astype(int) - written)
    buf.close()
    # Quality 90 without chroma subsampling: the error is of the order of the sensor noise.
    assert err.mean() < 3.5 and np.percentile(err, 99.9) < 24 and err.max() < 64
    assert err.mean() > 0  # lossy indeed
    meta = read_store_metadata(tmp_path / "s.zarr")
    assert (meta.frame_codec, meta.frame_quality) == ("jpeg", 90)
    array_meta = json.loads((tmp_path / "s.zarr" / "pixels" / "front" / "zarr.json").read_text())
    inner = array_meta["codecs"][0]["configuration"]["codecs"]
    assert inner[0] == {
        "name": "numcodecs.imagecodecs_jpeg",
        "configuration": {"level": 90, "subsampling": "444"},
    }
    shards = sum(p.stat().st_size for p in (tmp_path / "s.zarr" / "pixels" / "front" / "c").rglob("*"))
    assert shards < len(written) * np.prod(SHAPE)  # 32 px frames: JPEG headers dominate, see the benchmark


def test_lower_quality_is_smaller_and_worse(tmp_path):
    sizes, errors = {}, {}
    for quality in (30, 95):
        buf = open_store(tmp_path / f"q{quality}.zarr", frame_codec="jpeg", frame_quality=quality)
        written = add_episode(buf, 0)
        errors[quality] = np.abs(stored_frames(buf, len(written)).astype(int) - written).mean()
        buf.close()
        sizes[quality] = sum(p.stat().st_size for p in (tmp_path / f"q{quality}.zarr" / "pixels").rglob("*"))
        assert read_store_metadata(tmp_path / f"q{quality}.zarr").frame_quality == quality
    assert sizes[30] < sizes[95] and errors[30] > errors[95]


def test_lossless_default_is_unchanged(tmp_path):
    assert BufferConfig().frame_codec == "none"
    buf = open_store(tmp_path / "s.zarr")
    written = add_episode(buf, 0)
    np.testing.assert_array_equal(stored_frames(buf, len(written)), written)
    buf.close()
    attrs = json.loads((tmp_path / "s.zarr" / "zarr.json").read_text())["attributes"]["vlmrl_buffer"]
    assert attrs["frame_codec"] == "none" and "frame_quality" not in attrs
    meta = read_store_metadata(tmp_path / "s.zarr")
    assert (meta.frame_codec, meta.frame_quality) == ("none", None)
    array_meta = json.loads((tmp_path / "s.zarr" / "pixels" / "front" / "zarr.json").read_text())
    inner = array_meta["codecs"][0]["configuration"]["codecs"]
    assert [c["name"] for c in inner] == ["bytes", "crc32c"]


def test_reopen_keeps_the_stored_codec_and_resumes(tmp_path):
    buf = open_store(tmp_path / "s.zarr", frame_codec="jpeg", frame_quality=60)
    add_episode(buf, 0)
    before = stored_frames(buf, 12)
    buf.close()
    again = open_store(tmp_path / "s.zarr")  # a lossless config: the store's own codec and quality win
    np.testing.assert_array_equal(stored_frames(again, 12), before)
    written = add_episode(again, 1)
    assert again.num_episodes == 2
    err = np.abs(again.storage.read("pixels/front", np.arange(12, 24)).astype(int) - written)
    assert 0 < err.mean() < 5
    again.close()
    assert read_store_metadata(tmp_path / "s.zarr").frame_quality == 60


def readme_snippet() -> str:
    """The guide's code block that registers the codec for plain zarr-python (no vlmrl import)."""
    text = RECORDINGS_DOC.read_text(encoding="utf-8")
    section = text[text.index("## Lossy frames") :]
    return re.search(r"```python\n(.*?)```", section, re.S).group(1)  # type: ignore[union-attr]


def test_plain_zarr_python_reads_the_store_as_the_guide_says(tmp_path):
    buf = open_store(tmp_path / "s.zarr", frame_codec="jpeg")
    add_episode(buf, 0)
    ours = stored_frames(buf, 12)
    buf.close()
    snippet = readme_snippet()
    assert "vlmrl" not in snippet and "buffer" not in snippet
    code = snippet.replace("runs/record/episodes.zarr", str(tmp_path / "s.zarr"))
    code += f"\nnp.save({str(tmp_path / 'plain.npy')!r}, frames[:12])\n"
    subprocess.run([sys.executable, "-c", code], check=True, cwd=tmp_path, timeout=120)
    np.testing.assert_array_equal(np.load(tmp_path / "plain.npy"), ours)


@pytest.mark.parametrize("quality", [0, 101, 2.5, True])
def test_bad_quality_is_refused_in_one_line(tmp_path, quality):
    with pytest.raises(
        BufferError, match=r"^frame_quality must be an integer JPEG quality in 1\.\.100, got"
    ) as exc:
        open_store(tmp_path / "s.zarr", frame_codec="jpeg", frame_quality=quality)
    assert "\n" not in str(exc.value)
    assert not (tmp_path / "s.zarr").exists()


def test_without_imagecodecs_a_jpeg_store_fails_in_one_line(tmp_path, monkeypatch):
    open_store(tmp_path / "s.zarr", frame_codec="jpeg").close()
    monkeypatch.setitem(sys.modules, "imagecodecs", None)  # import imagecodecs -> ImportError
    with pytest.raises(BufferError, match="needs the imagecodecs package"):
        open_store(tmp_path / "s.zarr")


def test_metadata_of_a_jpeg_store_without_its_quality_is_refused(tmp_path):
    open_store(tmp_path / "s.zarr", frame_codec="jpeg").close()
    root = tmp_path / "s.zarr" / "zarr.json"
    doc = json.loads(root.read_text())
    del doc["attributes"]["vlmrl_buffer"]["frame_quality"]
    root.write_text(json.dumps(doc))
    with pytest.raises(BufferError, match=r"vlmrl_buffer\.frame_quality is missing"):
        read_store_metadata(tmp_path / "s.zarr")
