"""Sweep `vlmrl train`'s replay modes from a script: one run per mode on the twin's reach task.

    python examples/replay_sweep.py           # 5,000 steps per mode, oracle scorer (minutes per mode)
    python examples/replay_sweep.py --tiny    # a smoke run of a few seconds per mode (the tests run it)

Each run is a normal `vlmrl train` run directory (report.md, curves.png, policy.pt); the VLM modes score
clips of the front camera with the oracle scorer (privileged sim progress, not a VLM).
"""

from __future__ import annotations

import argparse
import dataclasses
from pathlib import Path

import vlmrl
from sim.config import SimConfig


def main(argv: list[str] | None = None) -> dict[str, float]:
    """Train once per replay mode; returns {mode: final success rate}."""
    parser = argparse.ArgumentParser(description="Sweep the replay modes of vlmrl train.")
    parser.add_argument("--out", type=Path, default=Path("runs/replay-sweep"), help="parent of the run dirs")
    parser.add_argument("--tiny", action="store_true", help="a smoke-test budget")
    args = parser.parse_args(argv)
    steps = 60 if args.tiny else 5_000
    base = vlmrl.TrainConfig(
        sim=SimConfig(
            task="reach",
            reward="sparse",
            cameras=("front",),
            image_size=32 if args.tiny else 64,
            max_episode_steps=20 if args.tiny else None,
            terminate_on_success=False,
        ),
        total_steps=steps,
        learning_starts=30 if args.tiny else 1_000,
        eval_every_steps=steps,
        eval_episodes=1 if args.tiny else 10,
        video_episodes=0,
        sync_scoring=True,  # every clip scored before the next episode: runs repeat exactly
        progress=False,
    )
    success = {}
    for mode in ("uniform", "per", "vlm", "vlm_td"):
        result = vlmrl.train(dataclasses.replace(base, replay=mode, run_dir=str(args.out / mode)))
        success[mode] = result.metrics["success_rate"]
    for mode, rate in success.items():
        print(f"{mode:<8} final success {rate:.0%}  ({args.out / mode / 'report.md'})")
    return success


if __name__ == "__main__":
    main()
