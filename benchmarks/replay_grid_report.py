"""The pre-registered VLM-guided replay grid's report (issue #35, results/vlm-replay/README.md, "The test").

Reads the grid's ``results.jsonl`` (one line per run, written by ``replay_experiment.py --cell NAME --seed S``)
and, for every registered comparison (each condition against ``uniform`` of the same task and number of
demonstrations), writes what the registration fixed:

- success at the budget per seed, mean ± sd, the difference and relative change against uniform, Welch's
  two-sided p over the seeds, raw and after Holm's correction over all the grid's comparisons (a comparison
  whose cells are not complete counts as p = 1 in the correction, so a partial grid is never less strict);
- env steps to uniform's final seed-mean success on the seed-mean curve (linear interpolation) and the saving
  against uniform's own steps; the mean success over evaluations (the normalised area under the curve);
- the headline rule: >= +25% relative success at raw p < 0.05, or >= 19% fewer steps to uniform's final
  success; whether it survives Holm;
- the replay diagnostics per cell (second halves; ``replay_experiment.diagnostics_summary``);
- every registered cell that lacks runs, by name and missing seeds;
- a plot of the seed-mean success against env steps per condition, one panel per setting.

    python benchmarks/replay_grid_report.py                                   # results/vlm-replay/
    python benchmarks/replay_grid_report.py --results runs/vlm-replay/results.jsonl --out /tmp/report

Writes ``grid.md``, ``grid.json`` and ``curves.png`` into ``--out`` (default: the results file's folder).
"""

from __future__ import annotations

import argparse
import json
import math
import sys
from collections import defaultdict
from pathlib import Path

import numpy as np
from replay_analysis import mean_curve, steps_to_reach, welch_p
from replay_experiment import (
    CELLS,
    ISSUE35_SEEDS,
    METAWORLD_CONDITIONS,
    TWIN_CONDITIONS,
    TWIN_DEMOS,
    TWIN_TASKS,
    diagnostics_summary,
    diagnostics_table,
)

ROOT = Path(__file__).resolve().parents[1]
GRID_METAWORLD_TASKS = ("reach",)
"""The Meta-World tasks the pilot chose (results/vlm-replay/README.md, "The pilot": only reach qualified,
without demonstrations or with five)."""
HEADLINE_GAIN, HEADLINE_P, HEADLINE_STEP_SAVING = 0.25, 0.05, 0.19
"""Issue #35's rule: >= +25% relative success at p < 0.05, or >= 19% fewer steps to uniform's final success."""


def settings() -> list[tuple[str, tuple[str, ...]]]:
    """The grid's settings in the registered order: (the cells' common prefix, its conditions)."""
    out: list[tuple[str, tuple[str, ...]]] = [
        (f"metaworld/{task}", METAWORLD_CONDITIONS) for task in GRID_METAWORLD_TASKS
    ]
    out += [(f"twin/{task}/demos{demos}", TWIN_CONDITIONS) for task in TWIN_TASKS for demos in TWIN_DEMOS]
    for prefix, conditions in out:
        for condition in conditions:
            assert f"{prefix}/{condition}" in CELLS, f"{prefix}/{condition} is not a registered cell"
    return out


def comparisons() -> list[tuple[str, str]]:
    """(condition's cell, uniform's cell) for every registered comparison of the grid."""
    return [
        (f"{prefix}/{condition}", f"{prefix}/uniform")
        for prefix, conditions in settings()
        for condition in conditions
        if condition != "uniform"
    ]


def load(path: Path) -> dict[str, dict[int, dict]]:
    """The grid's runs by cell and seed (a run recorded twice keeps its last line); ad-hoc runs are left out."""
    runs: dict[str, dict[int, dict]] = defaultdict(dict)
    for line in path.read_text().splitlines():
        if line.strip():
            record = json.loads(line)
            if record.get("cell") in CELLS:
                runs[record["cell"]][int(record["seed"])] = record
    return runs


