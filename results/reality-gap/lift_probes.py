"""Issue #19 lift probes: which randomised factor stops lift from robot observations, and what each remedy
does. Reads each probe run's TensorBoard evaluations and its line in ``train.out`` (commit, arguments).

    .venv/bin/python results/reality-gap/lift_probes.py [--out DIR] RUNS_DIR [RUNS_DIR ...]

Each RUNS_DIR holds ``<name>-s<seed>/tb`` and ``train.out`` (``reproduce.sh``, part 3, writes both); writes
``lift_probes.md`` and ``lift_probes.json`` to DIR (default: here). "last 3" is the mean of the last three evaluations
(7,500 steps, 60 episodes): less noisy than the final one (20 episodes).
"""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path

import numpy as np
from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

HERE = Path(__file__).parent
PROBES = {  # name -> what it trains under (every probe: recipe D from robot observations)
    "latonly": "action latency only (`--sim.randomize.max-latency-steps 1`)",
    "physics": "physics only (mass, size, friction, damping, gripper force, joint noise at `light`'s ranges)",
    "appear": "appearance only (camera pose and fov, light, colour, texture at `light`'s ranges)",
    "texonly": "texture only (`--sim.randomize.texture 0.15`)",
    "light-nolat": "`light` without latency",
    "light-actenc": "`light`, `--agent.actor-trains-encoder`",
    "light-est": "`light`, `--agent.actor-reads-estimate`",
    "light-est-std": "`light`, `--agent.actor-reads-estimate --agent.pixel.standardize`",
    "light-std": "`light`, `--agent.pixel.standardize`",
    "light-std-40k": "`light`, `--agent.pixel.standardize`, 40k steps",
    "pre-std": "`light`, `--agent.pixel.standardize`, encoder from `vlmrl pretrain` (`light` frames)",
    "ramp10k-std": "`light`, `--agent.pixel.standardize --randomize-ramp-steps 10000` (curriculum)",
    "jit3-std": "`light`, `--agent.pixel.standardize --agent.pixel.color-jitter 0.3`",
    "jit3": "`light`, `--agent.pixel.color-jitter 0.3`",
    "ramp10k-jit3-std": "`light`, `--agent.pixel.standardize --agent.pixel.color-jitter 0.3 --randomize-ramp-steps 10000`",
}


def evaluations(tb: Path) -> dict[int, float]:
    events = EventAccumulator(str(tb))
    events.Reload()
    return {int(e.step): float(e.value) for e in events.Scalars("eval/success_rate")}  # last write per step


def main() -> None:
    args = sys.argv[1:]
    out = Path(args[1]) if args[:1] == ["--out"] else HERE
    args = args[2:] if args[:1] == ["--out"] else args
    finished: dict[tuple[str, int], tuple[str, Path]] = {}
    for runs in map(Path, args):
        for line in (runs / "train.out").read_text().splitlines():
            match = re.match(r"(\S+) seed (\d+) rc 0 wall (\d+) commit (\w+)", line)
            if match:
                finished[(match[1], int(match[2]))] = (match[4], runs)
    record: dict = {}
    lines = [
        "| trained under | seed | steps | final success | last 3 | best evaluation | evaluations (every 2.5k) | commit |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for name, label in PROBES.items():
        for (probe, seed), (commit, runs) in sorted(finished.items()):
            if probe != name:
                continue
            curve = evaluations(runs / f"{name}-s{seed}" / "tb")
            steps = sorted(curve)
            values = np.array([curve[s] for s in steps])
            record[f"{name}-s{seed}"] = {"label": label, "seed": seed, "commit": commit, "evals": curve}
            lines.append(
                f"| {label} | {seed} | {steps[-1]:,} | {100 * values[-1]:.0f}% | {100 * values[-3:].mean():.0f}% | "
                f"{100 * values.max():.0f}% | "
                f"{', '.join(f'{100 * v:.0f}' for v in values)} | {commit} |"
            )
    text = "\n".join(lines) + "\n"
    (out / "lift_probes.md").write_text(text)
    (out / "lift_probes.json").write_text(json.dumps(record, indent=2) + "\n")
    print(text)


if __name__ == "__main__":
    main()
