"""Damaged stores: every committed row is verifiable; damage is an error naming the episode, never zeros.

The corpus below damages a recorded store the ways disks, copies and people do (a shard or chunk file
deleted, truncated, emptied, a byte flipped, an index entry cleared) and checks, for each: opening
refuses it in one line naming the damaged episodes, or (on_damage="record") opens it, names them in
`damaged()` and refuses to read their rows; the intact episodes read back exactly; no file changes.
"""

from __future__ import annotations

import hashlib
from pathlib import Path

import numpy as np
import pytest
from buffer_helpers import ACTION_DIM, OBS_SPEC, fill_episode, step_obs

from buffer import BufferError
from buffer.spec import build_specs
from buffer.storage.integrity import check_episodes, describe_skipped, intact_episodes, known_damage
from buffer.storage.shard_format import ABSENT, encode_index
from buffer.storage.zarr_store import ZarrStorage

SPECS = build_specs(OBS_SPEC, ACTION_DIM, ("success", "progress"))
FPS = 8  # frames per shard: episodes of 6 rows at rows 0..5, 6..11, 12..17, 18..23


@pytest.fixture
def store(make, tmp_path) -> Path:
    buf = make("zarr", capacity_steps=100, frames_per_shard=FPS)
    for e in range(4):
        fill_episode(buf, e, 5)
    buf.close()
    return tmp_path / "store.zarr"


def open_store(path: Path, on_damage="raise") -> ZarrStorage:
    return ZarrStorage.open_or_create(str(path), SPECS, capacity=100, on_damage=on_damage)


def digest(root: Path) -> dict[str, str]:
    return {
        str(p.relative_to(root)): hashlib.sha256(p.read_bytes()).hexdigest()
        for p in sorted(root.rglob("*"))
        if p.is_file() and p.name != ".writer.lock"
    }


def shard(root: Path, k: int) -> Path:
    return root / "pixels" / "front" / "c" / str(k) / "0" / "0" / "0"


def delete(path: Path) -> None:
    path.unlink()


def truncate(path: Path) -> None:
    path.write_bytes(path.read_bytes()[: 16 * FPS + 4 + 50])  # index and part of the first frame


def empty(path: Path) -> None:
    path.write_bytes(b"")


def flip_index(path: Path) -> None:
    data = bytearray(path.read_bytes())
    data[3] ^= 0xFF
    path.write_bytes(bytes(data))


def clear_entry(path: Path) -> None:
    """Mark the shard's 3rd frame absent with a valid index checksum (a bad writer, not bit rot)."""
    data = path.read_bytes()
    index = np.frombuffer(data[: 16 * FPS], "<u8").reshape(FPS, 2).copy()
    index[2] = (ABSENT, ABSENT)
    path.write_bytes(encode_index(index) + data[16 * FPS + 4 :])


def flip_chunk(path: Path) -> None:
    data = bytearray(path.read_bytes())
    data[10] ^= 0xFF
    path.write_bytes(bytes(data))


# (what, file under the store, damage, episodes it hits, words in the message)
CORPUS = [
    ("frame shard deleted", lambda r: shard(r, 1), delete, {1, 2}, "shard file .* is missing"),
    ("frame shard truncated", lambda r: shard(r, 1), truncate, {1, 2}, "is truncated"),
    ("frame shard emptied", lambda r: shard(r, 2), empty, {2, 3}, "is corrupt"),
    ("frame shard index flipped", lambda r: shard(r, 0), flip_index, {0, 1}, "index checksum mismatch"),
    ("frame shard entry cleared", lambda r: shard(r, 1), clear_entry, {1}, "has no frame for them"),
    (
        "action chunk deleted",
        lambda r: r / "action" / "c" / "0" / "0",
        delete,
        {0, 1, 2, 3},
        "'action' chunk",
    ),
    (
        "state chunk flipped",
        lambda r: r / "state" / "c" / "0" / "0",
        flip_chunk,
        {0, 1, 2, 3},
        "'state' is corrupt",
    ),
    (
        "info chunk deleted",
        lambda r: r / "info" / "success" / "c" / "0",
        delete,
        {0, 1, 2, 3},
        "'info/success'",
    ),
]


