"""Run an exported policy on a robot at a fixed rate through the safety layer.

The MuJoCo twin and a real arm take the same code path (``LeRobotEnv`` around a LeRobot ``Robot``):

    vlmrl deploy --policy runs/train/policy.pt                                   # the twin (sim_so101)
    vlmrl deploy --policy runs/train/policy.pt --robot.type so101_follower --robot.port /dev/ttyACM0
    vlmrl deploy --policy runs/train/policy.pt --robot.unit b --episodes 20       # a hardware-like twin unit

Writes ``config.json``, ``metrics.json`` (per episode: return, success, steps, safety clips by reason; the
loop's overruns and clips; the twin's unit), ``safety.jsonl`` (every clipped command) and one video per
episode into ``out_dir``, and prints one line per episode. ``--robot.unit`` (the twin only) runs the policy
on one of the twin's hardware-like units (``sim.units``: latency, backlash, dead band, joint zero offsets,
camera, light, friction, mass), a stand-in for an arm the policy never saw.

A policy file written by ``vlmrl train`` records how it was trained (``policy_run_info``: task, cameras
and their calibration ids, image size, control rate, action mode). Deploy takes each of those it was not
given (options left at their defaults) from the file, episodes as long as its training episodes among
them, and refuses a policy that cannot run as asked, with the reason: one that reads the simulator's
privileged ``state``, another task, another image size or control rate. Joint-delta policies
(``--sim.action-mode delta``) run through ``LeRobotEnv.delta_targets``; end-effector policies (``ee_delta``)
through the twin's closed-form kinematics on the measured joints
(``vlmrl.loop.arm_actions.EndEffectorDeltas``).
"""

from __future__ import annotations

import json
import logging
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from robot.signals import interrupt_on_signals
from sim.video import write_video
from vlmrl.deployment.policy_episodes import (
    clip_counts_line,
    describe_run,
    refuse_privileged,
    run_policy_episode,
    warm_up,
)
from vlmrl.deployment.policy_episodes import fit_to_policy as common_fit_to_policy
from vlmrl.deployment.robot_env import RobotEnvConfig, check_policy_fits, make_robot_env
from vlmrl.errors import ConfigError
from vlmrl.loop.arm_actions import action_converter, policy_action_size
from vlmrl.run_dir import NewPaths, write_config

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


def fit_to_policy(cfg: Config, run: dict[str, Any], reads_pixels: bool) -> Config:
    """``cfg`` fitted to the policy it runs (``vlmrl.deployment.policy_episodes.fit_to_policy``)."""
    return common_fit_to_policy(cfg, run, reads_pixels, f"policy {cfg.policy}")


def main(cfg: Config) -> int:
    """Run ``cfg.episodes`` episodes of the policy; returns 0 (errors raise the package error types)."""
    from agents.export import load_policy

    if cfg.episodes < 1:
        raise ConfigError(f"--episodes {cfg.episodes}: expected at least 1")
    if not cfg.policy.is_file():
        raise ConfigError(f"--policy {cfg.policy}: no such file")
    import torch

    torch.set_num_threads(cfg.torch_threads)
    policy = load_policy(cfg.policy)
    refuse_privileged(policy.obs_spec, policy.run, f"policy {cfg.policy}")
    cfg = fit_to_policy(cfg, policy.run, any(k.startswith("pixels/") for k in policy.obs_spec))
    print(f"deploy: {describe_run(policy.run)}")
    convert = action_converter(policy.run)
    warm_up(policy, cfg.warmup_calls)
    new = NewPaths(cfg.out_dir, ["safety.jsonl"])  # a failed check leaves the last run's files as they were
    with new.removed_on_failure():
        env = make_robot_env(cfg, cfg.out_dir, warn_clips=False)  # each episode's line counts them
    results: list[dict[str, Any]] = []
    with interrupt_on_signals(), env:
        with new.removed_on_failure():
            check_policy_fits(policy.obs_spec, env, f"policy {cfg.policy}")
            wanted = policy_action_size(policy.run, env.action_space.shape[0])
            if policy.action_low.shape != (wanted,):
                raise ConfigError(
                    f"policy {cfg.policy} outputs {policy.action_low.shape[0]} actions; the robot takes "
                    f"{env.action_space.shape[0]} ({list(env.action_keys)})"
                    + (
                        f", as {wanted} {policy.run['action_mode']} values"
                        if wanted != env.action_space.shape[0]
                        else ""
                    )
                )
        write_config(cfg, cfg.out_dir)
        for episode in range(cfg.episodes):
            key = f"pixels/{cfg.video_camera}"
            result, frames = run_policy_episode(env, policy, cfg.seed + episode, convert, key)
            video = None
            if frames:
                video = str(
                    write_video(frames, cfg.out_dir / f"episode_{episode}.mp4", fps=cfg.env.control_hz)
                )
            results.append({"episode": episode, **result, "video": video})
            print(
                f"deploy: episode {episode}: {'success' if result['success'] else 'failure'}, return "
                f"{result['return']:.2f}, {result['steps']} steps, {clip_counts_line(result['safety_clips'])}"
            )
        metrics = {"episodes": results, "loop": env.metrics(), "unit": cfg.robot.unit}
    (cfg.out_dir / "metrics.json").write_text(json.dumps(metrics, indent=2, default=str) + "\n")
    loop = metrics["loop"]
    print(
        f"deploy: {len(results)} episode(s), success {sum(r['success'] for r in results)}/{len(results)}, "
        f"{loop['overruns']} of {loop['ticks']} control periods overran {cfg.env.control_hz:g} Hz, "
        f"safety clips {loop['safety_clips']} -> {cfg.out_dir}"
    )
    return 0
