"""Replay diagnostics (issue #35): what a sampler replays against what the buffer holds."""

from __future__ import annotations

import numpy as np
import pytest

from buffer import BufferConfig, make_buffer
from buffer.config import PriorMixSamplerConfig, UniformSamplerConfig, VLMMixSamplerConfig, VLMTDSamplerConfig
from buffer.replay_stats import COLUMNS, NEAR_PROGRESS, episode_values

SPEC = {"state": ((2,), np.float32)}
STEPS = 16
BATCH, WINDOW = 64, 200
CLIP = {"clip_length": 2, "clip_stride": 2}  # a clip's span covers 4 transitions


def episode(rng: np.random.Generator, successful: bool) -> dict[str, np.ndarray]:
    """An episode of STEPS transitions whose progress climbs to 1 (success from step 12 on) or to 0.5."""
    top = 1.0 if successful else 0.5
    progress = np.linspace(0.0, top, STEPS + 1).astype(np.float32)
    success = ((np.arange(STEPS + 1) >= 12) & successful).astype(np.float32)
    return {
        "obs": {"state": rng.normal(size=(STEPS + 1, 2)).astype(np.float32)},
        "action": rng.normal(size=(STEPS, 1)).astype(np.float32),
        "reward": success[1:].copy(),
        "terminated": np.zeros(STEPS, bool),
        "truncated": np.eye(1, STEPS, STEPS - 1, dtype=bool)[0],
        "info": {"success": success, "progress": progress},
    }


def filled(sampler, episodes: int = 60, capacity: int = 10_000, seed: int = 0, every: int = WINDOW):
    """A buffer with ``episodes`` episodes, one in four successful, each clip scored with its progress at
    its last frame (the noise-free oracle)."""
    buffer = make_buffer(
        BufferConfig(capacity_steps=capacity, sampler=sampler, replay_stats_every=every, seed=seed, **CLIP),
        SPEC,
        1,
    )
    rng = np.random.default_rng(seed)
    for i in range(episodes):
        data = episode(rng, successful=i % 4 == 0)
        e = buffer.add_episode(data["obs"], data["action"], data["reward"], data["terminated"], data["truncated"],
                               data["info"])  # fmt: skip
        oracle(buffer, e, data["info"]["progress"])
    return buffer


def oracle(buffer, e: int, progress: np.ndarray) -> None:
    start, end = buffer.episode_rows(e)
    clip_ids = np.arange(start, end - 1, 4)
    last_frame = np.minimum(np.arange(0, STEPS, 4) + 2, STEPS)
    buffer.set_scores(clip_ids, progress[last_frame], "oracle")


def window(buffer, prior_rows: int = 0) -> dict[str, float]:
    for _ in range(WINDOW):
        buffer.sample(BATCH)
    stats = buffer.replay_stats(prior_rows=prior_rows)
    assert stats["replay/batches"] == WINDOW
    return stats


def vlm_mix() -> VLMMixSamplerConfig:
    return VLMMixSamplerConfig(lambda_start=1.0, lambda_end=1.0, score_exponent=3.0)


def test_episode_values_follow_the_clip_rule() -> None:
    data = episode(np.random.default_rng(0), successful=True)
    values = episode_values(data["info"], STEPS, length=2, stride=2)
    progress = data["info"]["progress"]
    assert values.shape == (STEPS, len(COLUMNS))
    assert np.isnan(values[:, 0]).all()  # no score yet
    # transitions 8..11 are covered by the clip starting at 8: frames 8 and 10, span observations 8..12
    np.testing.assert_allclose(values[8:12, 1], progress[10])
    assert (values[8:12, 2] == 1).all() and (values[4:8, 2] == 0).all()  # success at observation 12
    near = progress[12] >= NEAR_PROGRESS
    assert (values[8:12, 3] == near).all() and (values[12:, 3] == 1).all() and (values[:4, 3] == 0).all()
    assert (values[:, 4] == 1).all()
    failed = episode_values(episode(np.random.default_rng(0), False)["info"], STEPS, 2, 2)
    assert (failed[:, 2:] == 0).all()
    assert np.isnan(episode_values({}, STEPS, 2, 2)).all()  # a store without success/progress info


def test_uniform_replay_matches_the_buffer_within_sampling_error() -> None:
    stats = window(filled(UniformSamplerConfig()))
    n = WINDOW * BATCH
    for name in ("clip_success", "near_success", "episode_success"):
        share = stats[f"replay/buffer_{name}"]
        assert abs(stats[f"replay/{name}"] - share) < 4 * np.sqrt(share * (1 - share) / n), name
    for name in ("score", "progress"):  # scores in [0, 1]: standard deviation <= 0.5
        assert abs(stats[f"replay/{name}"] - stats[f"replay/buffer_{name}"]) < 4 * 0.5 / np.sqrt(n), name
    assert stats["replay/buffer_episode_success"] == pytest.approx(0.25)
    # the oracle's score is the progress at the clip's last frame
    assert stats["replay/score"] == pytest.approx(stats["replay/progress"])
    assert stats["replay/score_progress_rank_corr"] == pytest.approx(1.0)
    buffer_age = stats["replay/buffer_age_mean"]
    assert buffer_age == pytest.approx((60 * STEPS - 1) / 2)  # ages 0 .. 959, nothing stored meanwhile
    assert abs(stats["replay/age_mean"] - buffer_age) < 4 * (60 * STEPS / np.sqrt(12)) / np.sqrt(n)
    assert abs(stats["replay/age_median"] - buffer_age) < 0.05 * buffer_age


