"""Tables of the issue #19 evidence from the reach runs (reproduce.sh, part 2): per training condition, the final
policy's success on the nominal twin and on a held-out grid, mean and spread over seeds.

    .venv/bin/python results/reality-gap/summarize.py [--out DIR] RUNS_DIR COMMIT [RUNS_DIR COMMIT ...]

RUNS_DIR: the runs' folder, trained and evaluated at COMMIT (the committed tables: h13's first recipe at
6b02859, its final recipe at 16d92bd). Writes summary.md, summary.json and the copied evaluations (runs/) to DIR (default:
here).
"""

from __future__ import annotations

import json
import shutil
import sys
from pathlib import Path

import numpy as np

HERE = Path(__file__).parent
OVERALL = "overall (perturbed rows)"
GRIDS = {"medium": "eval-", "light": "evallight-"}
"""Held-out grid -> prefix of the evaluation directories."""


def collect(runs: Path, prefix: str, into: Path) -> dict[str, dict[int, dict]]:
    """Condition -> seed -> evaluate.json summary; copies each evaluation (and its run's report) to into/runs."""
    per_run: dict[str, dict[int, dict]] = {}
    for path in sorted(runs.glob(f"{prefix}*-s*/evaluate.json")):
        cond, seed = path.parent.name.removeprefix(prefix).rsplit("-s", 1)
        per_run.setdefault(cond, {})[int(seed)] = json.loads(path.read_text())["summary"]
        out = into / "runs" / path.parent.name
        out.mkdir(parents=True, exist_ok=True)
        # Every episode and its draw for the medium grid; the light grid's table only (summary.json has its rows).
        for name in ("evaluate.md", "evaluate.json") if prefix == "eval-" else ("evaluate.md",):
            shutil.copy(path.parent / name, out / name)
        if prefix == "eval-" and seed == "0":  # one picture of the grid per training condition
            shutil.copy(path.parent / "perturbed_views.png", out / "perturbed_views.png")
        report = runs / f"train-{cond}-s{seed}" / "report.md"
        if report.is_file():
            shutil.copy(report, into / "runs" / f"train-{cond}-s{seed}.report.md")
    return per_run


def cell(x: np.ndarray) -> str:
    return f"{100 * x.mean():.0f}% ({100 * x.min():.0f}-{100 * x.max():.0f})"


ORDER = ["nominal", "light", "medium", "light16k", "recipe-nominal", "recipe-light", "recipe-medium"]
"""Training conditions (run directories train-<condition>-s<seed>), in table order."""


def label(cond: str) -> str:
    if cond == "light16k":
        return "`light`, 16k steps"
    if cond.startswith("recipe-"):
        return "recipe, " + label(cond.removeprefix("recipe-"))
    return "none" if cond == "nominal" else f"`{cond}`"


def main() -> None:
    args = sys.argv[1:]
    into = Path(args[1]) if args[:1] == ["--out"] else HERE
    args = args[2:] if args[:1] == ["--out"] else args
    pairs = [(Path(d), c) for d, c in zip(args[0::2], args[1::2])]
    record: dict = {"commits": {str(d): c for d, c in pairs}, "grids": {}}
    lines = [
        "Reach, robot observations (6 joints + front camera 64 px; h13's first recipe: ee_delta actions, "
        "shaped reward, uniform replay, 8k steps; 'recipe': h13's final one, joint-delta actions, asymmetric critic + "
        "privileged auxiliary loss, 10k steps, results/pixel-reach). Each final policy on the nominal twin and "
        "on a held-out grid (10 episodes per row, magnitudes 1-1.5x the grid preset's ranges, start states "
        "and draws training never used). Mean over seeds, (min-max) in brackets. `kept`: mean grid success / "
        "mean nominal success.",
        "",
        "| trained with randomisation | held-out grid | seeds | nominal twin | grid (all perturbed rows) | kept | every factor at once | commit |",
        "|---|---|---|---|---|---|---|---|",
    ]
    per_row_lines: list[str] = []
    for grid, prefix in GRIDS.items():
        per_run, commit_of = {}, {}
        for runs, commit in pairs:
            for cond, seeds in collect(runs, prefix, into).items():
                per_run[cond], commit_of[cond] = seeds, commit
        if not per_run:
            continue
        record["grids"][grid] = {}
        for cond in sorted(per_run, key=ORDER.index):
            seeds = per_run[cond]
            nominal = np.array([s["nominal"]["success_rate"] for s in seeds.values()])
            overall = np.array([s[OVERALL]["success_rate"] for s in seeds.values()])
            every = np.array([s["all"]["success_rate"] for s in seeds.values()])
            kept = overall.mean() / nominal.mean() if nominal.mean() > 0 else float("nan")
            lines.append(
                f"| {label(cond)} | `{grid}` | {', '.join(map(str, sorted(seeds)))} | {cell(nominal)} | "
                f"{cell(overall)} | {kept:.2f} | {cell(every)} | {commit_of[cond]} |"
            )
            rows = list(next(iter(seeds.values())))
            record["grids"][grid][cond] = {
                "seeds": sorted(seeds),
                "commit": commit_of[cond],
                "nominal": nominal.tolist(),
                "overall": overall.tolist(),
                "all": every.tolist(),
                "kept": kept,
                "per_row_mean": {
                    r: float(np.mean([s[r]["success_rate"] for s in seeds.values()])) for r in rows
                },
            }
        conds = list(record["grids"][grid])
        per_row_lines += [
            "",
            f"Per row of the `{grid}` grid (mean success over seeds; trained with: {', '.join(map(label, conds))}):",
            "",
            "| row | " + " | ".join(map(label, conds)) + " |",
            "|---|" + "---|" * len(conds),
        ]
        for r in record["grids"][grid][conds[0]]["per_row_mean"]:
            means = [record["grids"][grid][c]["per_row_mean"].get(r, float("nan")) for c in conds]
            per_row_lines.append(f"| {r} | " + " | ".join(f"{100 * m:.0f}%" for m in means) + " |")
    text = "\n".join(lines + per_row_lines) + "\n"
    (into / "summary.md").write_text(text)
    (into / "summary.json").write_text(json.dumps(record, indent=2) + "\n")
    print(text)


if __name__ == "__main__":
    main()
