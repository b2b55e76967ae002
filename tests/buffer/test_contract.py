"""Contract tests of ReplayBuffer over every storage x sampler combination."""

from __future__ import annotations

import numpy as np
import pytest
from buffer_helpers import fill_episode, step_obs

from buffer import (
    BufferError,
    PERSamplerConfig,
    UniformSamplerConfig,
    VLMMixSamplerConfig,
    VLMTDSamplerConfig,
)

STORAGES = ["memory", "zarr"]
SAMPLERS = {
    "uniform": UniformSamplerConfig(),
    "per": PERSamplerConfig(),
    "vlm_mix": VLMMixSamplerConfig(lambda_start=0.5),
    "vlm_td": VLMTDSamplerConfig(),
}
COMBOS = [(s, k) for s in STORAGES for k in SAMPLERS]


@pytest.fixture(params=COMBOS, ids=[f"{s}-{k}" for s, k in COMBOS])
def buf(request, make):
    storage, sampler = request.param
    return make(storage, SAMPLERS[sampler], capacity_steps=120, n_step=1)


def check_batch_consistent(batch) -> None:
    """Every field of every row must come from the same stored transition."""
    ep, t = batch.obs["state"][:, 0].astype(int), batch.obs["state"][:, 1].astype(int)
    for i in range(len(ep)):
        np.testing.assert_array_equal(batch.obs["state"][i], step_obs(ep[i], t[i])["state"])
        np.testing.assert_array_equal(batch.obs["pixels/front"][i], step_obs(ep[i], t[i])["pixels/front"])
        np.testing.assert_array_equal(
            batch.next_obs["pixels/front"][i], step_obs(ep[i], t[i] + 1)["pixels/front"]
        )
        np.testing.assert_array_equal(batch.action[i], [ep[i], t[i]])
    np.testing.assert_array_equal(batch.reward, t.astype(np.float32))


def test_sample_is_consistent_and_typed(buf):
    for e in range(5):
        fill_episode(buf, e, 9)
    assert buf.num_episodes == 5 and buf.num_transitions == 45
    batch = buf.sample(64)
    check_batch_consistent(batch)
    assert batch.obs["pixels/front"].dtype == np.uint8 and batch.obs["state"].dtype == np.float32
    assert batch.action.dtype == np.float32 and batch.weights.dtype == np.float32
    assert batch.indices.dtype == np.int64 and batch.weights.max() == pytest.approx(1.0)
    assert batch.reward.dtype == batch.terminated.dtype == batch.discount.dtype == np.float32
    last = batch.obs["state"][:, 1] == 8
    np.testing.assert_array_equal(batch.terminated, last.astype(np.float32))
    np.testing.assert_allclose(batch.discount, np.where(last, 0.0, 0.99), rtol=1e-6)


def test_eviction_keeps_whole_recent_episodes(buf):
    for e in range(20):  # 20 episodes x 10 rows into 120 rows: the first 8 go
        fill_episode(buf, e, 9)
    assert buf.num_episodes == 12
    episodes = set(buf.sample(512).obs["state"][:, 0].astype(int))
    assert episodes <= set(range(8, 20)) and len(episodes) > 6
    check_batch_consistent(buf.sample(128))


def test_evicted_rows_not_reused_by_the_new_episode_are_never_sampled(buf):
    for e in range(12):  # 12 episodes x 10 rows fill the 120 rows
        fill_episode(buf, e, 9)
    fill_episode(buf, 12, 3)  # 4 rows: evicts episode 0 (10 rows), leaves 6 of its rows unused
    assert buf.num_episodes == 12
    batch = buf.sample(512)
    assert set(batch.obs["state"][:, 0].astype(int)) == set(range(1, 13))
    assert batch.indices.min() >= buf.episode_rows(1)[0]  # no row of episode 0 (nor a stale -1)
    check_batch_consistent(batch)


def test_add_episode_returns_the_new_episodes_id(buf):
    def episode(e: int, length: int) -> dict:
        frames = [step_obs(e, t) for t in range(length + 1)]
        return {
            "obs": {key: np.stack([f[key] for f in frames]) for key in frames[0]},
            "action": np.array([[e, t] for t in range(length)], np.float32),
            "reward": np.arange(length, dtype=np.float32),
            "terminated": np.arange(length) == length - 1,
            "truncated": np.zeros(length, bool),
        }

    ids = [buf.add_episode(**episode(e, 29)) for e in range(6)]  # 30 rows each: the 5th evicts the 1st
    assert ids == list(range(6)) and buf.num_episodes == 4


def test_keys_restrict_reads_and_unknown_key_fails(buf):
    fill_episode(buf, 0, 5)
    batch = buf.sample(8, keys=("state",))
    assert set(batch.obs) == {"state"} and set(batch.next_obs) == {"state"}
    with pytest.raises(BufferError, match=r"unknown observation keys \['pixels/side'\]"):
        buf.sample(8, keys=("pixels/side",))


