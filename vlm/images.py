"""Frames as base64 data URLs (the OpenAI image format) and back, with size checks before decoding."""

from __future__ import annotations

import base64
import binascii
import functools
import io
from typing import Any

import numpy as np

from vlm.errors import VLMError

_PIL_FORMATS = {"jpeg": "JPEG", "png": "PNG"}
_ACCEPTED = ("PNG", "JPEG", "WEBP")


def encode_data_url(frame: np.ndarray, image_format: str = "jpeg", jpeg_quality: int = 90) -> str:
    """``data:image/<fmt>;base64,...`` for one uint8 [H, W, 3] RGB frame.

    JPEG goes through imagecodecs (libjpeg-turbo) when it is installed: ~3x less CPU than PIL on a
    128 px frame (0.057 vs 0.156 ms with base64), which the scoring worker pays for every frame it
    sends (benchmarks/scoring.py, ``worker_cpu_ms_per_clip``).
    """
    if image_format not in _PIL_FORMATS:
        raise VLMError(f"image_format must be one of {sorted(_PIL_FORMATS)}, got {image_format!r}")
    frame = np.ascontiguousarray(frame)
    encoder = _jpeg_encoder() if image_format == "jpeg" else None
    if encoder is not None:
        data = bytes(encoder(frame, level=int(jpeg_quality)))
    else:
        from PIL import Image

        buf = io.BytesIO()
        options = {"quality": int(jpeg_quality)} if image_format == "jpeg" else {"compress_level": 1}
        Image.fromarray(frame).save(buf, format=_PIL_FORMATS[image_format], **options)
        data = buf.getvalue()
    return f"data:image/{image_format};base64," + base64.b64encode(data).decode("ascii")


@functools.cache
def _jpeg_encoder() -> Any:
    """imagecodecs' JPEG encoder, or None when imagecodecs is not installed (PIL is used then)."""
    try:
        from imagecodecs import jpeg8_encode
    except ImportError:
        return None
    return jpeg8_encode


def decode_data_url(url: object, max_side: int = 4096) -> np.ndarray:
    """uint8 [H, W, 3] RGB from a base64 image data URL.

    Raises:
        VLMError: one line naming what is wrong (not a data URL, bad base64, not an image, too large).
    """
    from PIL import Image, UnidentifiedImageError

    if not isinstance(url, str) or not url.startswith("data:image/") or ";base64," not in url[:40]:
        shown = url[:30] if isinstance(url, str) else type(url).__name__
        raise VLMError(f"images must be base64 data URLs (data:image/...;base64,...), got {shown!r}")
    try:
        raw = base64.b64decode(url.split(",", 1)[1], validate=True)
    except (binascii.Error, ValueError):
        raise VLMError("an image data URL holds invalid base64") from None
    try:
        with Image.open(io.BytesIO(raw)) as image:
            if image.format not in _ACCEPTED:  # GIF, BMP, TIFF...: not what the API promises
                raise VLMError(f"an image data URL holds a {image.format} image; send PNG, JPEG or WebP")
            width, height = image.size  # read from the header, before decoding pixels
            if max(width, height) > max_side:
                raise VLMError(
                    f"an image is {width}x{height}; this server accepts at most {max_side} px a side"
                )
            return np.asarray(image.convert("RGB"), dtype=np.uint8)
    except (UnidentifiedImageError, OSError, Image.DecompressionBombError):
        raise VLMError("an image data URL does not hold a readable PNG/JPEG/WebP image") from None
