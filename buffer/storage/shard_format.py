"""The zarr v3 `sharding_indexed` byte layout, for a frame array whose inner chunk is one frame.

A shard file starts with the index (index_location "start"): `chunks_per_shard` pairs of little-endian
uint64 (offset, nbytes), (2^64-1, 2^64-1) for an absent chunk, then the crc32c of those bytes (index
codecs [bytes(little), crc32c]); the encoded inner chunks follow in any order, and bytes no index entry
points at are allowed (the writer appends new frames and rewrites the index in place, compacting
now and then). Inner chunks use the codecs [bytes, <compressor>?, crc32c] (lossy: [jpeg, crc32c], see
`buffer.storage.jpeg_codec`), so every frame carries its
own checksum. Any zarr v3 client reads these shards; this module only lets the buffer write and pread
them without zarr-python's per-chunk overhead (ARCHITECTURE, zarr 3 facts).
"""

from __future__ import annotations

from typing import Any, Literal

import google_crc32c
import numcodecs
import numpy as np

ABSENT = np.uint64(2**64 - 1)
FrameCodec = Literal["none", "zstd", "blosc-lz4", "blosc-zstd-bitshuffle", "jpeg"]
LOSSY_CODECS = ("jpeg",)
"""Frame codecs that do not return the stored frame exactly (their quality is in the store metadata)."""


DEFAULT_JPEG_QUALITY = 90
"""Default quality of ``frame_codec="jpeg"``: ~8x smaller than raw 84x84 camera-like frames."""


MAX_FRAMES_PER_SHARD = 255
"""The index (16 bytes per frame + 4) then fits in the file's first 4 KiB page, so rewriting it in place
is a single-page write, which a killed process cannot leave half done."""


def sharding_codec(
    codec: FrameCodec, frame_shape: tuple[int, ...], quality: int = DEFAULT_JPEG_QUALITY
) -> Any:
    """The zarr ShardingCodec of a frame array: one frame per inner chunk, index first (`quality`: of
    the lossy codecs)."""
    from zarr.codecs import BloscCodec, BytesCodec, Crc32cCodec, ShardingCodec, ZstdCodec

    chain: list[Any] = [BytesCodec()]
    if codec == "jpeg":
        from buffer.storage.jpeg_codec import jpeg_serializer

        chain = [jpeg_serializer(quality)]  # array -> bytes: replaces BytesCodec
    elif codec == "zstd":
        chain.append(ZstdCodec(level=3))
    elif codec == "blosc-lz4":
        chain.append(BloscCodec(cname="lz4", clevel=5, shuffle="noshuffle", typesize=1))
    elif codec == "blosc-zstd-bitshuffle":
        chain.append(BloscCodec(cname="zstd", clevel=3, shuffle="bitshuffle", typesize=1))
    chain.append(Crc32cCodec())
    return ShardingCodec(
        chunk_shape=(1, *frame_shape),
        codecs=chain,
        index_codecs=[BytesCodec(), Crc32cCodec()],
        index_location="start",
    )