def test_sampling_an_empty_buffer_fails_clearly(buf):
    with pytest.raises(BufferError, match="no committed transitions"):
        buf.sample(4)


def test_episode_in_flight_is_invisible(buf):
    fill_episode(buf, 0, 4)
    fill_episode(buf, 1, 6, terminate=False)  # truncated: committed
    for t in range(3):  # in flight
        buf.add_step(
            step_obs(2, t), np.zeros(2), 0.0, False, False, {"success": 0, "progress": 0}, step_obs(2, t + 1)
        )
    assert buf.num_episodes == 2
    assert set(buf.sample(256).obs["state"][:, 0].astype(int)) == {0, 1}


def test_truncation_bootstraps_termination_does_not(buf):
    fill_episode(buf, 0, 3, terminate=False)
    fill_episode(buf, 1, 3, terminate=True)
    batch = buf.sample(256)
    last = batch.obs["state"][:, 1] == 2
    truncated_last = last & (batch.obs["state"][:, 0] == 0)
    assert truncated_last.any()
    assert np.all(batch.discount[truncated_last] > 0) and np.all(batch.terminated[truncated_last] == 0)


def test_clips_scores_and_aux_reward(buf):
    fill_episode(buf, 0, 20)
    clips = buf.new_clips()
    assert [(c.start, c.length) for c in clips] == [(0, 8), (16, 3)]
    assert buf.new_clips() == []
    frames, info = buf.read_clip(clips[0])
    assert frames.shape == (8, 6, 5, 3)
    for i in range(8):
        np.testing.assert_array_equal(frames[i], step_obs(0, 2 * i)["pixels/front"])
    np.testing.assert_allclose(info["progress"][1:], [(2 * i - 1) / 20 for i in range(1, 8)], rtol=1e-6)
    buf.set_scores([c.clip_id for c in clips], [0.25, 1.0], "oracle")
    np.testing.assert_array_equal(buf.storage.read("scores/oracle", np.arange(20)), [0.25] * 16 + [1.0] * 4)
    buf.set_aux_reward(np.arange(20), np.full(20, 0.5), "oracle")
    with pytest.raises(BufferError, match=r"\[0, 1\]"):
        buf.set_scores([clips[0].clip_id], [1.5], "oracle")


def test_update_priorities_accepts_sampled_indices(buf):
    for e in range(3):
        fill_episode(buf, e, 7)
    batch = buf.sample(32)
    buf.update_priorities(batch.indices, np.linspace(0, 3, 32))
    buf.set_learner_step(500)
    check_batch_consistent(buf.sample(32))


def test_state_dict_resumes_sampling_exactly(buf, make):
    for e in range(4):
        fill_episode(buf, e, 6)
    buf.update_priorities(buf.sample(16).indices, np.arange(16.0))
    state = buf.state_dict()
    a = buf.sample(32)
    buf.load_state_dict(state)
    b = buf.sample(32)
    np.testing.assert_array_equal(a.indices, b.indices)
    np.testing.assert_array_equal(a.weights, b.weights)


@pytest.mark.parametrize("storage", STORAGES)
def test_n_step_returns_frame_stack_and_aux_reward(make, storage):
    buf = make(storage, n_step=3, gamma=0.5, frame_stack=2, aux_reward_scorer="oracle", aux_reward_weight=2.0)
    fill_episode(buf, 0, 5)  # rewards 0..4, terminated at t = 4
    start, _ = buf.episode_rows(0)
    buf.set_aux_reward(start + np.arange(5), np.full(5, 0.25), "oracle")
    batch = buf.sample(256)
    t = batch.obs["state"][:, 1].astype(int)
    for i in range(256):
        k = min(3, 5 - t[i])
        expected = sum(0.5**j * (t[i] + j + 0.5) for j in range(k))  # reward + 2.0 * 0.25 aux
        assert batch.reward[i] == pytest.approx(expected, rel=1e-6)
        terminal = t[i] + k == 5
        assert batch.terminated[i] == float(terminal)
        assert batch.discount[i] == pytest.approx(0.0 if terminal else 0.5**k)
        np.testing.assert_array_equal(batch.next_obs["state"][i], step_obs(0, t[i] + k)["state"])
        stacked = batch.obs["pixels/front"][i]
        assert stacked.shape == (6, 5, 6)
        np.testing.assert_array_equal(stacked[..., :3], step_obs(0, max(0, t[i] - 1))["pixels/front"])
        np.testing.assert_array_equal(stacked[..., 3:], step_obs(0, t[i])["pixels/front"])
        stacked_next = batch.next_obs["pixels/front"][i]  # the frames before s_{t+k}, oldest first
        np.testing.assert_array_equal(stacked_next[..., :3], step_obs(0, t[i] + k - 1)["pixels/front"])
        np.testing.assert_array_equal(stacked_next[..., 3:], step_obs(0, t[i] + k)["pixels/front"])