def holm(pvalues: list[float]) -> list[float]:
    """Holm's step-down adjusted p-values, in the input's order."""
    m = len(pvalues)
    order = sorted(range(m), key=lambda i: pvalues[i])
    adjusted = [1.0] * m
    running = 0.0
    for rank, i in enumerate(order):
        running = max(running, min(1.0, (m - rank) * pvalues[i]))
        adjusted[i] = running
    return adjusted


def complete(runs: dict[str, dict[int, dict]], cell: str) -> bool:
    return all(seed in runs.get(cell, {}) for seed in ISSUE35_SEEDS)


def on_schedule(row: dict) -> dict:
    """``row`` with each evaluation's step put on its schedule: an evaluation runs at the first episode end past
    each multiple of ``eval_every_steps``, so episodes that end at success put seeds' evaluations a few steps
    apart (40,034 and 40,138), and the seed-mean curve compares the k-th evaluations."""
    every = float(row.get("eval_every_steps") or 0)
    if every <= 0:
        return row
    evals = [{**e, "step": every * round(e["step"] / every)} for e in row["evals"]]
    return {**row, "evals": evals}


def cell_figures(rows: list[dict]) -> dict:
    rows = sorted((on_schedule(r) for r in rows), key=lambda r: int(r["seed"]))
    steps, curve, half = mean_curve(rows)
    finals = [float(r["final_success"]) for r in rows]
    return {
        "seeds": sorted(int(r["seed"]) for r in rows),
        "finals": finals,
        "mean": float(np.mean(finals)),
        "sd": float(np.std(finals, ddof=1)) if len(finals) > 1 else 0.0,
        "mean_over_evals": float(curve.mean()) if len(curve) else float("nan"),
        "commits": sorted({str(r.get("commit")) for r in rows}),
        "cpus": sorted({str(r.get("cpu")) for r in rows}),
        "wall_s": [float(r.get("wall_s", float("nan"))) for r in rows],
        "curve": {"steps": steps.tolist(), "mean": curve.tolist(), "ci95": half.tolist()},
    }


def report(runs: dict[str, dict[int, dict]]) -> dict:
    """Every cell's figures, every comparison's test and the headline (see the module's docstring)."""
    cells = {name: cell_figures(list(seeds.values())) for name, seeds in runs.items() if seeds}
    tests = []
    for cell, uniform in comparisons():
        test: dict = {
            "cell": cell,
            "uniform": uniform,
            "complete": complete(runs, cell) and complete(runs, uniform),
        }
        if cell in cells and uniform in cells:
            a, u = cells[cell], cells[uniform]
            u_steps, u_curve = np.array(u["curve"]["steps"]), np.array(u["curve"]["mean"])
            steps, curve = np.array(a["curve"]["steps"]), np.array(a["curve"]["mean"])
            level = float(u_curve[-1]) if len(u_curve) else float("nan")
            reach, u_reach = steps_to_reach(steps, curve, level), steps_to_reach(u_steps, u_curve, level)
            test.update(
                difference=a["mean"] - u["mean"],
                relative=a["mean"] / u["mean"] - 1 if u["mean"] > 0 else None,
                p=welch_p(a["finals"], u["finals"]),
                steps_to_uniform_final=None if math.isnan(reach) else reach,
                uniform_steps_to_own_final=None if math.isnan(u_reach) else u_reach,
                step_saving=None if math.isnan(reach) or math.isnan(u_reach) or u_reach <= 0 else 1 - reach / u_reach,
            )  # fmt: skip
        tests.append(test)
    # Holm over every registered comparison; one not complete (or without spread) counts as p = 1.
    raw = [t["p"] if t["complete"] and t.get("p") is not None else 1.0 for t in tests]
    for test, adjusted in zip(tests, holm(raw), strict=True):
        test["p_holm"] = adjusted if test["complete"] and test.get("p") is not None else None
        by_success = (
            test.get("relative") is not None
            and test["relative"] >= HEADLINE_GAIN
            and test.get("p") is not None
            and test["p"] < HEADLINE_P
        )
        by_steps = test.get("step_saving") is not None and test["step_saving"] >= HEADLINE_STEP_SAVING
        test["headline"] = bool(test["complete"] and (by_success or by_steps))
        test["headline_by"] = [k for k, met in (("success", by_success), ("steps", by_steps)) if met]
    missing = {
        cell: [s for s in ISSUE35_SEEDS if s not in runs.get(cell, {})]
        for prefix, conditions in settings()
        for cell in (f"{prefix}/{c}" for c in conditions)
        if not complete(runs, cell)
    }
    records = [r for seeds in runs.values() for r in seeds.values()]
    return {
        "cells": cells,
        "comparisons": tests,
        "holm_m": len(tests),
        "headline": [t["cell"] for t in tests if t["headline"]],
        "missing": missing,
        "diagnostics": diagnostics_summary(records, "late"),
    }


