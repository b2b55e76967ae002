"""vlmrl score on a zarr episode store and on a LeRobotDataset directory, with the oracle scorer."""

import json

import numpy as np
import pyarrow.parquet as pq
import pytest
import zarr

from buffer import BufferConfig, make_buffer
from buffer.io import export_lerobot
from vlm.config import AuxRewardConfig, OracleConfig
from vlmrl import cli
from vlmrl.errors import ConfigError
from vlmrl.pipelines import score

OBS = {"state": ((6,), np.dtype(np.float32)), "pixels/front": ((24, 24, 3), np.dtype(np.uint8))}


def make_store(path, lengths=(9, 5), **storage):
    """A recorded-like store of constant grey frames whose progress reaches 1 at each episode's end;
    ``storage``: more BufferConfig settings (e.g. frames_per_shard)."""
    buf = make_buffer(
        BufferConfig(storage="zarr", capacity_steps=64, **storage),
        OBS,
        6,
        ("success", "progress"),
        path=str(path),
    )
    for t in lengths:
        progress = np.linspace(0, 1, t + 1).astype(np.float32)
        buf.add_episode(
            obs={
                "state": np.zeros((t + 1, 6), np.float32),
                "pixels/front": np.full((t + 1, 24, 24, 3), 90, np.uint8),
            },
            action=np.zeros((t, 6), np.float32),
            reward=np.zeros(t, np.float32),
            terminated=np.eye(1, t, t - 1, dtype=bool)[0],
            truncated=np.zeros(t, bool),
            info={"success": (progress >= 1).astype(np.float32), "progress": progress},
        )
    buf.close()
    zarr.open_group(str(path), mode="a").attrs["vlmrl_record"] = {
        "task_description": "Pick up the red cube.",
        "control_hz": 10.0,
    }


def test_score_a_zarr_store_writes_scores_into_it_and_a_report(tmp_path):
    store = tmp_path / "episodes.zarr"
    make_store(store)
    cfg = score.Config(
        episodes=store,
        scorer=OracleConfig(),
        clip_length=3,
        clip_stride=2,
        aux=AuxRewardConfig(kind="scaled"),
    )
    assert score.main(cfg) == 0
    report = tmp_path / "episodes.zarr-report"
    summary = json.loads((report / "summary.json").read_text())
    rows = summary["episodes"]
    assert [r["steps"] for r in rows] == [9, 5] and [r["clips"] for r in rows] == [2, 1]
    # Oracle "progress/last": a clip's score is the progress at its last frame (steps 4 and 8 of 9).
    assert rows[0]["final_score"] == pytest.approx(8 / 9, abs=1e-5)
    assert rows[0]["aux_return"] == pytest.approx(4 / 9 + 8 / 9, abs=1e-5)
    assert (report / "episode_0.mp4").stat().st_size > 0 and "| episode |" in (
        report / "summary.md"
    ).read_text()
    # Written beside the data: the store now holds the scorer's columns, and reopens with them.
    buf = make_buffer(
        BufferConfig(storage="zarr", capacity_steps=64), OBS, 6, ("success", "progress"), path=str(store)
    )
    scorer_id = summary["scorer_id"]
    assert (
        f"scores/{scorer_id}" in buf.storage.columns() and f"aux_reward/{scorer_id}" in buf.storage.columns()
    )
    scores = buf.storage.read(f"scores/{scorer_id}", np.arange(0, 9))
    assert scores[:6] == pytest.approx(np.full(6, 4 / 9), abs=1e-5)
    buf.close()


