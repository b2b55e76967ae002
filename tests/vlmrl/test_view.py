"""vlmrl view without a browser: finding the store, the API's summaries, series, frames and labels, damage,
one-line errors, and how scorer fit reads the labels the page writes (the browser test is test_view_browser.py)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import cv2
import numpy as np
import pytest
from fastapi.testclient import TestClient

from buffer import BufferConfig, make_buffer
from buffer.clips import ClipRef
from tests.vlmrl.view_store import CLIP_LENGTH, CLIP_STRIDE, make_view_store
from vlmrl import cli
from vlmrl.errors import ConfigError
from vlmrl.pipelines import scorer as fit
from vlmrl.pipelines import view
from vlmrl.scorers.evaluation import Recording, dense_windows, window_labels
from vlmrl.scorers.labels import Label, LabelFile, read_labels, window_targets


@pytest.fixture(scope="module")
def store(tmp_path_factory):
    return make_view_store(tmp_path_factory.mktemp("view") / "episodes.zarr")


def client_for(path: Path, **kw) -> tuple[TestClient, object]:
    options = {"clip_length": CLIP_LENGTH, "clip_stride": CLIP_STRIDE, "annotator": "ana"} | kw
    app, source = view.open_viewer(view.Config(path=path, **options))
    return TestClient(app), source


def test_bad_paths_fail_in_one_line(tmp_path, capsys):
    with pytest.raises(ConfigError, match="no such file or directory"):
        view.open_viewer(view.Config(path=tmp_path / "missing.zarr"))
    with pytest.raises(ConfigError, match=r"not an episode store.*buffer.zarr or episodes.zarr"):
        view.open_viewer(view.Config(path=tmp_path))
    broken = tmp_path / "broken.zarr"
    broken.mkdir()
    (broken / "zarr.json").write_text('{"zarr_format": 3, "node_type": "gro')
    for path, words in ((tmp_path / "missing.zarr", "no such file"), (broken, "zarr.json")):
        assert cli.main(["view", str(path)]) == 1
        err = capsys.readouterr().err
        assert err.startswith("vlmrl view: error: ") and words in err and err.count("\n") == 1


def test_a_port_in_use_is_one_line(store, capsys):
    from vlmrl.view.server import Server

    app, source = view.open_viewer(view.Config(path=store, port=0))
    with Server(app) as server:
        assert cli.main(["view", str(store), "--port", str(server.port)]) == 1
    err = capsys.readouterr().err
    assert "cannot listen on 127.0.0.1" in err and err.count("\n") == 1
    source.close()


def test_a_run_directory_opens_its_store_with_its_clip_settings(store, tmp_path):
    run = tmp_path / "run"
    run.mkdir()
    shutil.copytree(store, run / "buffer.zarr")
    (run / "config.json").write_text(json.dumps({"buffer": {"clip_length": 3, "clip_stride": 1}}))
    # PER's priorities from the run's checkpoint: rows 0..39 were live then, the store has more now.
    import torch

    capacity = json.loads((store / "zarr.json").read_text())["attributes"]["vlmrl_buffer"]["capacity"]
    td = np.linspace(0.1, 2.0, capacity)
    (run / "checkpoint").mkdir()
    torch.save(
        {"buffer": {"sampler": {"td_priority": td}, "live_rows": (0, 40)}}, run / "checkpoint" / "state.pt"
    )
    client, source = client_for(run, clip_length=None, clip_stride=None)
    info = client.get("/api/info").json()
    assert info["path"] == str(run / "buffer.zarr") and (info["clip_length"], info["clip_stride"]) == (3, 1)
    assert info["labels_path"] == str(run / "buffer.zarr.labels.json")
    assert source.priority_loaded.wait(60)
    priority = client.get("/api/episodes/2").json()["groups"]["priority"]["|TD|+eps (checkpoint)"]
    assert priority[:6] == pytest.approx(td[34:40].tolist(), rel=1e-4) and priority[6:] == [None] * 10
    source.close()


def test_summaries_series_and_frames_come_from_the_store(store):
    client, source = client_for(store)
    info = client.get("/api/info").json()
    assert [c["name"] for c in info["cameras"]] == ["front", "wrist"] and info["scorers"] == [
        "noisy",
        "oracle",
    ]
    assert info["task"] == "Lift the red cube." and info["control_hz"] == 10.0
    rows = client.get("/api/episodes").json()["episodes"]
    assert [r["success"] for r in rows] == [True, False, True, False] and {r["steps"] for r in rows} == {16}
    buf = make_buffer(
        BufferConfig(storage="zarr", capacity_steps=200),
        {
            "state": ((6,), np.float32),
            "pixels/front": ((48, 48, 3), np.uint8),
            "pixels/wrist": ((48, 48, 3), np.uint8),
        },
        6,
        ("success", "progress"),
        path=str(store),
    )
    try:
        start, end = buf.episode_rows(2)
        oracle = buf.storage.read("scores/oracle", np.arange(start, end - 1))
        clip_scores = oracle[:: CLIP_LENGTH * CLIP_STRIDE]
        assert rows[2]["scores"]["oracle"] == {
            "mean": pytest.approx(clip_scores.mean(), abs=1e-3),
            "max": pytest.approx(clip_scores.max(), abs=1e-3),
        }
        series = client.get("/api/episodes/2").json()
        assert series["steps"] == 16 and series["errors"] == {}
        assert series["groups"]["scores"]["oracle"] == pytest.approx(oracle.tolist(), abs=1e-4)
        assert list(series["groups"]["actions"]) == [f"j{j}.pos" for j in range(6)]
        assert len(series["groups"]["joints"]) == 6 and len(series["groups"]["info"]["progress"]) == 17
        for camera in ("front", "wrist"):
            stored = buf.storage.read(f"pixels/{camera}", np.array([start + 5]))[0]
            response = client.get(f"/api/frames/{camera}/2/5")
            assert response.status_code == 200 and response.headers["content-type"] == "image/png"
            shown = cv2.imdecode(np.frombuffer(response.content, np.uint8), cv2.IMREAD_COLOR)[..., ::-1]
            np.testing.assert_array_equal(shown, stored)  # PNG: the pixels as stored
    finally:
        buf.close()
    assert client.get("/api/frames/front/2/99").status_code == 404
    assert "not in" in client.get("/api/episodes/40").json()["error"]
    assert "no camera" in client.get("/api/frames/top/2/0").json()["error"]
    source.close()


def test_frames_are_read_a_block_at_a_time_and_cached(store):
    from vlmrl.view.frames import FrameImages
    from vlmrl.view.source import EpisodeStore, locate

    source = EpisodeStore(locate(store), CLIP_LENGTH, CLIP_STRIDE)
    frames = FrameImages(source, "jpeg", cache_bytes=10**6, block=8)
    data, media = frames.get("front", 1, 4)
    assert media == "image/jpeg" and data[:2] == b"\xff\xd8" and frames.misses == 1
    for step in range(4, 10):
        frames.get("front", 1, step)
    assert frames.misses == 1 and frames.hits == 6
    small = FrameImages(source, "png", cache_bytes=20_000, block=8)
    for step in range(17):
        small.get("wrist", 0, step)
    assert small.nbytes <= 20_000
    source.close()


def test_labels_are_saved_beside_the_store_atomically_and_read_back(store, tmp_path):
    copy = tmp_path / "episodes.zarr"
    shutil.copytree(store, copy)
    client, source = client_for(copy)
    put = lambda **body: client.post("/api/labels", json=body)  # noqa: E731
    assert put(episode=0, label="success", start=None, stop=None).status_code == 200
    assert put(episode=1, label="success", start=None, stop=None).status_code == 200
    assert put(episode=1, label="failure", start=None, stop=None).status_code == 200  # replaces
    assert put(episode=1, label="success", start=3, stop=9).status_code == 200
    assert put(episode=1, label="failure", start=4, stop=40).status_code == 400  # past the episode
    assert "'success' or 'failure'" in put(episode=1, label="maybe", start=None, stop=None).json()["error"]
    assert put(episode=9, label="success", start=None, stop=None).status_code == 404
    path = tmp_path / "episodes.zarr.labels.json"
    store_name, labels = read_labels(path)
    assert store_name == "episodes.zarr" and not list(tmp_path.glob(".*.tmp"))
    assert [(x.episode, x.label, x.start, x.stop, x.annotator) for x in labels] == [
        (0, "success", None, None, "ana"),
        (1, "failure", None, None, "ana"),
        (1, "success", 3, 9, "ana"),
    ]
    assert all(x.time.endswith("Z") and x.time[:2] == "20" for x in labels)
    rows = client.get("/api/episodes").json()["episodes"]
    assert [len(r["labels"]) for r in rows] == [1, 2, 0, 0]
    assert client.delete("/api/labels", params={"episode": 1, "start": 3, "stop": 9}).status_code == 200
    assert client.delete("/api/labels", params={"episode": 1, "start": 3, "stop": 9}).status_code == 404
    source.close()
    reopened, source = client_for(copy)  # a new server reads what the last one wrote
    assert [len(r["labels"]) for r in reopened.get("/api/episodes").json()["episodes"]] == [1, 1, 0, 0]
    source.close()
    path.write_text("{not json")
    with pytest.raises(ConfigError, match="cannot be read as JSON"):
        client_for(copy)


def test_a_damaged_episode_is_shown_as_damaged_and_the_rest_still_serves(tmp_path):
    path = make_view_store(tmp_path / "episodes.zarr", frames_per_shard=16)
    (path / "pixels" / "wrist" / "c" / "1" / "0" / "0" / "0").write_bytes(
        b"garbage"
    )  # rows 16..31: episodes 0, 1
    client, source = client_for(path)
    rows = client.get("/api/episodes").json()["episodes"]
    damaged = [r["id"] for r in rows if r["damaged"]]
    assert damaged == [0, 1] and "wrist" in rows[0]["damaged"]
    assert client.get("/api/info").json()["damaged"] == 2
    response = client.get("/api/frames/wrist/1/3")
    assert response.status_code == 422 and "wrist" in response.json()["error"]
    assert client.get("/api/frames/front/1/3").status_code == 200  # the other camera is intact
    assert client.get("/api/frames/wrist/3/3").status_code == 200
    assert client.get("/api/episodes/1").json()["damaged"]
    source.close()


# ----------------------------------------------------------------------------------------- scorer fit


def _refs(n_rows: int) -> list[ClipRef]:
    return dense_windows(0, n_rows, CLIP_LENGTH, CLIP_STRIDE, "pixels/front")


def test_a_whole_episode_label_means_what_success_info_on_the_last_row_means():
    n = 17
    refs = _refs(n)
    starts = np.array([r.start for r in refs])
    success = np.zeros(n)
    success[-1] = 1
    ok = Label(episode=0, label="success", time="1")
    fwd = window_targets(n, starts, CLIP_LENGTH, CLIP_STRIDE, [ok], None)
    np.testing.assert_array_equal(fwd, window_labels(success, refs))
    rev = window_targets(n, starts, CLIP_LENGTH, CLIP_STRIDE, [ok], None, reverse=True)
    assert not rev.any()
    bad = Label(episode=0, label="failure", time="1")
    assert not window_targets(n, starts, CLIP_LENGTH, CLIP_STRIDE, [bad], np.ones(len(refs))).any()
    assert window_targets(n, starts, CLIP_LENGTH, CLIP_STRIDE, [], None) is None


def test_range_labels_set_the_windows_whose_last_frame_they_hold_newest_first():
    n = 17
    starts = np.array([r.start for r in _refs(n)])
    last = np.minimum(
        starts + (CLIP_LENGTH - 1) * CLIP_STRIDE, np.where((n - 1 - starts) % CLIP_STRIDE == 0, n - 1, n - 2)
    )
    older = Label(episode=0, label="success", start=6, stop=12, time="2026-01-01T00:00:00.000Z")
    newer = Label(episode=0, label="failure", start=10, stop=11, time="2026-01-01T00:00:01.000Z")
    out = window_targets(n, starts, CLIP_LENGTH, CLIP_STRIDE, [newer, older], None)
    frames = np.minimum(CLIP_LENGTH, -(-(n - starts) // CLIP_STRIDE))
    last = starts + (frames - 1) * CLIP_STRIDE
    expected = np.where((last >= 6) & (last < 12), 1.0, np.nan)
    expected[last == 10] = 0.0
    np.testing.assert_array_equal(out, expected.astype(np.float32))


def test_scorer_fit_takes_labels_from_the_file_where_they_cover_an_episode(store, tmp_path):
    labels = LabelFile(tmp_path / "x.labels.json", store)
    labels.put(Label(episode=0, label="failure"))  # a successful episode, relabelled
    labels.put(Label(episode=1, label="success", start=6, stop=12))
    cfg = fit.Config(
        action="fit", episodes=(store,), labels=labels.path, clip_length=CLIP_LENGTH, clip_stride=CLIP_STRIDE
    )
    sources = fit.open_sources(cfg)
    try:
        data = fit.build_dataset(cfg, sources, "q", None, fit.people_labels(cfg, sources))
        plain = fit.build_dataset(fit.Config(**{**cfg.__dict__, "labels": "success"}), sources, "q", None)
    finally:
        for s in sources:
            s.close()
    forward = ~data.rewound
    assert not data.targets[forward & (data.episodes == 0)].any()  # success info overruled
    assert plain.targets[~plain.rewound & (plain.episodes == 0)].any()
    ep1 = data.targets[forward & (data.episodes == 1)]
    assert ep1.any() and not plain.targets[~plain.rewound & (plain.episodes == 1)].any()
    for e in (2, 3):  # not labelled: the success info's labels, as without the file
        np.testing.assert_array_equal(data.targets[data.episodes == e], plain.targets[plain.episodes == e])


def test_scorer_fit_refuses_labels_of_another_store_in_one_line(store, tmp_path):
    other = make_view_store(tmp_path / "other.zarr", outcomes=(True, False), info=("progress",))
    labels = LabelFile(tmp_path / "o.labels.json", other)
    labels.put(Label(episode=7, label="success"))
    cfg = fit.Config(action="fit", episodes=(other,), labels=labels.path, out=tmp_path / "s.pt")
    with pytest.raises(ConfigError, match=r"labels episode 7, which .* does not hold"):
        fit.main(cfg)
    empty = LabelFile(tmp_path / "e.labels.json", other)
    empty.put(Label(episode=0, label="success"))
    empty.remove(0, None, None)
    with pytest.raises(ConfigError, match="no success info to fall back on"):
        fit.main(fit.Config(action="fit", episodes=(other,), labels=empty.path, out=tmp_path / "s.pt"))
    assert not (tmp_path / "s.pt").exists()
    assert Recording(other).source_id(1) == 1


@pytest.mark.slow
def test_a_lerobot_dataset_is_shown_with_its_own_episode_ids(tmp_path):
    from buffer.io import export_lerobot

    src = make_buffer(
        BufferConfig(capacity_steps=100),
        {"state": ((2,), np.float32), "pixels/front": ((32, 32, 3), np.uint8)},
        2,
    )
    for e in range(2):
        frames = np.full((6, 32, 32, 3), 40 + 80 * e, np.uint8)
        src.add_episode(
            {"state": np.zeros((6, 2), np.float32), "pixels/front": frames},
            np.zeros((5, 2), np.float32),
            np.zeros(5, np.float32),
            np.eye(1, 5, 4, dtype=bool)[0],
            np.zeros(5, bool),
        )
    export_lerobot(src, tmp_path / "ds", fps=10, task="lift the cube")
    client, source = client_for(tmp_path / "ds")
    info = client.get("/api/info").json()
    assert (
        info["kind"] == "lerobot"
        and info["task"] == "lift the cube"
        and info["labels_path"].endswith("ds.labels.json")
    )
    assert [r["id"] for r in client.get("/api/episodes").json()["episodes"]] == [0, 1]
    image = client.get("/api/frames/front/1/2")
    shown = cv2.imdecode(np.frombuffer(image.content, np.uint8), cv2.IMREAD_COLOR)
    assert abs(float(shown.mean()) - 120) < 12  # video-coded, so close rather than equal
    source.close()
