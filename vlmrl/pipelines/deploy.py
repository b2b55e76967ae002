"""Run an exported policy on a robot at a fixed rate through the safety layer.

The MuJoCo twin and a real arm take the same code path (``LeRobotEnv`` around a LeRobot ``Robot``):

    vlmrl deploy --policy runs/train/policy.pt                                   # the twin (sim_so101)
    vlmrl deploy --policy runs/train/policy.pt --robot.type so101_follower --robot.port /dev/ttyACM0

Writes ``config.json``, ``metrics.json`` (per episode: return, success, steps, safety clips, overruns),
``safety.jsonl`` (every clipped command) and one video per episode into ``out_dir``.

A policy file written by ``vlmrl train`` records how it was trained (``policy_run_info``: task, cameras
and their calibration ids, image size, control rate, action mode). Deploy takes each of those it was not
given (options left at their defaults) from the file and refuses a policy that cannot run as asked, with
the reason: one that reads the simulator's privileged ``state``, another task, another image size or
control rate, end-effector actions. Joint-delta policies (``--sim.action-mode delta``) run through
``LeRobotEnv.delta_targets``.
"""

from __future__ import annotations

import json
import logging
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import numpy as np

from robot.config import LeRobotEnvConfig
from sim.config import joint_delta_scale
from vlmrl.errors import ConfigError
from vlmrl.pipelines.common import (
    RobotEnvConfig,
    adopt_trained,
    check_policy_fits,
    make_robot_env,
    write_config,
)
from vlmrl.run_dir import NewPaths

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


PRIVILEGED_KEYS = ("state",)
"""Observation keys only a simulator has (``state`` holds object poses): no robot provides them."""


def refuse_privileged(obs_spec: dict[str, Any], run: dict[str, Any], source: str) -> None:
    """ConfigError when the policy reads observations only a simulator has."""
    privileged = [k for k in PRIVILEGED_KEYS if k in obs_spec]
    if privileged:
        trained = f" (trained with --policy-obs {run['policy_obs']})" if run.get("policy_obs") else ""
        raise ConfigError(
            f"{source} reads the simulator's privileged {privileged[0]!r} vector (object poses){trained}, which "
            "no robot provides: train it with --policy-obs robot (joint keys and cameras) to deploy it"
        )


