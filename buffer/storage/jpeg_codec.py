"""Lossy JPEG frames (issue 18, item 4): imagecodecs' JPEG codec, readable by plain zarr-python.

imagecodecs ships JPEG as a numcodecs codec (``imagecodecs.numcodecs.Jpeg``, id ``imagecodecs_jpeg``),
and zarr-python 3 reads any numcodecs codec stored under the name ``numcodecs.<id>`` once a zarr codec
class is registered for that name. imagecodecs (2026.1) registers no zarr 3 class itself, so
``register_jpeg_codec`` registers both (explicitly, never as an import side effect); a reader without
vlmrl does the same in four lines (docs/recordings.md, "Lossy frames").

A frame array's inner chunk is one frame (1, H, W, 3), so every frame is its own JPEG image: the codec
chain is [numcodecs.imagecodecs_jpeg, crc32c]. Chroma is not subsampled (4:4:4): on 84x84 camera-like
frames 4:2:0 saves ~25% more bytes but smears coloured edges (max error 115 vs 47 levels at quality 90;
measured with ``benchmarks/buffer_throughput.py``'s frames).
"""

from __future__ import annotations

import warnings
from typing import Any

import numpy as np
from zarr.codecs.numcodecs import _NumcodecsArrayBytesCodec
from zarr.errors import ZarrUserWarning

from buffer.errors import BufferError
from buffer.storage.jpeg_quality import check_quality

JPEG_CODEC_ID = "imagecodecs_jpeg"
"""numcodecs id of imagecodecs' JPEG codec; zarr.json names it ``numcodecs.imagecodecs_jpeg``."""
JPEG_SUBSAMPLING = "444"
"""Chroma subsampling of stored frames (none; see the module docstring)."""


class ImagecodecsJpeg(_NumcodecsArrayBytesCodec, codec_name=JPEG_CODEC_ID):
    """zarr v3 array-to-bytes codec ``numcodecs.imagecodecs_jpeg`` (configuration: imagecodecs.numcodecs.Jpeg's
    arguments, e.g. ``level`` = quality and ``subsampling``)."""

    def __init__(self, **codec_config: Any) -> None:
        # zarr warns on every construction that numcodecs codecs are outside the v3 spec; we know.
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", ZarrUserWarning)
            super().__init__(**codec_config)


def _imagecodecs() -> Any:
    try:
        import imagecodecs
    except ImportError:
        raise BufferError(
            "frame_codec 'jpeg' needs the imagecodecs package (the 'lossy' extra, installed by "
            "`make setup`; or: pip install imagecodecs)"
        ) from None
    return imagecodecs


def register_jpeg_codec() -> None:
    """Make zarr-python able to read and write ``numcodecs.imagecodecs_jpeg`` chunks (idempotent).

    Raises:
        BufferError: imagecodecs is not installed.
    """
    _imagecodecs()
    import numcodecs
    from imagecodecs.numcodecs import Jpeg
    from zarr.registry import register_codec

    numcodecs.register_codec(Jpeg)
    register_codec(f"numcodecs.{JPEG_CODEC_ID}", ImagecodecsJpeg)


def jpeg_serializer(quality: int) -> ImagecodecsJpeg:
    """The zarr codec that stores each inner chunk (one frame) as a JPEG of this quality."""
    register_jpeg_codec()
    return ImagecodecsJpeg(level=check_quality(quality), subsampling=JPEG_SUBSAMPLING)


class JpegFrames:
    """Encodes a uint8 HxWx3 frame to JPEG bytes and decodes them straight into a caller's row."""

    def __init__(self, quality: int, frame_shape: tuple[int, ...]):
        self.quality = check_quality(quality)
        self.frame_shape = frame_shape
        self._codecs = _imagecodecs()

    def encode(self, frame: np.ndarray) -> bytes:
        return bytes(
            self._codecs.jpeg8_encode(
                np.ascontiguousarray(frame), level=self.quality, subsampling=JPEG_SUBSAMPLING
            )
        )

    def decode_into(self, data: bytes, out: np.ndarray) -> None:
        """Decode into `out` (flat uint8 row of one frame); ValueError when the bytes are no such JPEG."""
        try:
            self._codecs.jpeg8_decode(data, out=out.reshape(self.frame_shape))
        except Exception as exc:  # imagecodecs.Jpeg8Error, or ValueError for a frame of another size
            raise ValueError(f"cannot decode JPEG: {exc}") from None
