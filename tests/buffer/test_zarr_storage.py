"""ZarrStorage: a plain zarr v3 store, reopening, fsspec URLs, the frame cache budget, corruption."""

from __future__ import annotations

import json
import uuid
from pathlib import Path

import numpy as np
import pytest
import zarr
from buffer_helpers import ACTION_DIM, OBS_SPEC, fill_episode, step_obs

from buffer import BufferConfig, BufferError, PERSamplerConfig, make_buffer


def expected_rows(buf):
    """(global row, episode, step) of every live row."""
    out = []
    table = buf.storage.episodes()
    for e in range(table.first, table.first + table.count):
        start, end = table.bounds(e)
        out += [(r, e, r - start) for r in range(start, end)]
    return out


@pytest.mark.parametrize("codec", ["none", "zstd", "blosc-lz4", "blosc-zstd-bitshuffle"])
def test_store_is_plain_zarr_v3(make, tmp_path, codec):
    buf = make("zarr", capacity_steps=90, frames_per_shard=16, frame_codec=codec)
    for e in range(14):  # 14 x 10 rows into 90: wraps the ring and evicts
        fill_episode(buf, e, 9)
    buf.close()
    group = zarr.open_group(str(tmp_path / "store.zarr"), mode="r")
    pixels, state = group["pixels/front"][:], group["state"][:]
    rows = expected_rows(buf)
    assert len(rows) == 90 and rows[0][1] == 5
    for row, e, t in rows:
        np.testing.assert_array_equal(pixels[row % 90], step_obs(e, t)["pixels/front"])
        np.testing.assert_array_equal(state[row % 90], step_obs(e, t)["state"])
    record = group.attrs["commit"]
    assert record["first_episode"] == 5 and record["num_episodes"] == 14 and record["inflight"] is None


def test_reopen_keeps_episodes_scores_and_resumes(make):
    buf = make("zarr", PERSamplerConfig(), capacity_steps=200)
    for e in range(6):
        fill_episode(buf, e, 7)
    clips = buf.new_clips()
    buf.set_scores([c.clip_id for c in clips], np.full(len(clips), 0.75), "oracle")
    buf.update_priorities(buf.sample(16).indices, np.arange(16.0))
    state = buf.state_dict()
    expected = buf.sample(32)
    buf.close()

    again = make("zarr", PERSamplerConfig(), capacity_steps=999)  # capacity comes from the store
    assert again.storage.capacity == 200 and again.num_episodes == 6 and again.num_transitions == 42
    again.load_state_dict(state)
    got = again.sample(32)
    np.testing.assert_array_equal(got.indices, expected.indices)
    np.testing.assert_array_equal(got.obs["pixels/front"], expected.obs["pixels/front"])
    assert np.all(again.storage.read("scores/oracle", np.arange(48))[:7] == 0.75)
    assert again.new_clips() == []
    fill_episode(again, 6, 5)
    assert again.num_episodes == 7 and [c.episode for c in again.new_clips()] == [6]


def test_fsspec_url_store():
    # A fresh name per call: fsspec's memory filesystem lives as long as the process, and a test run twice
    # in one process (mutmut's clean run after its stats run) would reopen the first call's store.
    url = f"memory://vlmrl-test-buffer-{uuid.uuid4().hex}"
    cfg = BufferConfig(storage="zarr", capacity_steps=60)
    buf = make_buffer(cfg, OBS_SPEC, ACTION_DIM, path=url)
    for e in range(3):
        fill_episode(buf, e, 6)
    batch = buf.sample(20)
    for i in range(20):
        e, t = batch.obs["state"][i, :2].astype(int)
        np.testing.assert_array_equal(batch.obs["pixels/front"][i], step_obs(e, t)["pixels/front"])
    buf.close()
    again = make_buffer(cfg, OBS_SPEC, ACTION_DIM, path=url)
    assert again.num_episodes == 3


def test_frame_cache_stays_within_budget(make):
    frame_bytes = 6 * 5 * 3
    buf = make("zarr", capacity_steps=300, frame_cache_bytes=20 * frame_bytes)
    for e in range(20):
        fill_episode(buf, e, 12)
    for _ in range(20):
        buf.sample(64)
    stats = buf.storage.frame_stats()
    assert 0 < stats["cache_bytes"] <= 20 * frame_bytes and stats["cache_misses"] > 0


