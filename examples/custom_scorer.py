"""Train with your own clip scorer: any object with ``scorer_id``, ``model_id``, ``score(clips, prompt)``
and ``close()`` (the ``vlm.Scorer`` protocol) can judge the clips, no package edit needed.

    python examples/custom_scorer.py           # lift, 20,000 steps with 25 demonstrations
    python examples/custom_scorer.py --tiny    # a smoke run (the tests run it)

The scorer here reads pixels only: it finds the red cube in the first and last frame of a clip and says
"yes" the more the cube rose in the image. Its scores set replay priorities and a shaping aux reward.
"""

from __future__ import annotations

import argparse
import dataclasses
from collections.abc import Sequence
from pathlib import Path

import numpy as np

import vlmrl
from agents.config import SACConfig
from sim.config import SimConfig
from vlm import Clip, as_clip


class RedCubeRiseScorer:
    """P(yes) = sigmoid(gain x how far the red pixels' mean row rose between a clip's first and last frame,
    in image heights); 0.5 when no red pixel is seen. Pure numpy, so safe from several threads."""

    scorer_id = "red-rise"
    model_id = "heuristic"

    def __init__(self, gain: float = 40.0) -> None:
        self.gain = gain

    @staticmethod
    def _red_row(frame: np.ndarray) -> float | None:
        rgb = frame.astype(np.int16)
        red = (rgb[..., 0] > 120) & (rgb[..., 0] > rgb[..., 1] + 60) & (rgb[..., 0] > rgb[..., 2] + 60)
        rows = np.nonzero(red)[0]
        return float(rows.mean()) / frame.shape[0] if rows.size else None

    def score(self, clips: Sequence[Clip | np.ndarray], prompt: str) -> np.ndarray:
        out = np.full(len(clips), 0.5, np.float32)
        for i, clip in enumerate(clips):
            frames = as_clip(clip).frames
            first, last = self._red_row(frames[0]), self._red_row(frames[-1])
            if first is not None and last is not None:  # rows grow downwards: a rise is first - last > 0
                out[i] = 1.0 / (1.0 + np.exp(-self.gain * (first - last)))
        return out

    def close(self) -> None:
        pass


def main(argv: list[str] | None = None) -> vlmrl.RunResult:
    """Train lift with the red-cube scorer; returns the run's result."""
    parser = argparse.ArgumentParser(description="Train with a custom clip scorer.")
    parser.add_argument("--out", type=Path, default=Path("runs/custom-scorer"), help="run directory")
    parser.add_argument("--tiny", action="store_true", help="a smoke-test budget")
    args = parser.parse_args(argv)
    cfg = vlmrl.TrainConfig(demo=not args.tiny, run_dir=str(args.out), aux_reward_weight=0.5, progress=False)
    if args.tiny:
        cfg = dataclasses.replace(
            cfg,
            sim=SimConfig(task="lift", cameras=("front",), image_size=32, max_episode_steps=20),
            agent=SACConfig(hidden_dims=(32, 32)),
            total_steps=60,
            learning_starts=30,
            eval_episodes=1,
            video_episodes=0,
            sync_scoring=True,
        )
    result = vlmrl.train(cfg, scorer=RedCubeRiseScorer())
    print(f"red-rise scorer: final success {result.metrics['success_rate']:.0%}, policy {result.policy}")
    return result


if __name__ == "__main__":
    main()
