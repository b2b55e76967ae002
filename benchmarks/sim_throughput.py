"""Env steps per second: the SO-101 twin `lift` vs robosuite `Lift` (Panda), one 128 px camera each.

Same settings for both: 20 Hz control, one 128x128 camera rendered every step, shadows off, uniformly
random actions, one process, one run. Target: ratio >= 20.

Also the twin under domain randomisation (``--sim.randomize.preset``, ``strong`` by default: every factor
on, a new draw each episode) against the nominal twin, the two timed in alternating blocks (a load change
on a shared machine hits both). Target: randomized_ratio >= 0.7.

    .venv/bin/python benchmarks/sim_throughput.py --quick --json runs/bench/sim_throughput.json
"""

from __future__ import annotations

import argparse
import json
import os
import time
from dataclasses import replace
from pathlib import Path

os.environ.setdefault("MUJOCO_GL", "egl")
os.environ.setdefault("PYOPENGL_PLATFORM", os.environ["MUJOCO_GL"])

from rich.progress import track

from sim import SimConfig, make_env
from sim.config import RandomizeConfig


def steps_per_second(cfg: SimConfig, n_steps: int, label: str) -> float:
    """Time ``n_steps`` random steps (after one warm-up reset and step), resetting when episodes end."""
    env = make_env(cfg)
    try:
        env.action_space.seed(0)
        env.reset(seed=0)
        env.step(env.action_space.sample())
        start = time.perf_counter()
        for _ in track(range(n_steps), description=label, transient=True):
            _, _, terminated, truncated, _ = env.step(env.action_space.sample())
            if terminated or truncated:
                env.reset()
        return n_steps / (time.perf_counter() - start)
    finally:
        env.close()


def paired_steps_per_second(
    a: SimConfig, b: SimConfig, n_steps: int, rounds: int = 16
) -> tuple[list[float], list[float]]:
    """Steps/s of two envs timed in alternating blocks of ``n_steps / rounds`` steps each, so that a load
    change on a shared machine hits both alike (their ratio is what is compared).

    Returns:
        Wall-clock steps/s of (a, b), and steps per CPU second of this process (renderer threads
        included) of (a, b): the second is what the steps cost when other processes share the cores.
    """
    envs = [make_env(a), make_env(b)]
    elapsed, cpu = [0.0, 0.0], [0.0, 0.0]
    block = max(1, n_steps // rounds)
    try:
        for env in envs:
            env.action_space.seed(0)
            env.reset(seed=0)
            env.step(env.action_space.sample())
        for r in track(range(rounds), description="nominal vs randomised twin", transient=True):
            for i in (0, 1) if r % 2 == 0 else (1, 0):  # ABBA: neither env always runs first
                env = envs[i]
                start, start_cpu = time.perf_counter(), time.process_time()
                for _ in range(block):
                    _, _, terminated, truncated, _ = env.step(env.action_space.sample())
                    if terminated or truncated:
                        env.reset()
                elapsed[i] += time.perf_counter() - start
                cpu[i] += time.process_time() - start_cpu
        n = block * rounds
        return [n / t for t in elapsed], [n / t for t in cpu]
    finally:
        for env in envs:
            env.close()


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--quick", action="store_true", help="short run (fewer steps)")
    parser.add_argument("--json", type=Path, default=None, help="write the figures to this JSON file")
    parser.add_argument("--image-size", type=int, default=128)
    parser.add_argument("--randomize-preset", default="strong", help="preset of the randomised twin")
    args = parser.parse_args()
    load_before = os.getloadavg()[0]
    twin_steps, robosuite_steps = (300, 40) if args.quick else (2000, 200)
    common = {"image_size": args.image_size, "control_hz": 20.0, "shadows": False}
    twin = steps_per_second(
        SimConfig(suite="so101", task="lift", cameras=("front",), **common), twin_steps, "so101 lift"
    )
    reference = steps_per_second(
        SimConfig(suite="robosuite", task="Lift", cameras=("agentview",), **common),
        robosuite_steps,
        "robosuite Lift",
    )
    nominal = SimConfig(suite="so101", task="lift", cameras=("front",), **common)
    randomized_cfg = replace(nominal, randomize=RandomizeConfig(preset=args.randomize_preset))
    (paired_nominal, randomized), (cpu_nominal, cpu_randomized) = paired_steps_per_second(
        nominal, randomized_cfg, 2 * twin_steps
    )
    result = {
        "twin_steps_per_s": twin,
        "robosuite_steps_per_s": reference,
        "ratio": twin / reference,
        "paired_nominal_steps_per_s": paired_nominal,  # the nominal twin in the same blocks as the next
        "randomized_steps_per_s": randomized,
        "randomized_preset": args.randomize_preset,
        "randomized_ratio": randomized / paired_nominal,
        "randomized_cpu_ratio": cpu_randomized / cpu_nominal,
        # Other processes on the cores skew wall-clock figures: say how busy the machine was.
        "cpu_count": os.cpu_count(),
        "load_avg_1m_start": load_before,
        "load_avg_1m_end": os.getloadavg()[0],
    }
    print(
        f"so101 twin lift: {twin:.1f} steps/s   robosuite Lift: {reference:.1f} steps/s   "
        f"ratio: {result['ratio']:.1f}x (target >= 20)\n"
        f"so101 twin lift, randomize {args.randomize_preset}: {randomized:.1f} steps/s   "
        f"ratio to nominal: {result['randomized_ratio']:.2f} (target >= 0.7), per CPU second: "
        f"{result['randomized_cpu_ratio']:.2f}"
    )
    if args.json is not None:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(json.dumps(result, indent=2) + "\n")


if __name__ == "__main__":
    main()
