"""``EnvEpisodes``: demonstrations that end a few steps after the expert's first success (`vlmrl train
--demo-steps-after-success`)."""

from __future__ import annotations

import pytest

from sim import make_env
from sim.config import SimConfig
from sim.so101.scripted import ScriptedPolicy
from vlmrl.errors import ConfigError
from vlmrl.loop.sources import EnvEpisodes, StagedSteps
from vlmrl.online.config import TrainConfig, check_config


def _episode(steps_after_success: int | None) -> tuple[list[tuple], dict[str, float]]:
    env = make_env(SimConfig(task="push", cameras=(), reward="sparse", terminate_on_success=False))
    expert = ScriptedPolicy(env)
    staged = StagedSteps()
    episodes = EnvEpisodes(env, staged, ["state"], seed_base=1000, steps_after_success=steps_after_success)
    try:
        stats = episodes.collect(0, expert.act, after_step=lambda: None)
    finally:
        env.close()
    return list(staged.steps), stats


def test_a_demonstration_ends_truncated_a_set_number_of_steps_after_its_first_success() -> None:
    full, full_stats = _episode(None)
    successes = [step[5]["success"] for step in full]
    first = successes.index(True)
    assert full_stats["length"] == 100 == len(full)  # to the time limit: the expert holds the push there
    short, stats = _episode(3)
    assert len(short) == first + 1 + 3 == stats["length"]
    assert stats["success"] == 1.0
    *_, (_, _, _, terminated, truncated, _, _) = short
    assert truncated and not terminated  # the learner bootstraps at the cut: the task goes on holding
    assert not any(step[4] for step in short[:-1])
    zero, _ = _episode(0)
    assert len(zero) == first + 1  # 0: at the first success step itself


def test_a_negative_count_other_than_minus_one_is_refused() -> None:
    check_config(TrainConfig(demo_steps_after_success=-1))
    with pytest.raises(
        ConfigError, match=r"demo_steps_after_success must be >= -1, got -2 \(--demo-steps-after-success\)"
    ):
        check_config(TrainConfig(demo_steps_after_success=-2))