@pytest.mark.parametrize(("what", "target", "damage", "hit", "words"), CORPUS, ids=[c[0] for c in CORPUS])
def test_damage_is_named_never_read_as_zeros_and_nothing_is_rewritten(
    store, what, target, damage, hit, words
):
    damage(target(store))
    before = digest(store)
    with pytest.raises(BufferError, match=words) as err:
        open_store(store)
    message = str(err.value)
    assert "\n" not in message and f"{len(hit)} committed episode(s) are damaged" in message
    assert f"[{', '.join(map(str, sorted(hit)))}]" in message

    storage = open_store(store, on_damage="record")
    try:
        assert set(storage.damaged()) == hit
        assert set(check_episodes(storage)) == hit
        table = storage.episodes()
        for e in range(4):
            start, end = table.bounds(e)
            rows = np.arange(start, end)
            if e in hit:
                with pytest.raises(BufferError, match=rf"episode {e}"):
                    for name in SPECS:
                        storage.read(name, rows)
            else:  # intact episodes read back exactly
                frames = storage.read("pixels/front", rows)
                for t in range(len(rows)):
                    np.testing.assert_array_equal(frames[t], step_obs(e, t)["pixels/front"])
        with pytest.raises(BufferError, match="refusing to write into a store with damaged"):
            storage.reserve(6)
        ok, skipped = intact_episodes(storage, skip_corrupt=True)
        assert ok == sorted(set(range(4)) - hit) and set(skipped) == hit
        with pytest.raises(BufferError, match=r"damaged \[.*\]: episode \d+: .*--skip-corrupt"):
            intact_episodes(storage, skip_corrupt=False)
    finally:
        storage.close()
    assert digest(store) == before  # neither opening nor reading nor the refused write changed a file


def test_flipped_frame_byte_is_found_by_reading_and_named(store):
    path = shard(store, 2)  # rows 16..23: episode 2 (12..17) and 3 (18..23)
    data = bytearray(path.read_bytes())
    index = np.frombuffer(bytes(data[: 16 * FPS]), "<u8").reshape(FPS, 2)
    data[int(index[4, 0]) + 7] ^= 0x01  # row 20: episode 3, step 2
    path.write_bytes(bytes(data))
    storage = open_store(store)  # structure intact: opens
    try:
        assert storage.damaged() == {}
        problems = check_episodes(storage)
        assert list(problems) == [3] and "row 20 (episode 3, step 2) is corrupt" in problems[3]
        assert intact_episodes(storage, skip_corrupt=True)[0] == [0, 1, 2]
    finally:
        storage.close()


def test_episode_ends_damage_is_fatal_in_every_mode(store):
    (store / "episode_ends" / "c" / "0").unlink()
    for mode in ("raise", "record"):
        with pytest.raises(BufferError, match="'episode_ends' is missing; the committed episodes"):
            open_store(store, on_damage=mode)


def test_unscored_rows_need_no_score_chunks_and_evicted_rows_need_no_frames(make, tmp_path):
    buf = make("zarr", capacity_steps=30, frames_per_shard=FPS)
    for e in range(8):  # 48 rows into 30: episodes 0..2 evicted, their rows overwritten
        fill_episode(buf, e, 5)
    clips = buf.new_clips()[:1]
    buf.set_scores([c.clip_id for c in clips], np.array([0.5]), "oracle")
    buf.close()
    storage = ZarrStorage.open_or_create(str(tmp_path / "store.zarr"), SPECS, capacity=30)
    assert storage.damaged() == {} and check_episodes(storage) == {}
    storage.close()


def test_a_shard_lost_while_open_reads_as_missing_not_black(make, tmp_path):
    buf = make("zarr", capacity_steps=100, frames_per_shard=FPS)
    for e in range(2):
        fill_episode(buf, e, 5)
    shard(tmp_path / "store.zarr", 0).unlink()
    buf.storage._frames["pixels/front"]._forget(0)  # as after a descriptor was closed for the cap
    buf.storage._frames["pixels/front"].cache.invalidate(range(8))
    with pytest.raises(
        BufferError, match=r"row 3 \(episode 0, step 3\) is missing \(shard file .* does not exist\)"
    ):
        buf.storage.read("pixels/front", np.array([3]))


