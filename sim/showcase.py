"""A random-policy rollout of a sim env written as a video and a frame strip (``make demo`` before training)."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import numpy as np

from robot.contract import pixel_key
from sim.config import SimConfig
from sim.factory import make_env
from sim.video import write_frame_strip, write_video


def random_rollout_video(
    cfg: SimConfig, out_dir: str | Path, n_steps: int = 60, seed: int = 0
) -> dict[str, Path]:
    """Run uniformly random actions for ``n_steps`` and save what the first camera saw.

    Args:
        cfg: the env; when it has no cameras, the suite's first default camera ("front" for so101) is used.
        out_dir: created if missing.
        n_steps: env steps (episodes are restarted when they end).
        seed: reset and action seed.

    Returns:
        ``{"video": <mp4>, "strip": <png>}``.
    """
    if not cfg.cameras:
        default = {"so101": "front", "robosuite": "agentview", "metaworld": "corner3"}[cfg.suite]
        cfg = dataclasses.replace(cfg, cameras=(default,))
    key = pixel_key(cfg.cameras[0])
    env = make_env(cfg)
    try:
        env.action_space.seed(seed)
        obs, _ = env.reset(seed=seed)
        frames = [obs[key]]
        for _ in range(n_steps):
            obs, _, terminated, truncated, _ = env.step(env.action_space.sample())
            frames.append(obs[key])
            if terminated or truncated:
                obs, _ = env.reset()
    finally:
        env.close()
    out = Path(out_dir)
    array = np.stack(frames)
    fps = min(cfg.control_hz, 30.0)
    return {
        "video": write_video(array, out / f"{cfg.suite}_{cfg.task}_random.mp4", fps=fps),
        "strip": write_frame_strip(array, out / f"{cfg.suite}_{cfg.task}_random_strip.png", n=8),
    }