def test_corrupt_frame_names_array_and_episode(make, tmp_path):
    buf = make("zarr", capacity_steps=100, frames_per_shard=8)
    for e in range(3):
        fill_episode(buf, e, 5)
    buf.close()
    shard = tmp_path / "store.zarr" / "pixels" / "front" / "c" / "1" / "0" / "0" / "0"  # rows 8..15
    data = bytearray(shard.read_bytes())
    index = np.frombuffer(bytes(data[: 16 * 8]), "<u8").reshape(8, 2)  # index first: (offset, nbytes)
    data[int(index[1, 0]) + 6] ^= 0xFF  # inside the shard's second frame: row 9 = episode 1, step 3
    shard.write_bytes(bytes(data))
    again = make("zarr", capacity_steps=100, frames_per_shard=8)
    clip = again.new_clips()[1]
    with pytest.raises(BufferError, match=r"pixels/front: row 9 \(episode 1, step 3\) is corrupt"):
        again.read_clip(clip._replace(start=3, length=1))
    data[5] ^= 0xFF  # the shard index itself
    shard.write_bytes(bytes(data))
    again.storage.close()
    with pytest.raises(
        BufferError, match=r"shard file .* is corrupt .*needed for row 8 \(episode 1, step 2\)"
    ):
        again.read_clip(clip._replace(start=2, length=1))


def test_newer_schema_and_other_arrays_are_refused(make, tmp_path):
    buf = make("zarr", capacity_steps=50)
    fill_episode(buf, 0, 3)
    buf.close()
    with pytest.raises(BufferError, match="other arrays"):
        make_buffer(
            BufferConfig(storage="zarr"), {"state": ((3,), np.float32)}, 2, path=str(tmp_path / "store.zarr")
        )
    meta_path = tmp_path / "store.zarr" / "zarr.json"
    meta = json.loads(meta_path.read_text())
    meta["attributes"]["vlmrl_buffer"]["schema_version"] = 99
    meta_path.write_text(json.dumps(meta))
    with pytest.raises(BufferError, match="schema 99"):
        make("zarr", capacity_steps=50)


@pytest.mark.parametrize("episodes", [3, 9])  # 30 rows of 80 (saved: the 30), 90 rows (wrapped: all 80)
def test_memory_storage_save_and_load(make, tmp_path: Path, episodes: int):
    buf = make("memory", capacity_steps=80)
    for e in range(episodes):
        fill_episode(buf, e, 9)
    last = episodes - 1
    buf.set_aux_reward(np.array([buf.episode_rows(last)[0]]), np.array([2.0]), "oracle")
    state = buf.state_dict()
    expected = buf.sample(16)
    buf.storage.save(tmp_path / "mem")
    saved_rows = np.load(tmp_path / "mem" / "pixels__front.npy", mmap_mode="r").shape[0]
    assert saved_rows == min(80, 10 * episodes)  # rows never written are not saved
    cfg = BufferConfig(capacity_steps=80)
    again = make_buffer(cfg, OBS_SPEC, ACTION_DIM, path=str(tmp_path / "mem"))
    again.load_state_dict(state)
    got = again.sample(16)
    np.testing.assert_array_equal(got.obs["pixels/front"], expected.obs["pixels/front"])
    assert again.num_episodes == buf.num_episodes and again.storage.columns() == ["aux_reward/oracle"]
    for name in ("pixels/front", "aux_reward/oracle"):  # every live row reads back as it was
        rows = np.arange(buf.storage.episodes().first_row, buf.storage.episodes().next_row)
        np.testing.assert_array_equal(again.storage.read(name, rows), buf.storage.read(name, rows))
    for e in range(episodes, episodes + 6):  # and the ring goes on filling and wrapping after the load
        fill_episode(again, e, 9)
        fill_episode(buf, e, 9)
    rows = np.arange(buf.storage.episodes().first_row, buf.storage.episodes().next_row)
    np.testing.assert_array_equal(
        again.storage.read("pixels/front", rows), buf.storage.read("pixels/front", rows)
    )