def test_prior_data_copies_intact_episodes_and_names_the_damaged(store, make):
    from buffer.io.recorded import load_prior_episodes

    delete(shard(store, 1))  # episodes 1 and 2
    target = make("memory", name="target", capacity_steps=100)
    with pytest.raises(BufferError, match=r"2 episode\(s\) damaged \[1, 2\].*--skip-corrupt"):
        load_prior_episodes(str(store), target, skip_corrupt=False)
    assert target.num_episodes == 0
    copied, skipped = load_prior_episodes(str(store), target, skip_corrupt=True)
    assert copied == 2 and sorted(skipped) == [1, 2] and target.num_episodes == 2
    for new, old in ((0, 0), (1, 3)):
        rows = np.arange(*target.episode_rows(new))
        frames = target.storage.read("pixels/front", rows)
        for t in range(len(rows)):
            np.testing.assert_array_equal(frames[t], step_obs(old, t)["pixels/front"])
        np.testing.assert_array_equal(target.storage.read("action", rows[:-1])[:, 0], old)


def flip_frame_byte(store: Path, k: int, slot: int) -> None:
    """One bit of frame `slot` of shard `k` flipped: the structure stays intact, only a read finds it."""
    path = shard(store, k)
    data = bytearray(path.read_bytes())
    index = np.frombuffer(bytes(data[: 16 * FPS]), "<u8").reshape(FPS, 2)
    data[int(index[slot, 0]) + 7] ^= 0x01
    path.write_bytes(bytes(data))


def test_known_damage_is_reported_as_found_at_opening_and_later_episodes_are_still_read(store):
    delete(shard(store, 0))  # rows 0..7: episodes 0 and 1, known when the store opens
    flip_frame_byte(store, 2, 4)  # row 20: episode 3, found only by reading
    storage = open_store(store, on_damage="record")
    try:
        known = storage.damaged()
        assert sorted(known) == [0, 1] and known_damage(storage) == known
        problems = check_episodes(storage)
        assert sorted(problems) == [0, 1, 3]
        assert problems[0] == known[0] and problems[1] == known[1]  # the opening's words, not a re-read's
        assert "row 20 (episode 3, step 2) is corrupt" in problems[3]
    finally:
        storage.close()


def test_a_storage_without_an_opening_check_has_no_known_damage(make):
    buf = make("memory", capacity_steps=50)
    fill_episode(buf, 0, 5)
    assert known_damage(buf.storage) == {} and check_episodes(buf.storage) == {}


def test_only_the_episodes_and_arrays_asked_for_are_read(store):
    flip_frame_byte(store, 2, 4)  # row 20: episode 3's front frame
    storage = open_store(store)
    try:
        assert check_episodes(storage, [0, 1, 2]) == {}
        assert check_episodes(storage, names=["state", "action"]) == {}
        assert list(check_episodes(storage, [3], ["pixels/front"])) == [3]
        assert intact_episodes(storage, skip_corrupt=False, episodes=[0, 2]) == ([0, 2], {})
        assert intact_episodes(storage, skip_corrupt=False, names=["state"]) == ([0, 1, 2, 3], {})
        used, skipped = intact_episodes(storage, skip_corrupt=True, episodes=[1, 3])
        assert used == [1] and list(skipped) == [3]
    finally:
        storage.close()


def test_damage_is_found_in_a_later_read_block_of_an_episode(store):
    flip_frame_byte(store, 2, 5)  # row 21: episode 3, step 3, in the second 2-row block of 18..23
    storage = open_store(store)
    try:
        problems = check_episodes(storage, rows_per_read=2)
        assert list(problems) == [3] and "row 21 (episode 3, step 3)" in problems[3]
    finally:
        storage.close()


def test_skipped_episodes_are_described_on_one_line_listing_at_most_twenty():
    assert describe_skipped({4: "gone", 2: "bad"}) == "2 episode(s) skipped [2, 4]: episode 2: bad"
    twenty = {e: f"problem {e}" for e in range(20)}
    assert describe_skipped(twenty, verb="damaged") == (
        f"20 episode(s) damaged [{', '.join(map(str, range(20)))}]: episode 0: problem 0"
    )
    many = {e: f"problem {e}" for e in range(21)}
    assert describe_skipped(many) == (
        f"21 episode(s) skipped [{', '.join(map(str, range(20)))}, ...]: episode 0: problem 0"
    )