def test_score_a_lerobot_dataset_writes_a_sidecar_parquet(tmp_path):
    buf = make_buffer(BufferConfig(storage="memory", capacity_steps=64), OBS, 6, ("success", "progress"))
    for t in (7, 5):
        progress = np.linspace(0, 1, t + 1).astype(np.float32)
        buf.add_episode(
            obs={
                "state": np.zeros((t + 1, 6), np.float32),
                "pixels/front": np.full((t + 1, 24, 24, 3), 128, np.uint8),
            },
            action=np.zeros((t, 6), np.float32),
            reward=np.zeros(t, np.float32),
            terminated=np.eye(1, t, t - 1, dtype=bool)[0],
            truncated=np.zeros(t, bool),
            info={"success": (progress >= 1).astype(np.float32), "progress": progress},
        )
    root = tmp_path / "ds"
    export_lerobot(buf, root, fps=10, task="Pick up the red cube.")
    buf.close()
    before = sorted(p.relative_to(root) for p in root.rglob("*") if p.is_file())
    cfg = score.Config(
        episodes=root, scorer=OracleConfig(), clip_length=4, clip_stride=1, out_dir=tmp_path / "report"
    )
    assert score.main(cfg) == 0
    rows = json.loads((tmp_path / "report" / "summary.json").read_text())["episodes"]
    assert [r["steps"] for r in rows] == [7, 5] and rows[0]["success"] is True
    assert rows[0]["final_score"] == pytest.approx(1.0, abs=1e-5)  # progress at the last clip's last frame
    table = pq.read_table(next((root / "vlmrl_scores").glob("*.parquet")))
    assert table.num_rows == 14 and set(table.column_names) >= {
        "episode_index",
        "frame_index",
        "score",
        "aux_reward",
    }
    assert b"prompt_hash" in table.schema.metadata[b"vlmrl"]
    after = sorted(
        p.relative_to(root) for p in root.rglob("*") if p.is_file() and "vlmrl_scores" not in p.parts
    )
    assert after == before  # the dataset's own files are untouched


def test_bad_inputs_are_one_line_errors(tmp_path, capsys):
    with pytest.raises(ConfigError, match="no such file"):
        score.main(score.Config(episodes=tmp_path / "nope"))
    assert cli.main(["score", str(tmp_path)]) == 1
    assert "neither a vlmrl zarr store" in capsys.readouterr().err


def make_sharded_store(path, lengths=(5, 5, 5)):
    """Episodes of 6 rows each in 4-frame shards: rows 0..5, 6..11, 12..17 -> shard 1 holds rows 4..7."""
    make_store(path, lengths, frames_per_shard=4)


def test_a_missing_frame_shard_fails_naming_the_episodes_and_skip_corrupt_scores_the_rest(tmp_path, capsys):
    """Issue 15 item 2: a deleted pixels/<cam> shard used to score black frames and exit 0."""
    store = tmp_path / "episodes.zarr"
    make_sharded_store(store)
    (store / "pixels" / "front" / "c" / "1" / "0" / "0" / "0").unlink()  # rows 4..7: episodes 0 and 1
    report = tmp_path / "report"
    assert cli.main(["score", str(store), "--out-dir", str(report), "--clip-length", "2"]) == 1
    err = capsys.readouterr().err.strip()
    assert "\n" not in err and "2 episode(s) damaged [0, 1]" in err and "--skip-corrupt" in err
    assert "shard file" in err and "is missing" in err
    assert not report.exists()  # refused before the report directory was written

    assert (
        cli.main(["score", str(store), "--out-dir", str(report), "--clip-length", "2", "--skip-corrupt"]) == 0
    )
    out = capsys.readouterr().out
    assert "2 episode(s) skipped [0, 1]" in out
    summary = json.loads((report / "summary.json").read_text())
    assert [r["episode"] for r in summary["episodes"]] == [2]
    assert set(summary["skipped"]) == {"0", "1"} and "is missing" in summary["skipped"]["0"]
    assert "Skipped: 2 damaged episode(s)" in (report / "summary.md").read_text()


