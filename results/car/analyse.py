"""Table of the CaR experiment (issue #17): success at budget per setting, mean +- sd over seeds, Welch p.

Reads the run directories that ``benchmarks/replay_experiment.py --out DIR`` made (``DIR/runs/<name>``: the
evaluations from TensorBoard, the settings from ``config.json``; unfinished runs are skipped) and
``commits.json`` (setting label -> the commit its runs started from); writes ``results.md`` and
``summary.json`` to OUT (default: here).

    python results/car/analyse.py RUNS_DIR [OUT]
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import numpy as np
from scipy import stats

HERE = Path(__file__).resolve().parent


def label(row: dict) -> str:
    if row.get("variant") == "car":
        return "sparse + CaR (hand-written lift program, weight 1)"
    if row["aux_weight"] > 0:
        return f"sparse + oracle aux reward (weight {row['aux_weight']:g})"
    return "sparse"


def read_runs(source: Path) -> list[dict]:
    sys.path.insert(0, str(HERE.parents[1] / "benchmarks"))
    from replay_experiment import read_evals

    rows = []
    for run in sorted((source / "runs").iterdir()):
        if not run.is_dir() or not (run / "policy.pt").exists():
            continue
        config = json.loads((run / "config.json").read_text())
        evals = read_evals(run)
        if not evals or evals[-1]["step"] < config["total_steps"]:
            continue
        rows.append(
            {
                "name": run.name,
                "seed": config["seed"],
                "aux_weight": config["aux_reward_weight"],
                "variant": "car" if config.get("reward_program") else "",
                "total_steps": config["total_steps"],
                "evals": evals,
                "final_success": evals[-1]["success_rate"],
            }
        )
    return rows


def main() -> int:
    rows = read_runs(Path(sys.argv[1]))
    commits = json.loads((HERE / "commits.json").read_text())
    groups: dict[str, list[dict]] = {}
    for row in rows:
        groups.setdefault(label(row), []).append(row)
    base = [r["final_success"] for r in groups.get("sparse", [])]
    summary = {}
    lines = [
        "| reward | seeds | budget (env steps) | success at budget (mean ± sd) | per seed | mean success over evaluations | p vs sparse (Welch t) | commit |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for name, group in sorted(groups.items(), key=lambda kv: (kv[0] != "sparse", kv[0])):
        group.sort(key=lambda r: r["seed"])
        final = [r["final_success"] for r in group]
        over = float(np.mean([np.mean([e["success_rate"] for e in r["evals"]]) for r in group]))
        p = None
        if name != "sparse" and len(base) > 1 and len(final) > 1 and (np.std(base) > 0 or np.std(final) > 0):
            p = float(stats.ttest_ind(final, base, equal_var=False).pvalue)
        summary[name] = {
            "seeds": [r["seed"] for r in group],
            "final_success": final,
            "mean": float(np.mean(final)),
            "sd": float(np.std(final, ddof=1)) if len(final) > 1 else 0.0,
            "mean_over_evals": over,
            "p_vs_sparse": p,
            "budget_steps": group[0]["total_steps"],
            "commit": commits.get(name, "?"),
        }
        s = summary[name]
        per_seed = ", ".join(f"{v:.0%}" for v in final)
        p_text = "-" if p is None else f"{p:.2f}"
        lines.append(
            f"| {name} | {len(final)} | {s['budget_steps']:,} | {s['mean']:.0%} ± {s['sd']:.0%} | {per_seed} | "
            f"{over:.0%} | {p_text} | {s['commit']} |"
        )
    out = Path(sys.argv[2]) if len(sys.argv) > 2 else HERE
    (out / "results.md").write_text("\n".join(lines) + "\n")
    (out / "summary.json").write_text(json.dumps(summary, indent=2) + "\n")
    print("\n".join(lines))
    return 0


if __name__ == "__main__":
    sys.exit(main())