def _pct(x: float | None, signed: bool = False) -> str:
    if x is None or (isinstance(x, float) and math.isnan(x)):
        return "-"
    return f"{x:+.0%}" if signed else f"{x:.0%}"


def _p(x: float | None) -> str:
    return "-" if x is None else f"{x:.3f}" if x >= 0.001 else f"{x:.1e}"


def students(folder: Path) -> dict[str, dict]:
    """Each learned student's held-out figures: ``vlmrl scorer fit``'s ``<student>-fit/summary.json`` (a run's
    folder), else the committed ``<student>.json`` that holds it as ``fit_summary``."""
    found = {
        p.parent.name.removesuffix("-fit"): json.loads(p.read_text())
        for p in folder.glob("*-fit/summary.json")
    }
    for record in folder.glob("*.json"):
        found.setdefault(record.stem, json.loads(record.read_text()).get("fit_summary", {}))
    out = {}
    for name in sorted(found):
        heldout = found[name].get("heldout", {})
        out[name] = {k: heldout.get(k) for k in ("auc", "voc", "ece")}
        out[name]["clips"] = heldout.get("clips", heldout.get("windows"))  # `scorer fit` names them windows
    return out


CURVES_ALT = "Seed-mean success against env steps per setting, one line and 95% band per condition"


