"""Frames are verified wherever they are stored (issue #36, item 7): the crc32c of compressed frames is
checked before decoding ("CRC not checked on compressed chunks" survived), and `check_episodes` reads every
row of an episode longer than one read ("verification reads only the first block" survived)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from buffer_helpers import ACTION_DIM, OBS_SPEC, fill_episode

from buffer import BufferError
from buffer.spec import build_specs
from buffer.storage.integrity import check_episodes
from buffer.storage.shard_format import ChunkCodec
from buffer.storage.zarr_store import ZarrStorage

COMPRESSED = ["zstd", "blosc-lz4", "blosc-zstd-bitshuffle"]
SPECS = build_specs(OBS_SPEC, ACTION_DIM, ("success", "progress"))
FPS = 8


@pytest.mark.parametrize("codec", COMPRESSED)
@pytest.mark.parametrize("content", ["noise", "smooth"])
def test_a_flipped_byte_anywhere_in_a_compressed_frame_fails_its_checksum(codec: str, content: str) -> None:
    shape = (16, 12, 3)
    rng = np.random.default_rng(0)
    frame = (
        rng.integers(0, 256, shape, dtype=np.uint8)  # incompressible: stored nearly verbatim
        if content == "noise"
        else (np.arange(np.prod(shape)).reshape(shape) // 7 % 256).astype(np.uint8)
    )
    chunks = ChunkCodec(codec, shape)  # type: ignore[arg-type]
    chunk = chunks.encode(frame)
    np.testing.assert_array_equal(chunks.decode(chunk), frame)
    body = len(chunk) - 4
    for at in sorted({0, 1, body // 4, body // 2, 3 * body // 4, body - 2, body - 1}):
        damaged = bytearray(chunk)
        damaged[at] ^= 0x10
        with pytest.raises(ValueError, match=r"^frame checksum mismatch$"):
            chunks.decode(bytes(damaged))
        with pytest.raises(ValueError, match=r"^frame checksum mismatch$"):
            chunks.decode_into(bytes(damaged), np.empty(frame.size, np.uint8))


def store_with_long_episode(tmp_path: Path, make, codec: str = "none") -> Path:
    """One 20-step episode (rows 0..20) then a short one, frames 8 per shard."""
    buf = make("zarr", capacity_steps=100, frames_per_shard=FPS, frame_codec=codec)
    fill_episode(buf, 0, 20)
    fill_episode(buf, 1, 3)
    buf.close()
    return tmp_path / "store.zarr"


def flip_frame(store: Path, row: int) -> None:
    """Flip a byte inside the stored frame of ``row`` (its shard's index stays valid)."""
    shard = store / "pixels" / "front" / "c" / str(row // FPS) / "0" / "0" / "0"
    data = bytearray(shard.read_bytes())
    index = np.frombuffer(bytes(data[: 16 * FPS]), "<u8").reshape(FPS, 2)
    offset, nbytes = (int(v) for v in index[row % FPS])
    data[offset + nbytes // 2] ^= 0xFF
    shard.write_bytes(bytes(data))


@pytest.mark.parametrize("codec", ["none", "zstd"])
@pytest.mark.parametrize("row", [2, 9, 17])
def test_check_episodes_reads_every_block_of_an_episode(make, tmp_path, codec: str, row: int) -> None:
    store = store_with_long_episode(tmp_path, make, codec)
    flip_frame(store, row)
    storage = ZarrStorage.open_or_create(str(store), SPECS, capacity=100, on_damage="record")
    try:
        assert storage.damaged() == {}  # a flipped byte inside a frame is found by reading it, not at open
        for rows_per_read in (4, 7, 256):
            damage = check_episodes(storage, rows_per_read=rows_per_read)
            assert set(damage) == {0}, (rows_per_read, damage)
            assert f"row {row} (episode 0, step {row})" in damage[0]
        with pytest.raises(BufferError, match=rf"row {row} \(episode 0, step {row}\) is corrupt"):
            storage.read("pixels/front", np.array([row]))
    finally:
        storage.close()


def test_a_jpeg_chunk_decodes_to_its_frame_shape_and_refuses_a_flipped_byte() -> None:
    shape = (16, 12, 3)
    frame = (np.arange(np.prod(shape)).reshape(shape) // 7 % 256).astype(
        np.uint8
    )  # smooth: JPEG keeps it close
    chunks = ChunkCodec("jpeg", shape)
    chunk = chunks.encode(frame)
    decoded = chunks.decode(chunk)
    assert decoded.shape == shape and decoded.dtype == np.uint8 and chunks.is_lossy
    assert np.abs(decoded.astype(int) - frame).mean() < 4.0  # lossy, but the same picture
    flat = np.empty(frame.size, np.uint8)
    chunks.decode_into(chunk, flat)
    np.testing.assert_array_equal(flat.reshape(shape), decoded)
    damaged = bytearray(chunk)
    damaged[len(chunk) // 2] ^= 0x10
    with pytest.raises(ValueError, match=r"^frame checksum mismatch$"):
        chunks.decode(bytes(damaged))
