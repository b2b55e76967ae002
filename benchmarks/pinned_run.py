"""A pinned deterministic `vlmrl train` run, for refactors that must not change behaviour (issue 37).

    python benchmarks/pinned_run.py OUT_JSON                # run it, write its curve and final losses
    python benchmarks/pinned_run.py OUT_JSON --compare REF  # ... and fail unless they equal REF's

The state run's reference is benchmarks/reference/pinned_run_state.json (written before the app package
moved into rooms, and again after it: the same numbers; rewritten on purpose when reach targets gained
their clearance from the home tool point, ``sim.so101.tasks.REACH_START_CLEARANCE_M``). Compare on the CPU kind the
reference was written on: on the Intel Xeon host (2026-12-04) the same commit's losses differ from it in the
fourth significant digit (float summation order), while two runs on one host are equal; to check a change,
run the commit before it and after it on the same host and compare those two.

The run: the twin's ``reach`` task on its state vector, seed 0, uniform replay, no cameras (so no scorer),
2,000 steps with an evaluation every 500; and, with ``--run scored``, a short run with the front camera at
32 px, the oracle scorer scored synchronously and VLM x TD replay, which takes the scoring link and the
TD-error path. Both are exact repeats of themselves (synchronous scoring; seeded resets), so any number
that moves means behaviour changed.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
from pathlib import Path

import torch

STATE_RUN = [
    "--sim.task", "reach", "--sim.cameras", "--policy-obs", "state", "--replay", "uniform",
    "--aux-reward-weight", "0", "--total-steps", "2000", "--seed", "0", "--eval-every-steps", "500",
    "--eval-episodes", "3", "--checkpoint-every-steps", "100000", "--no-progress", "--torch-threads", "1",
]  # fmt: skip
SCORED_RUN = [
    "--sim.task", "reach", "--sim.cameras", "front", "--sim.image-size", "32", "--policy-obs", "state",
    "--sync-scoring", "--replay", "vlm_td", "--total-steps", "400", "--seed", "0",
    "--eval-every-steps", "200", "--eval-episodes", "2", "--learning-starts", "100",
    "--checkpoint-every-steps", "100000", "--no-progress", "--torch-threads", "1", "scorer:oracle",
]  # fmt: skip


def figures(run_dir: Path) -> dict:
    """The run's evaluation curve, its last training-log entries and its agent's update count."""
    state = torch.load(run_dir / "checkpoint" / "state.pt", map_location="cpu", weights_only=False)
    loop = state["loop"]
    return {
        "step": loop.step,
        "episode": loop.episode,
        "evals": loop.evals,
        "last_train_log": loop.train_log[-3:],
        "scoring": None if state["scoring"] is None else repr(sorted(state["scoring"])),
    }


def train(args: list[str], run_dir: Path) -> dict:
    *options, subcommand = args if args[-1].startswith("scorer:") else [*args, ""]
    command = [sys.executable, "-m", "vlmrl", "train", *options, "--run-dir", str(run_dir), subcommand]
    subprocess.run([word for word in command if word], check=True)
    return figures(run_dir)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("out", type=Path)
    parser.add_argument("--compare", type=Path, help="reference JSON of an earlier run")
    parser.add_argument("--run", choices=("state", "scored"), default="state", help="which pinned run")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        run = STATE_RUN if args.run == "state" else SCORED_RUN
        result = {args.run: train(run, Path(tmp) / args.run)}
    args.out.write_text(json.dumps(result, indent=1, default=float))
    if args.compare is None:
        return 0
    reference = json.loads(args.compare.read_text())
    now = json.loads(args.out.read_text())
    differing = [name for name in reference if reference[name] != now.get(name)]
    print("pinned run: same numbers" if not differing else f"pinned run: DIFFERENT in {differing}")
    return 1 if differing else 0


if __name__ == "__main__":
    raise SystemExit(main())