def fit_to_policy(cfg: Config, run: dict[str, Any], reads_pixels: bool) -> Config:
    """``cfg`` with the policy's task, cameras, image size and control rate where ``cfg`` left them at their
    defaults; ConfigError naming the option when ``cfg`` asks for something else than the policy was
    trained with (or for a policy deploy cannot run at all)."""
    source = f"policy {cfg.policy}"
    if not run:
        return cfg
    if run.get("suite", "so101") != "so101":
        raise ConfigError(
            f"{source} was trained in {run['suite']!r} ({run.get('task')}); deploy drives SO-101 arms (--sim.suite so101)"
        )
    mode = run.get("action_mode", "absolute")
    if mode not in ("absolute", "delta"):
        raise ConfigError(
            f"{source} outputs {mode!r} actions (tool-centre-point moves), which deploy cannot send to an arm yet: "
            "train with --sim.action-mode absolute or delta"
        )
    defaults, env_defaults = Config(policy=cfg.policy), LeRobotEnvConfig()
    changes: dict[str, Any] = {}
    env_changes: dict[str, Any] = {}
    task = run.get("task")
    if task is not None and cfg.task != task:
        if cfg.task != defaults.task:
            raise ConfigError(
                f"{source} was trained on task {task!r}, not --task {cfg.task!r} (leave --task out to use the policy's)"
            )
        changes["task"] = task
    cameras = tuple(run.get("cameras", ()))
    if reads_pixels and cfg.robot.cameras == defaults.robot.cameras and cfg.robot.cameras != cameras:
        changes["robot"] = replace(cfg.robot, cameras=cameras)
    size = run.get("image_size")
    if reads_pixels and size is not None:
        adopt_trained(env_changes, "image_size", cfg.env.image_size, env_defaults.image_size, size, source,
                      f"on {size} px frames", "--env.image-size", "policy")  # fmt: skip
    calibration = dict(run.get("camera_calibration") or {})
    if reads_pixels and calibration:
        given = cfg.env.camera_calibration
        wrong = {k: v for k, v in given.items() if k in calibration and calibration[k] != v}
        if wrong:
            raise ConfigError(
                f"{source} was trained through camera calibration {calibration}, not --env.camera-calibration "
                f"{given}: its frames would look different"
            )
        if not given and cfg.robot.type != "sim_so101":  # the twin renders its own cameras
            env_changes["camera_calibration"] = calibration
    hz = run.get("control_hz")
    if hz is not None:
        twin = cfg.robot.type == "sim_so101" and cfg.twin_control_hz is not None
        effective = cfg.twin_control_hz if twin else cfg.env.control_hz
        if effective != hz:
            if twin or cfg.env.control_hz != env_defaults.control_hz:
                option = "--twin-control-hz" if twin else "--env.control-hz"
                raise ConfigError(
                    f"{source} acts at {hz:g} Hz (trained with --sim.control-hz {hz:g}), not {option} {effective:g}: "
                    "each action would move the arm for another time (leave it out to use the policy's)"
                )
            env_changes["control_hz"] = float(hz)
    # The dynamics the policy learned: its own anti-windup bound. A policy file from before the bound was
    # recorded says nothing: unbounded, unless --env.max-windup-deg is given.
    windup = float(run.get("max_windup_deg", cfg.env.max_windup_deg)) if mode == "delta" else 0.0
    adopt_trained(env_changes, "max_windup_deg", cfg.env.max_windup_deg, env_defaults.max_windup_deg, windup,
                  source, f"with --sim.max-windup-deg {windup:g}", "--env.max-windup-deg", "policy")  # fmt: skip
    if env_changes:
        changes["env"] = replace(cfg.env, **env_changes)
    return replace(cfg, **changes) if changes else cfg


def describe_run(run: dict[str, Any]) -> str:
    """One line of how a policy was trained, for the terminal."""
    if not run:
        return "policy file without training settings (written before they were recorded): deploy's options apply"
    cameras = ", ".join(run.get("cameras", ())) or "no cameras"
    return (
        f"policy trained by {run.get('source', '?')} on {run.get('suite')} {run.get('task')!r}: observes "
        f"{run.get('policy_obs')} ({cameras}, {run.get('image_size')} px), {run.get('action_mode')} actions at "
        f"{run.get('control_hz'):g} Hz"
    )


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
    refuse_privileged(policy.obs_spec, policy.run, f"policy {cfg.policy}")
    cfg = fit_to_policy(cfg, policy.run, any(k.startswith("pixels/") for k in policy.obs_spec))
    print(f"deploy: {describe_run(policy.run)}")
    delta_scale = None
    if policy.run.get("action_mode") == "delta":
        delta_scale = joint_delta_scale(policy.run["max_delta_deg"], policy.run["max_delta_gripper"])
    warm_up(policy, cfg.warmup_calls)
    new = NewPaths(cfg.out_dir, ["safety.jsonl"])  # a failed check leaves the last run's files as they were
    with new.removed_on_failure():
        env = make_robot_env(cfg, cfg.out_dir)
    results: list[dict[str, Any]] = []
    with interrupt_on_signals(), env:
        with new.removed_on_failure():
            check_policy_fits(policy.obs_spec, env, f"policy {cfg.policy}")
            if policy.action_low.shape != env.action_space.shape:
                raise ConfigError(
                    f"policy {cfg.policy} outputs {policy.action_low.shape[0]} actions; the robot takes "
                    f"{env.action_space.shape[0]} ({list(env.action_keys)})"
                )
        write_config(cfg, cfg.out_dir)
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
                elif delta_scale is not None:
                    action = env.delta_targets(action, delta_scale)
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