@pytest.mark.parametrize("storage", STORAGES)
def test_a_frame_stack_never_reaches_into_the_previous_episode(make, storage):
    buf = make(storage, frame_stack=3)
    fill_episode(buf, 0, 5)
    fill_episode(buf, 1, 5)
    batch = buf.sample(512)
    ep, t = batch.obs["state"][:, 0].astype(int), batch.obs["state"][:, 1].astype(int)
    assert np.any((ep == 1) & (t < 2))
    for i in np.flatnonzero(ep == 1):
        for j, back in enumerate((2, 1, 0)):  # oldest first, the episode's first frame repeated
            frame = batch.obs["pixels/front"][i][..., 3 * j : 3 * j + 3]
            np.testing.assert_array_equal(frame, step_obs(1, max(0, t[i] - back))["pixels/front"])


@pytest.mark.parametrize("storage", STORAGES)
def test_clip_scores_steer_vlm_sampling(make, storage):
    buf = make(storage, VLMMixSamplerConfig(lambda_start=1.0, lambda_end=1.0), clip_length=4, clip_stride=1)
    fill_episode(buf, 0, 8)
    fill_episode(buf, 1, 8)
    clips = buf.new_clips()
    buf.set_scores([c.clip_id for c in clips], [1.0 if c.episode == 0 else 0.0 for c in clips], "oracle")
    episodes = buf.sample(2000).obs["state"][:, 0]
    assert (episodes == 0).mean() > 0.99


def test_state_from_an_older_checkpoint_is_reconciled(buf):
    for e in range(4):
        fill_episode(buf, e, 9)
    state = buf.state_dict()
    for e in range(4, 16):  # evicts the checkpoint's episodes, adds new ones
        fill_episode(buf, e, 9)
    buf.load_state_dict(state)
    episodes = set(buf.sample(1024).obs["state"][:, 0].astype(int))
    assert episodes == set(range(4, 16))


@pytest.mark.parametrize("storage", STORAGES)
def test_absorbing_terminal_pays_the_terminal_reward_for_ever(make, storage):
    gamma = 0.5
    buf = make(storage, n_step=2, gamma=gamma, absorbing_terminal=True, aux_reward_scorer="oracle")
    fill_episode(buf, 0, 4)  # rewards 0..3, terminated at t = 3
    fill_episode(buf, 1, 4, terminate=False)  # truncated: bootstraps, nothing absorbed
    start, _ = buf.episode_rows(0)
    buf.set_aux_reward(start + np.arange(4), np.full(4, 0.25), "oracle")  # not part of the absorbed reward
    batch = buf.sample(256)
    ep, t = batch.obs["state"][:, 0].astype(int), batch.obs["state"][:, 1].astype(int)
    for i in range(256):
        k = min(2, 4 - t[i])
        aux = 0.25 if ep[i] == 0 else 0.0
        expected = sum(gamma**j * (t[i] + j + aux) for j in range(k))
        if ep[i] == 0 and t[i] + k == 4:  # the terminal step's reward 3, for ever after it
            expected += gamma**k * 3.0 / (1.0 - gamma)
            assert batch.discount[i] == 0.0
        assert batch.reward[i] == pytest.approx(expected, rel=1e-6)


def test_absorbing_terminal_needs_a_discount_below_one(make):
    with pytest.raises(BufferError, match="gamma must be < 1"):
        make("memory", gamma=1.0, absorbing_terminal=True)
    with pytest.raises(BufferError, match=r"gamma must be in \(0, 1\]"):
        make("memory", gamma=1.5)


@pytest.mark.parametrize("storage", STORAGES)
def test_clone_info_key_marks_its_rows_for_behaviour_cloning_and_must_be_stored(make, storage):
    # the filler's success: the last step of a terminated episode
    buf = make(storage, clone_info_key="success")
    fill_episode(buf, 0, 5)
    fill_episode(buf, 1, 5, terminate=False)
    batch = buf.sample(256)
    assert batch.prior is not None
    ep, t = batch.obs["state"][:, 0].astype(int), batch.obs["state"][:, 1].astype(int)
    np.testing.assert_array_equal(batch.prior, (ep == 0) & (t == 4))
    assert batch.prior.any() and not batch.prior.all()
    plain = make("memory", name="plain.zarr")
    fill_episode(plain, 0, 5)
    assert plain.sample(8).prior is None  # off by default: a uniform buffer has no prior rows
    everything = make("memory", name="all.zarr", clone_all=True)
    fill_episode(everything, 0, 5)
    assert everything.sample(8).prior.all()
    with pytest.raises(BufferError, match="clone_info_key 'intervention' is not a stored info key"):
        make("memory", name="other.zarr", clone_info_key="intervention")
