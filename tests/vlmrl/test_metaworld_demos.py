"""`vlmrl train --demo-episodes N` on Meta-World (issue #35): Meta-World's scripted policy fills the buffer
with successful demonstrations, episodes end at success, and the sparse success reward reaches the buffer."""

from __future__ import annotations

import pytest

from agents.config import SACConfig
from buffer.config import BufferConfig
from sim.config import SimConfig
from vlmrl.loop.checkpoint import load_checkpoint
from vlmrl.pipelines.train import TrainConfig, main

pytestmark = pytest.mark.slow


def test_meta_world_demonstrations_are_the_scripted_policys_successes(tmp_path, capsys) -> None:
    run = tmp_path / "mw"
    cfg = TrainConfig(
        sim=SimConfig(
            suite="metaworld", task="reach-v3", cameras=(), reward="sparse", terminate_on_success=True,
            max_episode_steps=120,
        ),
        agent=SACConfig(hidden_dims=(8, 8), layer_norm=True),
        buffer=BufferConfig(storage="memory", capacity_steps=2_000, absorbing_terminal=True),
        replay="uniform",
        demo_episodes=2,
        total_steps=40,
        learning_starts=20,
        batch_size=8,
        eval_every_steps=40,
        eval_episodes=1,
        video_episodes=0,
        checkpoint_every_steps=10_000,
        run_dir=str(run),
        progress=False,
    )  # fmt: skip
    assert main(cfg) == 0
    assert "2 demonstration episodes of the scripted expert" in capsys.readouterr().out
    loop = load_checkpoint(run)["loop"]
    assert (loop.demo_episodes_added, loop.demo_successes, loop.demo_attempts) == (2, 2, 2)
    # Reach ends at its first successful step, well inside 120 steps (39-74 steps on seeds 0-4).
    assert 2 <= loop.demo_steps < 2 * 120
    assert loop.demo_rows == loop.demo_steps + 2  # each demonstration's transitions and final observation
