"""IQL's DrQ shift (issue #36, item 7: "DrQ shift never applied to pixel batches" survived tests/agents/test_iql.py):
the encoder sees every pixel batch of an update shifted by at most ``shift_pad_px`` (edges replicated),
observations and next observations alike, and unshifted when the pad is 0."""

from __future__ import annotations

import dataclasses

import numpy as np
import torch

from agents.iql import IQL
from tests.agents.test_iql import ROBOT_SPEC, SMALL, box, random_batch

KEY = "pixels/front"


def shifted(image: np.ndarray, dy: int, dx: int) -> np.ndarray:
    """``image`` [H, W, C] read at (row + dy, col + dx), positions clamped to the image (replicated edges)."""
    height, width = image.shape[:2]
    rows = np.clip(np.arange(height) + dy, 0, height - 1)
    cols = np.clip(np.arange(width) + dx, 0, width - 1)
    return image[rows][:, cols]


def shifts_of(seen: np.ndarray, original: np.ndarray, pad: int) -> list[tuple[int, int] | None]:
    """Per image, the (dy, dx) within ``pad`` that maps ``original`` onto ``seen`` (None if there is none)."""
    found = []
    for s, o in zip(seen, original, strict=True):
        offsets = [(dy, dx) for dy in range(-pad, pad + 1) for dx in range(-pad, pad + 1)]
        found.append(next((d for d in offsets if np.array_equal(shifted(o, *d), s)), None))
    return found


def encoder_inputs(agent: IQL, batch) -> list[np.ndarray]:
    """The pixel batches the agent's encoder reads during one update."""
    seen: list[np.ndarray] = []
    hook = agent.encoder.register_forward_pre_hook(
        lambda _, args: seen.append(args[0][KEY].cpu().numpy().copy())
    )
    try:
        agent.update(batch)
    finally:
        hook.remove()
    return seen


def test_every_pixel_batch_of_an_update_is_randomly_shifted_within_the_pad() -> None:
    torch.manual_seed(0)
    pad = SMALL.pixel.shift_pad_px
    assert pad > 0
    agent = IQL(SMALL, ROBOT_SPEC, box())
    batch = random_batch(ROBOT_SPEC, batch=32)
    seen = encoder_inputs(agent, batch)
    originals = {batch.obs[KEY].tobytes(): batch.obs[KEY], batch.next_obs[KEY].tobytes(): batch.next_obs[KEY]}
    matched = {"obs": 0, "next_obs": 0}
    for images in seen:
        for name, original in (("obs", batch.obs[KEY]), ("next_obs", batch.next_obs[KEY])):
            offsets = shifts_of(images, original, pad)
            if all(o is not None for o in offsets):
                matched[name] += 1
                assert sum(o != (0, 0) for o in offsets) >= len(offsets) // 2, offsets  # most move
                assert len(set(offsets)) > 3, offsets  # offsets drawn per image
        assert images.tobytes() not in originals  # never the batch as stored
    assert matched["obs"] >= 1 and matched["next_obs"] >= 1, matched


def test_no_pad_no_shift() -> None:
    cfg = dataclasses.replace(SMALL, pixel=dataclasses.replace(SMALL.pixel, shift_pad_px=0))
    agent = IQL(cfg, ROBOT_SPEC, box())
    batch = random_batch(ROBOT_SPEC, batch=8)
    seen = encoder_inputs(agent, batch)
    stored = {batch.obs[KEY].tobytes(), batch.next_obs[KEY].tobytes()}
    assert seen and all(images.tobytes() in stored for images in seen)
