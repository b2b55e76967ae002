"""`BufferConfig.prefetch`: the next batch is read in a background thread while the learner updates.

The batches must be the ones a buffer without prefetch draws (when nothing changes between samples),
every read must see committed rows only (a commit waits for the read in flight), runs must repeat
exactly, a checkpoint must carry the drawn batch, and a read error must reach the learner.
"""

from __future__ import annotations

import numpy as np
import pytest
from buffer_helpers import fill_episode

from buffer import BufferError, PERSamplerConfig


def same(a, b) -> bool:
    return (
        np.array_equal(a.indices, b.indices)
        and np.array_equal(a.action, b.action)
        and np.array_equal(a.reward, b.reward)
        and all(np.array_equal(a.obs[k], b.obs[k]) for k in a.obs)
        and all(np.array_equal(a.next_obs[k], b.next_obs[k]) for k in a.next_obs)
        and np.array_equal(a.weights, b.weights)
    )


def consistent(batch) -> bool:
    """Every part of each sampled transition comes from the same stored step (values encode it)."""
    episode, t = batch.action[:, 0], batch.action[:, 1]
    state, next_state = batch.obs["state"], batch.next_obs["state"]
    return bool(
        np.array_equal(state[:, 0], episode)
        and np.array_equal(state[:, 1], t)
        and np.array_equal(next_state[:, 1], t + 1)
        and np.array_equal(batch.reward, t)
    )


@pytest.mark.parametrize("storage", ["memory", "zarr"])
def test_prefetched_batches_are_the_ones_drawn_without_prefetch(make, storage):
    plain = make(storage, name="plain.zarr", seed=3)
    ahead = make(storage, name="ahead.zarr", seed=3, prefetch=True)
    for buf in (plain, ahead):
        for e in range(6):
            fill_episode(buf, e, 20)
    for _ in range(5):
        assert same(plain.sample(16), ahead.sample(16))
    assert ahead._pending is not None  # the sixth batch is being read


def test_a_commit_waits_for_the_read_in_flight_and_reads_see_whole_transitions(make):
    # Capacity for ~2 episodes: every commit evicts rows a prefetched batch may have drawn.
    buf = make("zarr", capacity_steps=45, prefetch=True, seed=0)
    fill_episode(buf, 0, 20)
    fill_episode(buf, 1, 20)
    for e in range(2, 12):
        batch = buf.sample(32)
        assert consistent(batch)
        fill_episode(buf, e, 20)  # evicts the oldest episode while the next batch may be read
    batch = buf.sample(32)
    assert consistent(batch)


def test_prefetching_runs_repeat_exactly_with_td_priorities(make):
    def run(name):
        buf = make("memory", sampler=PERSamplerConfig(), seed=5, prefetch=True, name=name)
        out = []
        for e in range(8):
            fill_episode(buf, e, 15)
            for _ in range(3):
                batch = buf.sample(8)
                out.append(batch)
                buf.update_priorities(batch.indices, np.abs(batch.reward - 7.0) + 0.1)
                buf.set_learner_step(len(out))
        return out

    first, second = run("a"), run("b")
    assert all(same(a, b) for a, b in zip(first, second, strict=True))


def test_a_checkpoint_carries_the_prefetched_draw(make):
    def filled(name):
        buf = make("memory", seed=11, prefetch=True, name=name)
        for e in range(5):
            fill_episode(buf, e, 20)
        return buf

    original = filled("a")
    for _ in range(3):
        original.sample(16)
    state = original.state_dict()
    assert "prefetched" in state
    resumed = filled("b")
    resumed.load_state_dict(state)
    for _ in range(4):
        assert same(original.sample(16), resumed.sample(16))


def test_another_batch_shape_drops_the_prefetched_draw(make):
    buf = make("memory", seed=2, prefetch=True)
    for e in range(4):
        fill_episode(buf, e, 20)
    buf.sample(16)
    batch = buf.sample(8, keys=["state"])
    assert len(batch.indices) == 8 and list(batch.obs) == ["state"]
    assert consistent_state_only(batch)


def consistent_state_only(batch) -> bool:
    return bool(np.array_equal(batch.obs["state"][:, 1], batch.action[:, 1]))


def test_a_read_error_in_the_background_reaches_the_next_sample(make, monkeypatch):
    buf = make("memory", seed=0, prefetch=True)
    for e in range(3):
        fill_episode(buf, e, 20)
    buf.sample(8)  # the next read is in flight or done; make the one after that fail
    buf._settle()

    def broken(name, rows):
        raise BufferError(f"frame file of {name} is corrupt")

    monkeypatch.setattr(buf.storage, "read", broken)
    buf.sample(8)  # consumes the batch read before the damage; draws the next, whose read fails
    with pytest.raises(BufferError, match="corrupt"):
        buf.sample(8)
