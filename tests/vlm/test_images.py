"""Frames as data URLs: JPEG through imagecodecs when installed, through PIL otherwise; both decode."""

from __future__ import annotations

import sys

import numpy as np
import pytest

from vlm.images import _jpeg_encoder, decode_data_url, encode_data_url


def smooth_frame() -> np.ndarray:
    yy, xx = np.mgrid[0:48, 0:64]
    return np.stack([yy * 4, xx * 3, (yy + xx) * 2], axis=-1).astype(np.uint8)


@pytest.mark.parametrize("imagecodecs_installed", [True, False])
def test_jpeg_data_url_round_trips_with_and_without_imagecodecs(monkeypatch, imagecodecs_installed):
    _jpeg_encoder.cache_clear()
    if not imagecodecs_installed:
        monkeypatch.setitem(sys.modules, "imagecodecs", None)  # import imagecodecs -> ImportError
    try:
        assert (_jpeg_encoder() is not None) == imagecodecs_installed
        frame = smooth_frame()
        url = encode_data_url(frame, "jpeg", 90)
        assert url.startswith("data:image/jpeg;base64,")
        back = decode_data_url(url)
        assert back.shape == frame.shape and np.abs(back.astype(int) - frame).mean() < 2
    finally:
        _jpeg_encoder.cache_clear()


def test_png_data_url_is_exact():
    frame = smooth_frame()
    np.testing.assert_array_equal(decode_data_url(encode_data_url(frame, "png")), frame)
