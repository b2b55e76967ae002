"""Bad sim configs fail fast with one clear SimError line naming what was wrong."""

from __future__ import annotations

import pytest

from sim import SimConfig, make_env
from sim.errors import SimError


@pytest.mark.parametrize(
    ("cfg", "message"),
    [
        (SimConfig(task="fly"), "unknown so101 task 'fly'"),
        (SimConfig(suite="bullet"), "unknown sim suite 'bullet'"),  # type: ignore[arg-type]
        (SimConfig(cameras=("top",)), "unknown so101 camera 'top'"),
        (SimConfig(image_size=0), "image_size must be a positive integer, got 0"),
        (SimConfig(image_size=-64), "image_size must be a positive integer, got -64"),
        (SimConfig(cameras=("front", "front")), "cameras must not repeat"),
        (SimConfig(cameras="front"), "cameras must be a tuple"),  # type: ignore[arg-type]
        (SimConfig(reward="dense"), "reward must be 'sparse' or 'shaped'"),  # type: ignore[arg-type]
        (SimConfig(action_mode="velocity"), "action_mode must be"),  # type: ignore[arg-type]
        (SimConfig(control_hz=0.0), "control_hz must be positive"),
        (SimConfig(max_episode_steps=0), "max_episode_steps must be positive"),
        (SimConfig(suite="robosuite", task="Fly"), "unknown robosuite task 'Fly'"),
        (SimConfig(suite="robosuite", task="Lift", cameras=("front",)), "unknown robosuite camera 'front'"),
        (SimConfig(suite="metaworld", task="fly-v3"), "unknown metaworld task 'fly-v3'"),
    ],
)
def test_bad_config_raises_one_clear_line(cfg: SimConfig, message: str) -> None:
    with pytest.raises(SimError) as error:
        make_env(cfg)
    assert message in str(error.value)
    assert "\n" not in str(error.value)


@pytest.mark.parametrize("action", [[0.0] * 5, [float("nan")] * 6, [[0.0] * 6]])
def test_bad_actions_are_refused(action: list) -> None:
    env = make_env(SimConfig(task="reach", cameras=()))
    env.reset(seed=0)
    with pytest.raises(SimError, match="action must"):
        env.step(action)
    env.close()