def test_a_corrupt_frame_found_while_scoring_is_skipped_with_skip_corrupt(tmp_path, capsys):
    store = tmp_path / "episodes.zarr"
    make_sharded_store(store)
    shard = store / "pixels" / "front" / "c" / "3" / "0" / "0" / "0"  # rows 12..15: episode 2
    data = bytearray(shard.read_bytes())
    data[-10] ^= 0xFF  # inside a frame: structure intact, checksum wrong
    shard.write_bytes(bytes(data))
    cfg = score.Config(episodes=store, scorer=OracleConfig(), clip_length=2, out_dir=tmp_path / "r")
    with pytest.raises(Exception, match=r"episode 2, step \d\) is corrupt"):
        score.main(cfg)
    assert score.main(score.Config(**{**cfg.__dict__, "skip_corrupt": True})) == 0
    summary = json.loads((tmp_path / "r" / "summary.json").read_text())
    assert [r["episode"] for r in summary["episodes"]] == [0, 1] and list(summary["skipped"]) == ["2"]
    assert "score: skipped episode 2" in capsys.readouterr().out


def test_a_failed_score_leaves_the_previous_report_untouched(tmp_path):
    """Issue 15 item 6: a command failing on bad input used to overwrite the last run's config.json."""
    store = tmp_path / "episodes.zarr"
    make_store(store)
    report = tmp_path / "report"
    assert score.main(score.Config(episodes=store, scorer=OracleConfig(), clip_length=3, out_dir=report)) == 0
    before = {p.name: p.read_bytes() for p in report.iterdir()}
    bad = tmp_path / "cal.json"
    bad.write_text("{not json")
    with pytest.raises(Exception, match=r"cal\.json"):
        score.main(
            score.Config(
                episodes=store, scorer=OracleConfig(), clip_length=4, out_dir=report, score_calibration=bad
            )
        )
    assert {p.name: p.read_bytes() for p in report.iterdir()} == before


def test_a_lerobot_dataset_with_a_damaged_episode_is_scored_around_it_with_skip_corrupt(tmp_path, capsys):
    import pandas as pd

    buf = make_buffer(BufferConfig(storage="memory", capacity_steps=64), OBS, 6, ("success", "progress"))
    for t in (5, 6, 7):
        progress = np.linspace(0, 1, t + 1).astype(np.float32)
        buf.add_episode(
            obs={
                "state": np.zeros((t + 1, 6), np.float32),
                "pixels/front": np.full((t + 1, 24, 24, 3), 128, np.uint8),
            },
            action=np.zeros((t, 6), np.float32),
            reward=np.zeros(t, np.float32),
            terminated=np.eye(1, t, t - 1, dtype=bool)[0],
            truncated=np.zeros(t, bool),
            info={"success": (progress >= 1).astype(np.float32), "progress": progress},
        )
    root = tmp_path / "ds"
    export_lerobot(buf, root, fps=10, task="Pick up the red cube.", vcodec="h264")
    buf.close()
    meta_path = next((root / "meta" / "episodes").glob("*/*.parquet"))
    meta = pd.read_parquet(meta_path)
    meta.loc[meta["episode_index"] == 1, "videos/observation.images.front/from_timestamp"] = 100.0
    meta.to_parquet(meta_path)  # episode 1 now points past the end of the video

    cfg = score.Config(episodes=root, scorer=OracleConfig(), clip_length=2, out_dir=tmp_path / "r")
    with pytest.raises(Exception, match=r"episode 1: frames .* missing from the video"):
        score.main(cfg)
    assert score.main(score.Config(**{**cfg.__dict__, "skip_corrupt": True})) == 0
    summary = json.loads((tmp_path / "r" / "summary.json").read_text())
    assert [r["episode"] for r in summary["episodes"]] == [0, 2] and list(summary["skipped"]) == ["1"]
    assert [r["steps"] for r in summary["episodes"]] == [5, 7]
    table = pq.read_table(next((root / "vlmrl_scores").glob("*.parquet"))).to_pandas()
    assert sorted(set(table["episode_index"])) == [0, 2]  # the dataset's own episode indices
    assert (table["episode_index"] == 2).sum() == 8
    assert "1 episode(s) skipped [1]" in capsys.readouterr().out
