"""Run an exported policy on a robot at a fixed rate through the safety layer.

The MuJoCo twin and a real arm take the same code path (``LeRobotEnv`` around a LeRobot ``Robot``):

    vlmrl deploy --policy runs/train/policy.pt                                   # the twin (sim_so101)
    vlmrl deploy --policy runs/train/policy.pt --robot.type so101_follower --robot.port /dev/ttyACM0

Writes ``config.json``, ``metrics.json`` (per episode: return, success, steps, safety clips, overruns),
``safety.jsonl`` (every clipped command) and one video per episode into ``out_dir``.
"""

from __future__ import annotations

import json
import logging
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from vlmrl.errors import ConfigError
from vlmrl.pipelines.common import RobotEnvConfig, check_policy_fits, make_robot_env, write_config

logger = logging.getLogger("vlmrl.deploy")


@dataclass(frozen=True, kw_only=True)
class Config(RobotEnvConfig):
    """vlmrl deploy: run an exported policy at a fixed rate through the safety layer."""

    policy: Path
    """policy.pt written by ``agents.export.export_policy`` (``vlmrl train`` puts one in its run dir)."""
    episodes: int = 1
    """Episodes to run."""
    seed: int = 0
    """Seed of the first episode (the twin places its objects from it)."""
    out_dir: Path = Path("runs/deploy")
    """Where config, metrics, the safety log and videos go."""
    video_camera: str | None = "front"
    """Camera recorded to ``episode_<i>.mp4`` (None: no video)."""
    torch_threads: int = 1
    """Torch threads for policy inference (more threads than free cores make the loop late)."""
    warmup_calls: int = 3
    """Policy calls on a dummy observation before the loop: TorchScript optimises during its first calls
    (100+ ms), which would overrun the first control periods."""


def warm_up(policy: Any, calls: int) -> None:
    """Run the policy ``calls`` times on zeros of its observation spec."""
    dummy = {k: np.zeros(shape, dtype) for k, (shape, dtype) in policy.obs_spec.items()}
    for _ in range(calls):
        policy(dummy)


def main(cfg: Config) -> int:
    """Run ``cfg.episodes`` episodes of the policy; returns 0 (errors raise the package error types)."""
    from agents.export import load_policy
    from robot.signals import interrupt_on_signals
    from sim.video import write_video

    if cfg.episodes < 1:
        raise ConfigError(f"--episodes {cfg.episodes}: expected at least 1")
    if not cfg.policy.is_file():
        raise ConfigError(f"--policy {cfg.policy}: no such file")
    import torch

    torch.set_num_threads(cfg.torch_threads)
    policy = load_policy(cfg.policy)
    warm_up(policy, cfg.warmup_calls)
    write_config(cfg, cfg.out_dir)
    env = make_robot_env(cfg, cfg.out_dir)
    results: list[dict[str, Any]] = []
    with interrupt_on_signals(), env:
        check_policy_fits(policy.obs_spec, env, f"policy {cfg.policy}")
        if policy.action_low.shape != env.action_space.shape:
            raise ConfigError(
                f"policy {cfg.policy} outputs {policy.action_low.shape[0]} actions; the robot takes "
                f"{env.action_space.shape[0]} ({list(env.action_keys)})"
            )
        for episode in range(cfg.episodes):
            frames: list[np.ndarray] = []
            obs, info = env.reset(seed=cfg.seed + episode)
            key = f"pixels/{cfg.video_camera}"
            total, steps, held, done = 0.0, 0, 0, False
            while not done:
                if key in obs:
                    frames.append(obs[key])
                action = np.asarray(policy(obs), dtype=np.float32)
                if not np.all(np.isfinite(action)):
                    held += 1  # the policy misbehaved: keep the last safe command
                    action = np.asarray(list((env.safety.last_command or env.measured).values()), np.float32)
                obs, reward, terminated, truncated, info = env.step(action)
                total += float(reward)
                steps += 1
                done = terminated or truncated
            if key in obs:
                frames.append(obs[key])
            video = None
            if frames:
                video = str(
                    write_video(frames, cfg.out_dir / f"episode_{episode}.mp4", fps=cfg.env.control_hz)
                )
            results.append(
                {
                    "episode": episode,
                    "return": total,
                    "success": bool(info["success"]),
                    "steps": steps,
                    "policy_non_finite": held,
                    "video": video,
                }
            )
            logger.info("episode %d: return %.2f success %s steps %d", episode, total, info["success"], steps)
        metrics = {"episodes": results, "loop": env.metrics()}
    (cfg.out_dir / "metrics.json").write_text(json.dumps(metrics, indent=2, default=str) + "\n")
    print(
        f"deploy: {len(results)} episode(s), success {sum(r['success'] for r in results)}/{len(results)}, "
        f"overruns {metrics['loop']['overruns']}, safety clips {metrics['loop']['safety_clips']} -> {cfg.out_dir}"
    )
    return 0
