"""A trained policy's episodes on an arm or its twin (`deploy`, `evaluate`, `finetune`, the trainer's policy file):
what the policy was trained on (``policy_run_info``, ``describe_run``), the robot config fitted to it
(``fit_to_policy``, ``refuse_privileged``), one episode (``run_policy_episode``) and its safety clips.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import asdict, replace
from typing import Any

import numpy as np

from robot.config import LeRobotEnvConfig
from sim.config import SimConfig
from sim.so101.tasks import TASKS
from vlmrl.deployment.robot_env import RobotConfigT, RobotEnvConfig
from vlmrl.errors import ConfigError
from vlmrl.loop.arm_actions import ActionConverter


def adopt_trained(
    changes: dict[str, Any],
    name: str,
    given: Any,
    default: Any,
    trained: Any,
    source: str,
    trained_as: str,
    option: str,
    owner: str,
) -> None:
    """A setting the policy was trained with, for a robot ``--env`` option: left at its ``default``, the
    option takes the ``trained`` value (``changes[name]``); given as something else, ConfigError naming both
    ("{source} was trained {trained_as}, not {option} {given} (leave it out to use the {owner}'s)")."""
    if given == trained:
        return
    if given != default:
        shown = f"{given:g}" if isinstance(given, float) else str(given)
        raise ConfigError(
            f"{source} was trained {trained_as}, not {option} {shown} (leave it out to use the {owner}'s)"
        )
    changes[name] = trained


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


def fit_to_policy(cfg: RobotConfigT, run: dict[str, Any], reads_pixels: bool, source: str) -> RobotConfigT:
    """``cfg`` with the policy's task, cameras, image size, control rate, episode length and joint-target
    observation (``--env.observe-targets``) where ``cfg`` left them at their defaults; ConfigError naming the
    option when ``cfg`` asks for something else than the policy was trained with (or for a policy no arm can
    run). ``run`` is the policy's run info (``policy_run_info``), ``source`` names the policy in messages."""
    if not run:
        return cfg
    if run.get("suite", "so101") != "so101":
        raise ConfigError(
            f"{source} was trained in {run['suite']!r} ({run.get('task')}); deploy, evaluate on twin units and finetune drive SO-101 arms (--sim.suite so101)"
        )
    mode = run.get("action_mode", "absolute")
    if mode not in ("absolute", "delta", "ee_delta"):
        raise ConfigError(f"{source} outputs {mode!r} actions: an arm takes absolute, delta or ee_delta ones")
    defaults, env_defaults = RobotEnvConfig(), LeRobotEnvConfig()
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
    if run.get("observe_targets") and not cfg.env.observe_targets:  # the policy reads its last commands
        env_changes["observe_targets"] = True
    if cfg.env.max_episode_steps is None:  # a late success must count as it counted in training
        env_changes["max_episode_steps"] = training_episode_steps(run)
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


def training_episode_steps(run: dict[str, Any]) -> int | None:
    """Steps of the policy's training episodes (``policy_run_info``); a file from before they were recorded:
    the task's default (what ``vlmrl train`` used unless ``--sim.max-episode-steps`` was given); None when
    neither is known."""
    if run.get("max_episode_steps"):
        return int(run["max_episode_steps"])
    return task_default_steps(run.get("suite", "so101"), run.get("task"))


def warm_up(policy: Any, calls: int) -> None:
    """Run the policy ``calls`` times on zeros of its observation spec."""
    dummy = {k: np.zeros(shape, dtype) for k, (shape, dtype) in policy.obs_spec.items()}
    for _ in range(calls):
        policy(dummy)


def run_policy_episode(
    env: Any, policy: Any, seed: int, convert: ActionConverter | None, video_key: str | None = None
) -> tuple[dict[str, Any], list[np.ndarray]]:
    """One episode of an exported ``policy`` on a robot env (a ``LeRobotEnv``) from reset seed ``seed``; a
    joint-delta or end-effector policy's actions go through ``convert`` (``action_converter``) into joint
    targets, a non-finite action holds the last safe command.

    Returns:
        ``return``, ``success``, ``steps``, ``policy_non_finite`` (actions held) and ``safety_clips`` (this
        episode's clipped commands by reason), and the ``video_key`` frames (empty without one).
    """
    frames: list[np.ndarray] = []
    clips: Counter[str] = Counter()
    obs, info = env.reset(seed=seed)
    total, steps, held, done = 0.0, 0, 0, False
    while not done:
        if video_key in obs:
            frames.append(obs[video_key])
        action = np.asarray(policy(obs), dtype=np.float32)
        if not np.all(np.isfinite(action)):
            held += 1  # the policy misbehaved: keep the last safe command
            action = np.asarray(list((env.safety.last_command or env.measured).values()), np.float32)
        elif convert is not None:
            action = convert(env, action)
        obs, reward, terminated, truncated, info = env.step(action)
        clips.update(reason.split(":")[0] for reason in info.get("safety", ()))
        total += float(reward)
        steps += 1
        done = terminated or truncated
    if video_key in obs:
        frames.append(obs[video_key])
    result = {
        "return": total,
        "success": bool(info["success"]),
        "steps": steps,
        "policy_non_finite": held,
        "safety_clips": dict(sorted(clips.items())),
    }
    return result, frames


def clip_counts_line(clips: dict[str, int]) -> str:
    """Safety clips as one short phrase: "no safety clips" or "12 safety clips (max_step 9, workspace 3)"."""
    total = sum(clips.values())
    if not total:
        return "no safety clips"
    return f"{total} safety clips ({', '.join(f'{k} {v}' for k, v in sorted(clips.items()))})"


def episode_steps_of(sim: Any) -> int | None:
    """Steps of a sim config's episodes: its ``max_episode_steps``, else the SO-101 task's default (None for
    other suites' defaults)."""
    if sim.max_episode_steps:
        return int(sim.max_episode_steps)
    return task_default_steps(sim.suite, sim.task)


def task_default_steps(suite: str, task: str | None) -> int | None:
    """The default episode length of an SO-101 twin task (None for other suites or unknown tasks)."""
    if suite == "so101" and task in TASKS:
        return int(TASKS[task]().default_max_steps)
    return None


def policy_run_info(sim: Any, policy_obs: str, source: str = "vlmrl train") -> dict[str, Any]:
    """What ``agents.export.export_policy(..., run=...)`` stores for a policy trained in ``sim`` (a SimConfig).

    Plain JSON data: the suite, task, what the policy observes (``policy_obs``, cameras, their calibration
    ids and crop, image size), the control rate, the action mode with its scales, the episode length and
    the domain randomisation it was trained under.
    """
    return {
        "source": source,
        "suite": sim.suite,
        "task": sim.task,
        "policy_obs": policy_obs,
        "cameras": list(sim.cameras),
        "image_size": sim.image_size,
        "camera_calibration": dict(sim.camera_calibration),
        "calibration_robot_id": sim.calibration_robot_id,
        "camera_crop": sim.camera_crop,
        "control_hz": sim.control_hz,
        "action_mode": sim.action_mode,
        "max_delta_deg": sim.max_delta_deg,
        "max_delta_gripper": sim.max_delta_gripper,
        "max_delta_m": getattr(sim, "max_delta_m", SimConfig().max_delta_m),
        "max_windup_deg": getattr(sim, "max_windup_deg", 0.0),
        "observe_targets": bool(getattr(sim, "observe_targets", False)),
        "max_episode_steps": episode_steps_of(sim),
        "randomize": asdict(sim.randomize) if hasattr(sim, "randomize") else None,
    }
