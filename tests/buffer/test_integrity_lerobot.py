"""Malformed LeRobotDataset directories (episode files): one BufferError line naming the file, never a
traceback; damaged episodes can be skipped and are named.

Each case damages a copy of a small v3.0 export the ways copies and editors do (metadata truncated or
with wrong types, a parquet or video deleted or cut short, a column dropped).
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import numpy as np
import pytest

from buffer import BufferConfig, BufferError, make_buffer
from buffer.io import export_lerobot, import_lerobot, lerobot_spec

H, W = 16, 16
OBS = {"state": ((2,), np.float32), "pixels/front": ((H, W, 3), np.uint8)}


@pytest.fixture(scope="module")
def dataset(tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("lerobot") / "ds"
    buf = make_buffer(BufferConfig(capacity_steps=100), OBS, 2)
    for e in range(3):
        t = 6
        frames = np.stack([np.full((H, W, 3), 40 * e + 10 * s, np.uint8) for s in range(t + 1)])
        buf.add_episode(
            {"state": np.zeros((t + 1, 2), np.float32), "pixels/front": frames},
            np.zeros((t, 2), np.float32),
            np.zeros(t),
            np.arange(t) == t - 1,
            np.zeros(t, bool),
            {"success": np.arange(t + 1) == t, "progress": np.linspace(0, 1, t + 1)},
        )
    export_lerobot(buf, root, fps=10, vcodec="h264")
    return root


def edit_info(**changes):
    def damage(root: Path) -> None:
        path = root / "meta" / "info.json"
        info = json.loads(path.read_text())
        for key, value in changes.items():
            if value is None:
                info.pop(key)
            else:
                info[key] = value
        path.write_text(json.dumps(info))

    return damage


def first(root: Path, pattern: str) -> Path:
    return sorted(root.glob(pattern))[0]


def truncate(pattern: str, keep: float):
    def damage(root: Path) -> None:
        path = first(root, pattern)
        path.write_bytes(path.read_bytes()[: int(path.stat().st_size * keep)])

    return damage


def delete(pattern: str):
    return lambda root: first(root, pattern).unlink()


def drop_column(name: str):
    def damage(root: Path) -> None:
        import pyarrow.parquet as pq

        path = first(root, "data/*/*.parquet")
        pq.write_table(pq.read_table(path).drop([name]), path)

    return damage


# (case, damage, words in the error, whether it is found when opening (spec) or per episode)
CORPUS = [
    ("info truncated", truncate("meta/info.json", 0.5), r"info\.json: not a LeRobotDataset", "open"),
    (
        "info not an object",
        lambda r: (r / "meta" / "info.json").write_text("[1, 2]"),
        "expected a JSON object",
        "open",
    ),
    ("fps not a number", edit_info(fps="ten"), "'fps' must be a positive number", "open"),
    ("features missing", edit_info(features=None), "'features' must be a non-empty object", "open"),
    (
        "feature shape bad",
        edit_info(features={"action": {"dtype": "float32", "shape": [-2]}}),
        "'shape'",
        "open",
    ),
    ("other version", edit_info(codebase_version="v9.9"), "'v9.9' is not supported", "open"),
    ("data path not a string", edit_info(data_path=7), "'data_path' must be a path template", "open"),
    ("episodes meta truncated", truncate("meta/episodes/*/*.parquet", 0.5), "unreadable", "read"),
    ("data parquet deleted", delete("data/*/*.parquet"), "file is missing", "episodes"),
    ("data parquet truncated", truncate("data/*/*.parquet", 0.5), "unreadable", "episodes"),
    (
        "column dropped",
        drop_column("action"),
        "column 'action' declared in meta/info.json is missing",
        "episodes",
    ),
    ("video deleted", delete("videos/*/*/*.mp4"), "cannot decode video", "episodes"),
    ("video cut short", truncate("videos/*/*/*.mp4", 0.6), "cannot decode video", "episodes"),
]


@pytest.mark.slow
@pytest.mark.parametrize(("case", "damage", "words", "where"), CORPUS, ids=[c[0] for c in CORPUS])
def test_malformed_dataset_is_one_line_naming_the_file(dataset, tmp_path, case, damage, words, where):
    root = tmp_path / "ds"
    shutil.copytree(dataset, root)
    damage(root)
    if where == "open":
        with pytest.raises(BufferError, match=words) as err:
            lerobot_spec(root)
        assert "\n" not in str(err.value) and str(root) in str(err.value)
        return
    buf = make_buffer(BufferConfig(capacity_steps=100), OBS, 2, ("success", "progress"))
    with pytest.raises(BufferError, match=words) as err:
        import_lerobot(root, buf)
    assert "\n" not in str(err.value) and str(root) in str(err.value)
    if where == "read":  # the episode index itself is unreadable: nothing to skip to
        return
    skipped: dict[int, str] = {}
    fresh = make_buffer(BufferConfig(capacity_steps=100), OBS, 2, ("success", "progress"))
    added = import_lerobot(root, fresh, skipped=skipped)
    assert added == fresh.num_episodes == 0
    assert all(words in why and "episode" in why and "\n" not in why for why in skipped.values())
    assert sorted(skipped) == [0, 1, 2]  # one data file and one video hold every episode of this export
