"""Train on a twin task of your own: a task class (``sim.so101.tasks``' Task protocol: description,
scripted strategy, reset, goal, evaluate) passed by name, no package edit needed.

    python examples/custom_task.py           # 5,000 steps
    python examples/custom_task.py --tiny    # a smoke run (the tests run it)

The task's description is the one source of its prompt (the oracle scorer here; a VLM in real use), and
its ``scripted_strategy`` lets ``--demo-episodes`` put scripted demonstrations in the buffer.
"""

from __future__ import annotations

import argparse
import dataclasses
from pathlib import Path
from typing import Any

import numpy as np

import vlmrl
from agents.config import SACConfig
from sim.config import SimConfig
from sim.so101.kinematics import inverse_kinematics
from sim.so101.tasks import ReachTask


class LowReachTask(ReachTask):
    """Reach a marker that floats just above the table, in front of the arm."""

    description = "Move the robot gripper down to the small green ball just above the table."
    default_max_steps = 60

    def reset(self, sim: Any, rng: np.random.Generator) -> None:
        super().reset(sim, rng)  # parks the cube and the other markers
        while True:
            target = rng.uniform([0.15, -0.1, 0.03], [0.24, 0.1, 0.06])
            if inverse_kinematics(target, pitch_deg=60.0) is not None:
                break
        self._target = target
        sim.set_marker("target", target)


def main(argv: list[str] | None = None) -> vlmrl.RunResult:
    """Train SAC on ``low_reach`` with scripted demonstrations; returns the run's result."""
    parser = argparse.ArgumentParser(description="Train on a custom twin task.")
    parser.add_argument("--out", type=Path, default=Path("runs/custom-task"), help="run directory")
    parser.add_argument("--tiny", action="store_true", help="a smoke-test budget")
    args = parser.parse_args(argv)
    cfg = vlmrl.TrainConfig(
        sim=SimConfig(task="low_reach", reward="sparse", cameras=("front",), image_size=64),
        replay="vlm",
        demo_episodes=5,
        agent=SACConfig(hidden_dims=(128, 128), layer_norm=True),
        total_steps=5_000,
        run_dir=str(args.out),
        progress=False,
    )
    if args.tiny:
        cfg = dataclasses.replace(
            cfg,
            sim=dataclasses.replace(cfg.sim, image_size=32, max_episode_steps=20),
            agent=SACConfig(hidden_dims=(32, 32), layer_norm=True),
            demo_episodes=1,
            total_steps=40,
            learning_starts=20,
            eval_episodes=1,
            video_episodes=0,
            sync_scoring=True,
        )
    result = vlmrl.train(cfg, tasks={"low_reach": LowReachTask})
    print(f"low_reach: final success {result.metrics['success_rate']:.0%}, policy {result.policy}")
    return result


if __name__ == "__main__":
    main()
