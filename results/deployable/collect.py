"""Collect the deployable-learner study's runs into runs.json and table.md (results/deployable/README.md).

    python results/deployable/collect.py RUNS_DIR [--out DIR]   # RUNS_DIR holds <name>/ run dirs and logs/<name>.cmd

Each ``logs/<name>.cmd`` holds the commit, the CPU model and the command on its first line, ``wall_s N`` on
its second (written by reproduce.sh); the curve comes from the run's TensorBoard scalars.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parents[1] / "benchmarks"))

from replay_experiment import read_evals  # noqa: E402


def collect(runs: Path) -> list[dict[str, object]]:
    rows = []
    for cmd_file in sorted((runs / "logs").glob("*.cmd")):
        name = cmd_file.stem
        run_dir = runs / name
        lines = cmd_file.read_text().splitlines()
        if not run_dir.is_dir() or len(lines) < 2 or not (run_dir / "report.md").exists():
            continue  # unfinished, killed or invalid
        commit, rest = lines[0].split(" ", 1)
        cpu, command = rest.split(" vlmrl ", 1)
        evals = read_evals(run_dir)
        successes = [e["success_rate"] for e in evals]
        rows.append(
            {
                "name": name,
                "curve": {int(e["step"]): round(e["success_rate"], 4) for e in evals},
                "final_success": round(successes[-1], 4),
                "best": round(max(successes), 4),
                "best_minus_last3": round(max(successes) - statistics.mean(successes[-3:]), 4),
                "wall_s": int(lines[1].split()[1]),
                "commit": commit,
                "cpu": cpu.strip(),
                "command": "vlmrl " + command.replace(f" --run-dir runs/{name}", f" --run-dir OUT/{name}"),
            }
        )
    return rows


def table(rows: list[dict[str, object]]) -> str:
    out = [
        "| run | curve (success % at each evaluation) | final | best - last 3 | wall s | commit | CPU |",
        "|---|---|---|---|---|---|---|",
    ]
    for r in rows:
        curve = " ".join(f"{round(v * 100)}" for v in r["curve"].values())  # type: ignore[union-attr]
        out.append(
            f"| {r['name']} | {curve} | {r['final_success']:.0%} | {float(r['best_minus_last3']) * 100:.0f} | "
            f"{r['wall_s']} | {r['commit']} | {r['cpu']} |"
        )
    return "\n".join(out) + "\n"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("runs", type=Path)
    parser.add_argument("--out", type=Path, default=HERE, help="where runs.json and table.md go")
    args = parser.parse_args()
    rows = collect(args.runs)
    (args.out / "runs.json").write_text(json.dumps(rows, indent=1) + "\n")
    (args.out / "table.md").write_text(table(rows))
    print(table(rows))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
