"""Cost of the robot path: the safety layer per command and the LeRobotEnv step on the twin.

Three figures, each against its reference in the same run:

* ``safety_us``: one ``SafetyLayer.filter`` with the SO-101 forward kinematics (workspace check, random
  proposals, many of them clipped) vs the bare ``np.clip`` to limits (``clip_us``);
* ``env_step_ms``: one ``LeRobotEnv.step`` on ``SimSO101`` (safety, rate keeper without sleeping,
  watchdog bookkeeping, observation conversion, 128 px front camera) vs the same robot driven directly
  through ``send_action`` + ``get_observation`` (``robot_step_ms``): the adapter's overhead;
* ``loop_30hz``: a real-time 30 Hz episode on the twin: overruns and the worst lateness.

    .venv/bin/python benchmarks/robot_loop.py --quick --json runs/bench/robot_loop.json

Figures measured on a loaded 2-core machine are pessimistic.
"""

from __future__ import annotations

import argparse
import json
import tempfile
import time
from pathlib import Path

import numpy as np


def time_per_call(fn, n: int) -> float:
    """Median seconds per call over 5 rounds of n calls."""
    rounds = []
    for _ in range(5):
        start = time.perf_counter()
        for _ in range(n):
            fn()
        rounds.append((time.perf_counter() - start) / n)
    return float(np.median(rounds))


def bench_safety(n: int) -> dict[str, float]:
    from robot.config import SO101_JOINT_KEYS, SafetyConfig
    from robot.safety import SafetyLayer
    from sim.lerobot_twin import home_action
    from sim.so101.kinematics import forward_kinematics

    cfg = SafetyConfig(workspace_min_m=(-0.45, -0.45, 0.03))
    layer = SafetyLayer(cfg, SO101_JOINT_KEYS, forward_kinematics=forward_kinematics)
    layer.reset(home_action())
    lo = np.array([cfg.joint_limits[k][0] for k in SO101_JOINT_KEYS])
    hi = np.array([cfg.joint_limits[k][1] for k in SO101_JOINT_KEYS])
    rng = np.random.default_rng(0)
    proposals = rng.uniform(lo - 20, hi + 20, size=(1024, 6))
    i = iter(range(10**9))

    changed = [0]

    def safe() -> None:
        changed[0] += bool(layer.filter(proposals[next(i) % 1024]).clipped)

    def bare() -> None:
        np.clip(proposals[next(i) % 1024], lo, hi)

    import logging

    logging.getLogger("robot.safety").setLevel(logging.ERROR)  # logging every clip is measured separately
    safety_s, clip_s = time_per_call(safe, n), time_per_call(bare, n)
    clipped = changed[0] / max(layer.steps, 1)
    return {
        "safety_us": safety_s * 1e6,
        "clip_us": clip_s * 1e6,
        "ratio": safety_s / clip_s,
        "clipped_frac": clipped,
    }


def make_twin_env(control_hz: float, sleep: bool, tmp: str):
    from robot.config import ArmConfig, LeRobotEnvConfig, WatchdogConfig
    from robot.lerobot_env import LeRobotEnv
    from sim.lerobot_twin import home_action, make_sim_so101
    from sim.so101.kinematics import forward_kinematics

    robot = make_sim_so101(
        ArmConfig(cameras=("front",), calibration_dir=tmp), image_size=128, control_hz=30.0
    )
    cfg = LeRobotEnvConfig(
        control_hz=control_hz,
        image_size=128,
        home=home_action(),
        reset_settle_steps=0,
        keyboard_estop=False,
        max_episode_steps=10**6,
        watchdog=WatchdogConfig(enabled=sleep),
    )
    kwargs = {} if sleep else {"sleep": lambda s: None}
    return LeRobotEnv(robot, cfg, forward_kinematics=forward_kinematics, **kwargs)


def bench_env(n: int) -> dict[str, float]:
    import logging

    logging.getLogger("robot.safety").setLevel(logging.ERROR)
    with tempfile.TemporaryDirectory() as tmp:
        env = make_twin_env(30.0, sleep=False, tmp=tmp)
        obs, _ = env.reset(seed=0)
        target = obs["state"].copy()
        env_s = time_per_call(lambda: env.step(target), n)
        robot = env.robot
        command = dict(zip(env.action_keys, target.tolist()))

        def direct() -> None:
            robot.send_action(command)
            robot.get_observation()

        robot_s = time_per_call(direct, n)
        env.close()
    return {"env_step_ms": env_s * 1e3, "robot_step_ms": robot_s * 1e3, "ratio": env_s / robot_s}


def bench_loop(steps: int) -> dict[str, float]:
    import logging

    logging.getLogger("robot.safety").setLevel(logging.ERROR)
    with tempfile.TemporaryDirectory() as tmp:
        env = make_twin_env(30.0, sleep=True, tmp=tmp)
        obs, _ = env.reset(seed=0)
        rng = np.random.default_rng(0)
        from robot.errors import RobotError

        start, done = time.perf_counter(), 0
        try:
            for _ in range(steps):
                obs, *_ = env.step(obs["state"] + rng.normal(0, 2, 6).astype(np.float32))
                done += 1
        except RobotError:
            pass  # the watchdog stopped the loop (reported below)
        elapsed = time.perf_counter() - start
        metrics = env.metrics()
        env.close()
    return {
        "steps": done,
        "achieved_hz": done / elapsed,
        "overruns": metrics["overruns"],
        "max_lateness_ms": metrics["max_lateness_s"] * 1e3,
        "stopped": metrics["stopped"] or "",
    }


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--quick", action="store_true", help="short run (fewer calls, a 3 s loop)")
    parser.add_argument("--json", type=Path, default=None, help="write the figures to this JSON file")
    args = parser.parse_args()
    import torch

    torch.set_num_threads(1)
    n = 200 if args.quick else 2000
    figures = {
        "safety": bench_safety(n),
        "env": bench_env(n // 10),
        "loop_30hz": bench_loop(90 if args.quick else 900),
    }
    s, e, loop = figures["safety"], figures["env"], figures["loop_30hz"]
    print(
        f"safety filter with FK: {s['safety_us']:.1f} us vs np.clip {s['clip_us']:.1f} us (ratio {s['ratio']:.1f}x; {s['clipped_frac']:.0%} clipped)"
    )
    print(
        f"LeRobotEnv.step on the twin: {e['env_step_ms']:.2f} ms vs robot API direct {e['robot_step_ms']:.2f} ms (ratio {e['ratio']:.2f}x)"
    )
    print(
        f"30 Hz loop: {loop['achieved_hz']:.1f} Hz achieved, {loop['overruns']} overruns in {loop['steps']} steps, "
        f"worst lateness {loop['max_lateness_ms']:.1f} ms"
        + (f"; watchdog stop: {loop['stopped']}" if loop["stopped"] else "")
    )
    if args.json:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(json.dumps(figures, indent=2) + "\n")


if __name__ == "__main__":
    main()
