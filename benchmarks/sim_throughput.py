"""Env steps per second: the SO-101 twin `lift` vs robosuite `Lift` (Panda), one 128 px camera each.

Same settings for both: 20 Hz control, one 128x128 camera rendered every step, shadows off, uniformly
random actions, one process, one run. Target: ratio >= 20.

    .venv/bin/python benchmarks/sim_throughput.py --quick --json runs/bench/sim_throughput.json
"""

from __future__ import annotations

import argparse
import json
import os
import time
from pathlib import Path

os.environ.setdefault("MUJOCO_GL", "egl")
os.environ.setdefault("PYOPENGL_PLATFORM", os.environ["MUJOCO_GL"])

from rich.progress import track

from sim import SimConfig, make_env


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


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--quick", action="store_true", help="short run (fewer steps)")
    parser.add_argument("--json", type=Path, default=None, help="write the figures to this JSON file")
    parser.add_argument("--image-size", type=int, default=128)
    args = parser.parse_args()
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
    result = {"twin_steps_per_s": twin, "robosuite_steps_per_s": reference, "ratio": twin / reference}
    print(
        f"so101 twin lift: {twin:.1f} steps/s   robosuite Lift: {reference:.1f} steps/s   "
        f"ratio: {result['ratio']:.1f}x (target >= 20)"
    )
    if args.json is not None:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(json.dumps(result, indent=2) + "\n")


if __name__ == "__main__":
    main()
