"""Tiny random models saved as local model directories (built once per session), and clip helpers."""

import numpy as np
import pytest

from vlm import Clip
from vlm.random_models import save_random_clip, save_random_vlm


@pytest.fixture(scope="session")
def vlm_dirs(tmp_path_factory):
    root = tmp_path_factory.mktemp("vlms")
    return {arch: str(save_random_vlm(root / arch, arch)) for arch in ("qwen2-vl", "idefics3")}


@pytest.fixture(scope="session")
def clip_model_dirs(tmp_path_factory):
    root = tmp_path_factory.mktemp("clips")
    return {arch: str(save_random_clip(root / arch, arch)) for arch in ("clip", "siglip")}


def make_clips(n=3, length=5, side=24, seed=0):
    """Random clips with a privileged progress signal, so every backend (the oracle too) can score them."""
    rng = np.random.default_rng(seed)
    return [
        Clip(
            rng.integers(0, 256, (length, side, side + 8, 3), dtype=np.uint8),
            {"progress": np.linspace(0, (i + 1) / n, length, dtype=np.float32)},
        )
        for i in range(n)
    ]


@pytest.fixture
def clips():
    return make_clips()