def test_second_writer_is_refused_until_the_first_closes(make):
    first = make("zarr", capacity_steps=50)
    fill_episode(first, 0, 3)
    second = make("zarr", capacity_steps=50)  # opening to read is fine
    assert second.num_episodes == 1
    with pytest.raises(BufferError, match="another process is writing"):
        fill_episode(second, 1, 3)
    first.close()
    fill_episode(second, 1, 3)
    assert second.num_episodes == 2


def test_stale_handle_cannot_become_the_writer(make):
    first = make("zarr", capacity_steps=50)
    stale = make("zarr", capacity_steps=50)
    fill_episode(first, 0, 3)
    first.close()
    with pytest.raises(BufferError, match="reopen it before writing"):
        fill_episode(stale, 1, 3)


@pytest.mark.parametrize("read_threads", [0, 3])
def test_reads_stay_correct_when_descriptors_are_recycled(make, read_threads):
    buf = make("zarr", capacity_steps=200, frames_per_shard=4, frame_cache_bytes=0, read_threads=read_threads)
    for e in range(12):
        fill_episode(buf, e, 9)
    buf.storage._frames["pixels/front"]._max_fds = 2  # 50 shards through 2 descriptors
    for _ in range(5):
        batch = buf.sample(64)
        for i in range(64):
            e, t = batch.obs["state"][i, :2].astype(int)
            np.testing.assert_array_equal(batch.obs["pixels/front"][i], step_obs(e, t)["pixels/front"])
            np.testing.assert_array_equal(
                batch.next_obs["pixels/front"][i], step_obs(e, t + 1)["pixels/front"]
            )
    assert len(buf.storage._frames["pixels/front"]._open_fds) <= 2


def test_corrupt_small_array_chunk_names_array_and_episodes(make, tmp_path):
    buf = make("zarr", capacity_steps=100)
    for e in range(3):
        fill_episode(buf, e, 5)
    buf.close()
    chunk = tmp_path / "store.zarr" / "action" / "c" / "0" / "0"
    data = bytearray(chunk.read_bytes())
    data[10] ^= 0xFF
    chunk.write_bytes(bytes(data))
    with pytest.raises(BufferError, match=r"array 'action' is corrupt at ring rows 0..99 \(episodes 0..2\)"):
        make("zarr", capacity_steps=100)


def test_fsync_mode_writes_the_same_store(make, tmp_path):
    buf = make("zarr", capacity_steps=40, fsync=True, frames_per_shard=8)
    for e in range(6):
        fill_episode(buf, e, 5)
    buf.close()
    pixels = zarr.open_group(str(tmp_path / "store.zarr"), mode="r")["pixels/front"][:]
    for row, e, t in expected_rows(buf):
        np.testing.assert_array_equal(pixels[row % 40], step_obs(e, t)["pixels/front"])


def test_an_episode_written_across_the_ring_end_reads_back_whole_after_reopening(make):
    buf = make("zarr", capacity_steps=20)
    for e in range(3):
        fill_episode(buf, e, 5)
    clips = buf.new_clips()
    buf.set_scores([c.clip_id for c in clips], np.full(len(clips), 0.5), "oracle")
    fill_episode(buf, 3, 5)  # its rows run past row 20: a write in two segments, the second from slot 0
    start, end = buf.episode_rows(3)
    assert start < 20 < end
    buf.close()
    again = make("zarr", capacity_steps=20)
    rows = np.arange(start, end)
    state = again.storage.read("state", rows)
    assert state[:, 0].tolist() == [3] * len(rows) and state[:, 1].tolist() == list(range(len(rows)))
    assert np.all(again.storage.read("action", rows)[:-1, 0] == 3)  # the last row holds the final observation
    assert np.all(np.isnan(again.storage.read("scores/oracle", rows)))  # new rows: unscored, not stale
    for e in (1, 2):  # the live episodes' scores are untouched by the new episode's fill
        kept = np.arange(*again.episode_rows(e))
        assert np.all(again.storage.read("scores/oracle", kept)[: len(kept) - 1] == 0.5), e