class ChunkCodec:
    """Encodes/decodes one inner chunk (a frame) exactly as the zarr codec chain above does."""

    def __init__(self, codec: FrameCodec, frame_shape: tuple[int, ...], quality: int = DEFAULT_JPEG_QUALITY):
        self.frame_shape = frame_shape
        self.frame_bytes = int(np.prod(frame_shape))
        self._compressor: Any = None  # bytes -> bytes, after the frame's raw bytes
        self._image: Any = None  # array -> bytes (replaces the raw bytes): JpegFrames
        if codec == "jpeg":
            from buffer.storage.jpeg_codec import JpegFrames

            self._image = JpegFrames(quality, frame_shape)
        elif codec == "zstd":
            self._compressor = numcodecs.Zstd(level=3)
        elif codec == "blosc-lz4":
            self._compressor = numcodecs.Blosc(cname="lz4", clevel=5, shuffle=numcodecs.Blosc.NOSHUFFLE)
        elif codec == "blosc-zstd-bitshuffle":
            self._compressor = numcodecs.Blosc(cname="zstd", clevel=3, shuffle=numcodecs.Blosc.BITSHUFFLE)

    @property
    def is_lossy(self) -> bool:
        """Decoded frames differ from the written ones (JPEG)."""
        return self._image is not None

    @property
    def is_raw(self) -> bool:
        """No compressor: a chunk is the frame's bytes then its crc32c."""
        return self._compressor is None and self._image is None

    def check_raw(self, frame_bytes: np.ndarray, crc: bytes | bytearray, nbytes_read: int) -> None:
        """ValueError unless an uncompressed chunk was read whole and matches its checksum."""
        if nbytes_read != self.frame_bytes + 4:
            raise ValueError(f"chunk truncated: read {nbytes_read} of {self.frame_bytes + 4} bytes")
        if google_crc32c.value(frame_bytes) != int.from_bytes(crc, "little"):
            raise ValueError("frame checksum mismatch")

    def encode(self, frame: np.ndarray) -> bytes:
        """Chunk bytes of one uint8 frame."""
        if self._image is not None:
            data = self._image.encode(frame)
        else:
            data = np.ascontiguousarray(frame).tobytes()
            if self._compressor is not None:
                data = bytes(self._compressor.encode(data))
        return data + np.uint32(google_crc32c.value(data)).tobytes()

    def decode_into(self, chunk: bytes, out: np.ndarray) -> None:
        """Decode a compressed chunk straight into `out` (a flat uint8 row); ValueError when corrupt."""
        body = chunk[:-4]
        if len(chunk) < 4 or google_crc32c.value(body) != int.from_bytes(chunk[-4:], "little"):
            raise ValueError("frame checksum mismatch")
        if self._image is not None:
            self._image.decode_into(body, out)
            return
        try:
            self._compressor.decode(body, out=out)
        except Exception as exc:  # numcodecs raises RuntimeError/ValueError depending on the codec
            raise ValueError(f"cannot decompress: {exc}") from None

    def decode(self, chunk: bytes) -> np.ndarray:
        """The frame in `chunk`; ValueError when the checksum or size is wrong."""
        if self._image is not None:
            frame = np.empty(self.frame_bytes, np.uint8)
            self.decode_into(chunk, frame)
            return frame.reshape(self.frame_shape)
        body, stored = chunk[:-4], chunk[-4:]
        if len(chunk) < 4 or np.uint32(google_crc32c.value(body)).tobytes() != stored:
            raise ValueError("frame checksum mismatch")
        if self._compressor is not None:
            body = self._compressor.decode(body)
        frame = np.frombuffer(body, np.uint8)
        if frame.size != self.frame_bytes:
            raise ValueError(f"frame has {frame.size} bytes, expected {self.frame_bytes}")
        return frame.reshape(self.frame_shape)


def index_nbytes(chunks_per_shard: int) -> int:
    """Size of the index (with its checksum) at the start of a shard."""
    return 16 * chunks_per_shard + 4


def encode_index(index: np.ndarray) -> bytes:
    """Index bytes of an (n, 2) uint64 offsets/lengths table, crc32c appended."""
    raw = np.ascontiguousarray(index, "<u8").tobytes()
    return raw + np.uint32(google_crc32c.value(raw)).tobytes()


def decode_index(head: bytes, chunks_per_shard: int) -> np.ndarray:
    """The (n, 2) uint64 index from a shard's first bytes; ValueError when its checksum is wrong."""
    if len(head) != index_nbytes(chunks_per_shard):
        raise ValueError(f"shard index has {len(head)} bytes, expected {index_nbytes(chunks_per_shard)}")
    raw, stored = head[:-4], head[-4:]
    if np.uint32(google_crc32c.value(raw)).tobytes() != stored:
        raise ValueError("shard index checksum mismatch")
    return np.frombuffer(raw, "<u8").reshape(chunks_per_shard, 2).astype(np.uint64)


def assemble_shard(chunks: list[bytes | None]) -> bytes:
    """A whole, compact shard file from its inner chunks (None = absent)."""
    index = np.full((len(chunks), 2), ABSENT, np.uint64)
    offset = index_nbytes(len(chunks))
    for j, chunk in enumerate(chunks):
        if chunk is not None:
            index[j] = (offset, len(chunk))
            offset += len(chunk)
    return encode_index(index) + b"".join(c for c in chunks if c is not None)


def shard_key(array_path: str, shard: int, ndim: int) -> str:
    """Store key of shard `shard` along axis 0 (default v3 chunk keys, "/" separator)."""
    return "/".join([array_path, "c", str(shard), *("0" * (ndim - 1))])
