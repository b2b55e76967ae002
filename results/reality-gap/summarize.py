"""Tables of the issue #19 evidence from the runs of run.sh: per training condition, the final policy's
success on the nominal twin and on the held-out grid, mean and spread over seeds.

    .venv/bin/python results/reality-gap/summarize.py RUNS_DIR COMMIT   # RUNS_DIR: run.sh's runs/reality-gap
"""

from __future__ import annotations

import json
import shutil
import sys
from pathlib import Path

import numpy as np

HERE = Path(__file__).parent
OVERALL = "overall (perturbed rows)"


def main() -> None:
    runs, commit = Path(sys.argv[1]), sys.argv[2]
    per_run: dict[str, dict[int, dict]] = {}
    for path in sorted(runs.glob("eval-*-s*/evaluate.json")):
        cond, seed = path.parent.name.removeprefix("eval-").rsplit("-s", 1)
        summary = json.loads(path.read_text())["summary"]
        per_run.setdefault(cond, {})[int(seed)] = summary
        out = HERE / path.parent.name
        out.mkdir(exist_ok=True)
        for name in ("evaluate.md", "evaluate.json", "perturbed_views.png"):
            shutil.copy(path.parent / name, out / name)
        report = runs / f"train-{cond}-s{seed}" / "report.md"
        if report.is_file():
            shutil.copy(report, out / "train_report.md")
    rows = list(next(iter(next(iter(per_run.values())).values())))
    lines = [
        f"Reach, robot observations (h13's recipe, 8k steps), commit {commit}. Each final policy on the "
        "held-out `medium` grid (10 episodes per row, magnitudes 1-1.5x medium's ranges, seeds and draws "
        "training never used); mean and spread (min-max) over seeds.",
        "",
        "| trained | seeds | nominal twin | held-out grid (all perturbed rows) | kept (grid / nominal) | all factors at once |",
        "|---|---|---|---|---|---|",
    ]
    record: dict = {"commit": commit, "conditions": {}}
    for cond, seeds in per_run.items():
        nominal = np.array([s["nominal"]["success_rate"] for s in seeds.values()])
        grid = np.array([s[OVERALL]["success_rate"] for s in seeds.values()])
        every = np.array([s["all"]["success_rate"] for s in seeds.values()])
        kept = grid.mean() / nominal.mean() if nominal.mean() > 0 else float("nan")

        def cell(x: np.ndarray) -> str:
            return f"{100 * x.mean():.0f}% ({100 * x.min():.0f}-{100 * x.max():.0f})"

        label = "without randomisation" if cond == "nominal" else f"`--sim.randomize.preset {cond}`"
        lines.append(
            f"| {label} | {', '.join(map(str, sorted(seeds)))} | {cell(nominal)} | {cell(grid)} | {kept:.2f} | {cell(every)} |"
        )
        record["conditions"][cond] = {
            "seeds": sorted(seeds),
            "nominal": nominal.tolist(),
            "grid": grid.tolist(),
            "all": every.tolist(),
            "kept": kept,
            "per_row_mean": {r: float(np.mean([s[r]["success_rate"] for s in seeds.values()])) for r in rows},
        }
    lines += [
        "",
        "Per row (mean success over seeds):",
        "",
        "| row | " + " | ".join(per_run) + " |",
        "|---|" + "---|" * len(per_run),
    ]
    for r in rows:
        lines.append(
            f"| {r} | "
            + " | ".join(f"{100 * record['conditions'][c]['per_row_mean'][r]:.0f}%" for c in per_run)
            + " |"
        )
    text = "\n".join(lines) + "\n"
    (HERE / "summary.md").write_text(text)
    (HERE / "summary.json").write_text(json.dumps(record, indent=2) + "\n")
    print(text)


if __name__ == "__main__":
    main()