@pytest.mark.parametrize(
    "sampler", [vlm_mix(), VLMTDSamplerConfig(score_exponent=3.0)], ids=["vlm_mix", "vlm_td"]
)
def test_score_driven_replay_reports_higher_scores_and_success_shares_than_uniform(sampler) -> None:
    uniform, scored = window(filled(UniformSamplerConfig())), window(filled(sampler))
    assert scored["replay/score"] > scored["replay/buffer_score"] + 0.1
    assert scored["replay/score"] > uniform["replay/score"] + 0.1
    for name in ("clip_success", "near_success", "episode_success"):
        assert scored[f"replay/{name}"] > 1.5 * scored[f"replay/buffer_{name}"], name
        assert scored[f"replay/{name}"] > 1.5 * uniform[f"replay/{name}"], name
    assert scored["replay/buffer_episode_success"] == uniform["replay/buffer_episode_success"]


def test_without_scores_or_success_info_those_figures_are_left_out() -> None:
    buffer = make_buffer(BufferConfig(capacity_steps=1_000, replay_stats_every=WINDOW), SPEC, 1, info_keys=())
    data = episode(np.random.default_rng(0), True)
    buffer.add_episode(data["obs"], data["action"], data["reward"], data["terminated"], data["truncated"])
    stats = window(buffer)
    assert not [k for k in stats if any(name in k for name in COLUMNS)]
    assert stats["replay/buffer_age_mean"] == pytest.approx((STEPS - 1) / 2)


def test_new_episodes_during_a_window_and_evictions_keep_buffer_figures_exact() -> None:
    # capacity of 10 episodes: the first 50 are evicted; successes are every fourth episode
    buffer = filled(UniformSamplerConfig(), episodes=60, capacity=10 * (STEPS + 1))
    rng = np.random.default_rng(1)
    for i in range(WINDOW):
        if i == WINDOW // 2:  # a successful episode evicts the oldest (episode 50, failed)
            data = episode(rng, successful=True)
            buffer.add_episode(data["obs"], data["action"], data["reward"], data["terminated"],
                               data["truncated"], data["info"])  # fmt: skip
        buffer.sample(BATCH)
    stats = buffer.replay_stats()
    # live: episodes 50..59 (successes 52, 56) for 100 batches, then 51..60 (52, 56, 60)
    assert stats["replay/buffer_episode_success"] == pytest.approx((0.2 + 0.3) / 2)
    # ages: 160 transitions live, clock 960 then 976
    assert stats["replay/buffer_age_mean"] == pytest.approx(((960 - 1 - 879.5) + (976 - 1 - 895.5)) / 2)


def test_demonstrations_share_of_replay_follows_the_prior_share() -> None:
    sampler = PriorMixSamplerConfig(prior_share=0.5)
    buffer = make_buffer(BufferConfig(capacity_steps=10_000, sampler=sampler, replay_stats_every=WINDOW, **CLIP),
                         SPEC, 1)  # fmt: skip
    rng = np.random.default_rng(0)
    buffer.sampler.mark_prior(True)
    for _ in range(2):
        data = episode(rng, True)
        buffer.add_episode(data["obs"], data["action"], data["reward"], data["terminated"], data["truncated"],
                           data["info"])  # fmt: skip
    buffer.sampler.mark_prior(False)
    prior_rows = buffer.storage.episodes().next_row
    for _ in range(18):
        data = episode(rng, False)
        buffer.add_episode(data["obs"], data["action"], data["reward"], data["terminated"], data["truncated"],
                           data["info"])  # fmt: skip
    stats = window(buffer, prior_rows=prior_rows)
    assert stats["replay/demo_share"] == pytest.approx(0.5)
    assert stats["replay/buffer_demo_share"] == pytest.approx(0.1)
    assert stats["replay/episode_success"] == pytest.approx(0.5)


def test_a_reopened_store_and_a_restored_window_give_the_same_figures(tmp_path) -> None:
    cfg = BufferConfig(
        storage="zarr", capacity_steps=2_000, replay_stats_every=WINDOW, sampler=vlm_mix(), **CLIP
    )
    first = make_buffer(cfg, SPEC, 1, path=str(tmp_path / "store"))
    rng = np.random.default_rng(0)
    for i in range(20):
        data = episode(rng, successful=i % 4 == 0)
        e = first.add_episode(data["obs"], data["action"], data["reward"], data["terminated"], data["truncated"],
                              data["info"])  # fmt: skip
        oracle(first, e, data["info"]["progress"])
    for _ in range(WINDOW // 2):
        first.sample(BATCH)
    state = first.state_dict()
    for _ in range(WINDOW // 2):
        first.sample(BATCH)
    expected = first.replay_stats()
    first.close()
    reopened = make_buffer(cfg, SPEC, 1, path=str(tmp_path / "store"))
    reopened.load_state_dict(state)
    for _ in range(WINDOW // 2):
        reopened.sample(BATCH)
    assert reopened.replay_stats() == expected
    reopened.close()


def test_replay_stats_every_zero_collects_nothing() -> None:
    buffer = filled(UniformSamplerConfig(), episodes=4, every=0)
    for _ in range(WINDOW):
        buffer.sample(BATCH)
    assert buffer.replay_stats() == {}