def markdown(rep: dict) -> str:
    lines = [
        "| cell | seeds | success at the budget per seed | mean ± sd | vs uniform | relative | Welch p | "
        f"Holm p (m = {rep['holm_m']}) | steps to uniform's final | step saving | mean over evaluations |",
        "|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    by_cell = {t["cell"]: t for t in rep["comparisons"]}
    for prefix, conditions in settings():
        for condition in conditions:
            name = f"{prefix}/{condition}"
            c = rep["cells"].get(name)
            if c is None:
                lines.append(f"| {name} | 0 | not run | | | | | | | | |")
                continue
            t = by_cell.get(name, {})
            finals = ", ".join(f"{x:.0%}" for x in c["finals"])
            reach = t.get("steps_to_uniform_final")
            lines.append(
                f"| {name} | {len(c['seeds'])} | {finals} | {c['mean']:.0%} ± {c['sd']:.0%} | "
                f"{_pct(t.get('difference'), signed=True) if t else ''} | {_pct(t.get('relative'), signed=True) if t else ''} | "
                f"{_p(t.get('p')) if t else ''} | {_p(t.get('p_holm')) if t else ''} | "
                f"{'-' if reach is None else f'{reach:,.0f}'} | {_pct(t.get('step_saving'), signed=True) if t else ''} | "
                f"{c['mean_over_evals']:.0%} |"
            )  # fmt: skip
    out = ["## The grid's cells", "", *lines, ""]
    head = rep["headline"]
    out += [
        "## The headline rule",
        "",
        (
            "Comparisons that meet it: "
            + "; ".join(
                f"{t['cell']} (by {' and '.join(t['headline_by'])}"
                + (
                    ": fewer steps to uniform's final success, a criterion without a test"
                    if t["headline_by"] == ["steps"]
                    else ""
                )
                + ("; PER, not VLM-guided replay" if t["cell"].endswith("/per") else "")
                + ")"
                for t in rep["comparisons"]
                if t["headline"]
            )
            + "."
            if head
            else "No complete comparison meets it (>= +25% relative success at p < 0.05, or >= 19% fewer steps "
            "to uniform's final success)."
        ),
        "",
    ]
    if rep["cells"]:  # the plot main() writes beside this file
        out += ["## Success over training", "", f"![{CURVES_ALT}](curves.png)", ""]
    if rep["missing"]:
        out += ["## Cells not complete", "", "| cell | seeds missing |", "|---|---|"]
        out += [f"| {cell} | {', '.join(map(str, seeds))} |" for cell, seeds in rep["missing"].items()]
        out.append("")
    if rep.get("students"):
        out += ["## The learned students (held-out episodes of their recordings)", ""]
        out += ["| student | held-out AUC | clips |", "|---|---|---|"]
        for name, f in rep["students"].items():
            auc = "-" if f["auc"] is None else f"{f['auc']:.3f}"
            out.append(f"| {name} | {auc} | {f['clips']} |")
        out.append("")
    if rep["diagnostics"]:
        out += ["## Replay diagnostics (second halves, mean over the cell's runs)", ""]
        out += [diagnostics_table(rep["diagnostics"]), ""]
    return "\n".join(out)


def plot(rep: dict, path: Path) -> Path | None:
    """Seed-mean success against env steps, one panel per setting, one line (95% band) per condition."""
    panels = [(p, c) for p, c in settings() if any(f"{p}/{x}" in rep["cells"] for x in c)]
    if not panels:
        return None
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from matplotlib.ticker import FuncFormatter

    cols = min(3, len(panels))
    rows = math.ceil(len(panels) / cols)
    fig, axes = plt.subplots(rows, cols, figsize=(4.2 * cols, 3.2 * rows), squeeze=False)
    for ax, (prefix, conditions) in zip(axes.flat, panels, strict=False):
        for condition in conditions:
            c = rep["cells"].get(f"{prefix}/{condition}")
            if c is None:
                continue
            steps, mean, half = (np.array(c["curve"][k]) for k in ("steps", "mean", "ci95"))
            ax.plot(steps, mean, label=f"{condition} ({len(c['seeds'])})")
            ax.fill_between(steps, np.clip(mean - half, 0, 1), np.clip(mean + half, 0, 1), alpha=0.15)
        ax.set_title(prefix, fontsize=9)
        ax.set_ylim(0, 1)
        ax.xaxis.set_major_formatter(FuncFormatter(lambda x, _: f"{x / 1000:g}k"))  # no run-on tick labels
        ax.set_xlabel("env steps")
        ax.set_ylabel("success (20 episodes)")
        ax.legend(fontsize=7)
    for ax in list(axes.flat)[len(panels) :]:
        ax.axis("off")
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--results", type=Path, default=ROOT / "results" / "vlm-replay" / "results.jsonl")
    parser.add_argument("--out", type=Path, default=None, help="where grid.md, grid.json, curves.png go")
    args = parser.parse_args(argv)
    if not args.results.is_file():
        print(f"replay_grid_report: no results file at {args.results}", file=sys.stderr)
        return 2
    out = args.out or args.results.parent
    out.mkdir(parents=True, exist_ok=True)
    rep = report(load(args.results))
    rep["students"] = students(args.results.parent / "students")
    (out / "grid.json").write_text(json.dumps(rep, indent=1) + "\n")
    (out / "grid.md").write_text(markdown(rep))
    plot(rep, out / "curves.png")
    print(markdown(rep))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
