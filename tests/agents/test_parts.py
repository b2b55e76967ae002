"""Augmentation and observation normalisation."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from agents.augmentation import random_shift, random_shift_prepared
from agents.config import PixelEncoderConfig
from agents.encoders import PixelEncoder
from agents.normalizer import RunningNormalizer


def test_random_shift_moves_whole_images_by_at_most_pad_pixels() -> None:
    images = torch.arange(2 * 10 * 12 * 3, dtype=torch.int64).reshape(2, 10, 12, 3).to(torch.uint8)
    images = torch.randint(
        0, 256, (8, 10, 12, 3), dtype=torch.uint8, generator=torch.Generator().manual_seed(0)
    )
    shifted = random_shift(images, 2, torch.Generator().manual_seed(1))
    assert shifted.shape == images.shape and shifted.dtype == torch.uint8
    padded = np.pad(images.numpy(), ((0, 0), (2, 2), (2, 2), (0, 0)), mode="edge")
    moved = 0
    for i in range(len(images)):
        matches = [
            (dy, dx)
            for dy in range(5)
            for dx in range(5)
            if np.array_equal(padded[i, dy : dy + 10, dx : dx + 12], shifted[i].numpy())
        ]
        assert matches, f"image {i} is not a replicate-padded crop"
        moved += matches[0] != (2, 2)
    assert moved > 0
    assert torch.equal(random_shift(images, 0), images)


def test_running_normalizer_matches_the_statistics_of_all_batches() -> None:
    rng = np.random.default_rng(0)
    data = rng.normal(3.0, 2.0, size=(300, 4))
    norm = RunningNormalizer(4, clip=100.0)
    for chunk in np.split(data, [7, 100, 101, 250]):
        norm.update(torch.as_tensor(chunk, dtype=torch.float32))
    np.testing.assert_allclose(norm.mean.numpy(), data.mean(0), rtol=1e-5)
    np.testing.assert_allclose(norm.var.numpy(), data.var(0), rtol=1e-4)
    out = norm(torch.as_tensor(data, dtype=torch.float32)).numpy()
    np.testing.assert_allclose(out.mean(0), 0.0, atol=1e-4)
    np.testing.assert_allclose(out.std(0), 1.0, atol=1e-3)
    clipped = RunningNormalizer(4, clip=1.0)
    clipped.update(torch.as_tensor(data, dtype=torch.float32))
    assert float(clipped(torch.full((1, 4), 1e6)).max()) == 1.0
    assert torch.equal(RunningNormalizer(4, enabled=False)(torch.full((1, 4), 5.0)), torch.full((1, 4), 5.0))


def test_prepared_random_shift_moves_whole_images_by_at_most_pad_pixels() -> None:
    from agents.augmentation import random_shift_prepared

    images = torch.arange(2 * 3 * 8 * 8, dtype=torch.float32).view(2, 3, 8, 8)
    shifted = random_shift_prepared(images, 2, torch.Generator().manual_seed(0))
    assert shifted.shape == images.shape
    for b in range(2):
        # each output is the replicate-padded input read at one offset in [-2, 2] per axis
        padded = torch.nn.functional.pad(images[b : b + 1], (2, 2, 2, 2), mode="replicate")[0]
        matches = [
            (dy, dx)
            for dy in range(5)
            for dx in range(5)
            if torch.equal(padded[:, dy : dy + 8, dx : dx + 8], shifted[b])
        ]
        assert len(matches) == 1
    assert random_shift_prepared(images, 0) is images


@pytest.mark.parametrize(
    "frame, image_size, pad",
    [((64, 64, 3), 32, 2), ((64, 48, 3), 24, 3), ((30, 30, 1), 0, 1), ((65, 65, 3), 32, 2)],
)
def test_prepare_shifted_is_prepare_then_random_shift_value_for_value(frame, image_size, pad) -> None:
    """The training path's one-pass versions (compiled on the CPU, a gather elsewhere) give the same
    images from the same random draw."""
    encoder = PixelEncoder(frame, PixelEncoderConfig(image_size=image_size, shift_pad_px=pad, num_layers=1))
    frames = torch.randint(
        0, 256, (17, *frame), dtype=torch.uint8, generator=torch.Generator().manual_seed(0)
    )
    for seed in range(3):
        expected = random_shift_prepared(encoder.prepare(frames), pad, torch.Generator().manual_seed(seed))
        got = encoder.prepare_shifted(frames, pad, torch.Generator().manual_seed(seed))
        assert got.dtype == torch.float32 and torch.equal(got, expected)
        # the torch path (other devices) from the same draw: one gather through the index maps
        shifts = torch.randint(-pad, pad + 1, (17, 2), generator=torch.Generator().manual_seed(seed))
        assert torch.equal(encoder._gather_shifted(frames, shifts, pad), expected)
    assert not torch.equal(got, encoder.prepare(frames))  # it did shift
    assert torch.equal(encoder.prepare_shifted(frames, 0), encoder.prepare(frames))
