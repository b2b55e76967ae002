"""Write one finished `vlmrl train` run's record as JSON: its command, commit, CPU, wall time and evaluation
curve, with a few training scalars thinned to 8 points (the G*-s*.json and probes/*.json files here;
`benchmarks/lift_learner_table.py` reads them).

    python results/lift-learner/record_run.py RUN_DIR --name NAME --seed S --obs state|robot \
        --wall-s SECONDS --command "vlmrl train ..." --out NAME.json

The commit and whether the tree was clean are read from the repository the script is in.
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import platform
import subprocess
from pathlib import Path

from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

ROOT = Path(__file__).resolve().parents[2]
TAGS = ("eval/success_rate", "train/q_mean", "train/critic_loss", "train/alpha", "train/entropy")


def scalars(run_dir: Path) -> dict[str, list[tuple[int, float]]]:
    data: dict[str, list[tuple[int, float]]] = {}
    for events in sorted(run_dir.rglob("events.out.tfevents*")):
        accumulator = EventAccumulator(str(events), size_guidance={"scalars": 0})
        accumulator.Reload()
        for tag in TAGS:
            if tag in accumulator.Tags().get("scalars", []):
                data.setdefault(tag, []).extend((e.step, e.value) for e in accumulator.Scalars(tag))
    return data


def thin(points: list[tuple[int, float]]) -> list[tuple[int, float]]:
    k = max(1, len(points) // 8)
    return [(s, round(v, 3)) for s, v in points[k - 1 :: k]]


def cpu_model() -> str:
    for line in Path("/proc/cpuinfo").read_text().splitlines():
        if line.startswith("model name"):
            return line.split(":", 1)[1].strip()
    return platform.processor()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("run_dir", type=Path)
    parser.add_argument("--name", required=True)
    parser.add_argument("--seed", type=int, required=True)
    parser.add_argument("--obs", choices=["state", "robot"], required=True)
    parser.add_argument("--wall-s", type=int, required=True, help="the run's wall-clock time")
    parser.add_argument("--command", required=True, help="the vlmrl train command, --run-dir as RUN")
    parser.add_argument("--out", type=Path, required=True)
    args = parser.parse_args()
    if not (args.run_dir / "policy.pt").exists():
        parser.error(f"{args.run_dir} has no policy.pt: the run did not finish")
    config = json.loads((args.run_dir / "config.json").read_text())  # the run's resolved config
    data = scalars(args.run_dir)
    evals = data.get("eval/success_rate", [])
    success = [round(v, 3) for _, v in evals]
    git = ["git", "-C", str(ROOT)]
    record = dict(
        name=args.name, task=config["sim"]["task"], policy_obs=args.obs, seed=args.seed, command=args.command, rc=0,
        wall_s=args.wall_s, curve_steps=[s for s, _ in evals], curve_success=success,
        final_success=success[-1] if success else None, best_success=max(success) if success else None,
        q_mean=thin(data.get("train/q_mean", [])), critic_loss=thin(data.get("train/critic_loss", [])),
        alpha=thin(data.get("train/alpha", [])),
        git_commit=subprocess.check_output([*git, "rev-parse", "HEAD"], text=True).strip(),
        tree_clean=subprocess.run([*git, "diff", "--quiet", "HEAD"]).returncode == 0,
        date=datetime.date.today().isoformat(), cpu_model=cpu_model(), cpu_count=os.cpu_count(),
    )  # fmt: skip
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(record, indent=1) + "\n")
    print(args.name, success, "wall", record["wall_s"])


if __name__ == "__main__":
    main()
