"""The learning test: SAC through the real `vlmrl train` pipeline reaches >= 90% success on the twin's
reach task (shaped reward, state observations) for two seeds, within a small CPU budget."""

from __future__ import annotations

from pathlib import Path

import pytest

from agents.config import SACConfig
from buffer.config import BufferConfig
from sim.config import SimConfig
from vlmrl.loop.checkpoint import load_checkpoint
from vlmrl.pipelines.train import TrainConfig, main


def reach_config(run_dir: Path, seed: int) -> TrainConfig:
    return TrainConfig(
        sim=SimConfig(task="reach", reward="shaped", action_mode="delta", cameras=()),
        # Small nets suit a 23-d state and 6-d action; a low initial temperature suits rewards of size ~1.
        agent=SACConfig(hidden_dims=(64, 64), actor_lr=1e-3, critic_lr=1e-3, init_alpha=0.05),
        buffer=BufferConfig(capacity_steps=5_000, gamma=0.9),
        replay="uniform",
        total_steps=2_500,
        learning_starts=500,
        batch_size=128,
        eval_every_steps=2_500,
        eval_episodes=20,
        video_episodes=0,
        checkpoint_every_steps=10**9,
        seed=seed,
        run_dir=str(run_dir),
        progress=False,
    )


@pytest.mark.slow
@pytest.mark.parametrize("seed", [0, 1])
def test_sac_learns_twin_reach(tmp_path: Path, seed: int) -> None:
    assert main(reach_config(tmp_path / f"reach-{seed}", seed)) == 0
    evals = load_checkpoint(tmp_path / f"reach-{seed}")["loop"].evals
    assert evals[-1]["step"] >= 2_500
    assert evals[-1]["success_rate"] >= 0.9, evals
