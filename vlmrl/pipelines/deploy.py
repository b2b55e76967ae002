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
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path
from typing import Any, Literal

import numpy as np

from robot.config import ArmConfig, LeRobotEnvConfig
from vlmrl.errors import ConfigError

logger = logging.getLogger("vlmrl.deploy")

SO10X_TYPES = ("sim_so101", "so101_follower", "so100_follower")
"""Robot types with the SO-101 kinematics (the safety layer's workspace check uses its FK)."""


@dataclass(frozen=True, kw_only=True)
class RobotEnvConfig:
    """The robot and the loop around it, shared by deploy, record and finetune."""

    robot: ArmConfig = field(default_factory=ArmConfig)
    """Which arm: ``--robot.type sim_so101`` (the twin) or a LeRobot type with ``--robot.port``."""
    env: LeRobotEnvConfig = field(default_factory=LeRobotEnvConfig)
    """Control rate, episode length, image size, safety limits, watchdog, stop mode."""
    task: Literal["reach", "lift", "push", "place"] = "lift"
    """SO-101 task: the twin places its objects for it; its sentence is the task description."""
    start_pose: Literal["sim_home", "env_home"] = "sim_home"
    """Reset pose: the twin's episode start pose (what sim-trained policies saw), or ``env.home``."""
    twin_control_hz: float | None = None
    """Physics time the twin advances per step (None: ``env.control_hz``)."""


def make_robot_env(cfg: RobotEnvConfig, out_dir: Path) -> Any:
    """Build the LeRobot robot (the twin or a real arm) and wrap it in a `LeRobotEnv`.

    Raises:
        RobotError: a bad robot config (unknown type, missing port...).
    """
    from robot.lerobot_env import LeRobotEnv
    from robot.lerobot_robot import make_robot
    from sim.lerobot_twin import home_action, make_sim_so101
    from sim.so101.kinematics import forward_kinematics
    from sim.so101.tasks import TASKS

    env_cfg = cfg.env
    if cfg.task and env_cfg.task_description == LeRobotEnvConfig().task_description:
        env_cfg = replace(env_cfg, task_description=str(TASKS[cfg.task]().description))
    if cfg.start_pose == "sim_home":
        env_cfg = replace(env_cfg, home=home_action())
    twin_hz = cfg.twin_control_hz or env_cfg.control_hz
    image_size = env_cfg.image_size or 128

    def twin(arm: ArmConfig) -> Any:
        return make_sim_so101(arm, image_size=image_size, control_hz=twin_hz, task=cfg.task)

    robot = make_robot(cfg.robot, {"sim_so101": twin})
    fk = forward_kinematics if cfg.robot.type in SO10X_TYPES else None
    out_dir.mkdir(parents=True, exist_ok=True)
    return LeRobotEnv(robot, env_cfg, forward_kinematics=fk, clip_log=str(out_dir / "safety.jsonl"))


def check_policy_fits(policy_obs: dict[str, tuple[tuple[int, ...], np.dtype]], env: Any, source: str) -> None:
    """Raise ConfigError unless the env provides every observation the policy reads, same shape and dtype."""
    from robot.contract import env_spec

    spec = env_spec(env)
    for key, (shape, dtype) in policy_obs.items():
        if key not in spec.obs:
            raise ConfigError(
                f"{source} reads observation {key!r}, which the robot env does not provide "
                f"(it provides {sorted(spec.obs)}); train on keys a robot has (joint keys, pixels/<camera>)"
            )
        have = spec.obs[key]
        if tuple(have.shape) != tuple(shape) or np.dtype(have.dtype) != np.dtype(dtype):
            raise ConfigError(
                f"{source} reads {key!r} as {np.dtype(dtype)}{list(shape)} but the robot env gives "
                f"{have.dtype}{list(have.shape)} (check --env.image-size and the cameras)"
            )


def write_config(cfg: Any, out_dir: Path) -> None:
    """Write the resolved config as ``out_dir/config.json``."""
    out_dir.mkdir(parents=True, exist_ok=True)
    (out_dir / "config.json").write_text(json.dumps(asdict(cfg), indent=2, default=str) + "\n")


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
