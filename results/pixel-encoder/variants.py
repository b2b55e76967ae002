"""Lift from robot observations with the patch encoder: variants of the policy image size and the budget
against the default runs (``runs.json``, 32 px policy images, 20,000 steps).

    .venv/bin/python results/pixel-encoder/variants.py RUNS_DIR COMMIT [--out DIR]

RUNS_DIR holds ``lift-robot-px<image size>-steps<steps>[-ema]-s<seed>/`` run directories and their
``.log`` (``vlmrl train`` stdout) from one clean clone at COMMIT; ``-ema`` runs add ``--agent.actor-ema
0.005``. Writes ``variants.json``, ``variants.md`` and ``variants.png`` to DIR (default: here), beside the
default runs' ``runs.json`` it reads there.
"""

from __future__ import annotations

import argparse
import json
import re
from pathlib import Path

import numpy as np
from scipy import stats
from summarize import COMMANDS, cpu_model, evaluations

HERE = Path(__file__).parent
EMA = "--agent.actor-ema 0.005"


def collect(runs_dir: Path, commit: str) -> list[dict]:
    rows, cpu = [], cpu_model()
    for log in sorted(runs_dir.glob("lift-robot-px*-steps*-s*.log")):
        px, steps, ema, seed = re.match(
            r"lift-robot-px(\d+)-steps(\d+)(-ema)?-s(\d+)\.log", log.name
        ).groups()
        px, steps, seed = int(px), int(steps), int(seed)
        extra = EMA if ema else ""
        wall = re.search(r"final success .* in (\d+) s", log.read_text())
        if wall is None:
            continue  # not finished
        curve = evaluations(log.with_suffix("") / "tb")
        command = COMMANDS["lift"].replace("--seed S", f"--seed {seed}").replace("20000", str(steps))
        rows.append({
            "task": "lift", "seed": seed, "policy_image_px": px or 64, "total_steps": steps, "extra_args": extra,
            "final_success": curve[max(curve)], "success_at_20000": curve.get(20000), "curve": curve,
            "wall_s": int(wall[1]), "commit": commit, "tree_clean": True, "cpu": cpu,
            "command": command + f" --agent.pixel.image-size {px}" + (f" {extra}" if extra else ""),
        })  # fmt: skip
    return rows


def variants(rows: list[dict]) -> dict[tuple[int, int, str], list[dict]]:
    """Runs by (policy image px, total steps, extra options), each group in seed order."""
    groups: dict[tuple[int, int, str], list[dict]] = {}
    for r in sorted(rows, key=lambda r: r["seed"]):
        groups.setdefault((r["policy_image_px"], r["total_steps"], r["extra_args"]), []).append(r)
    return dict(sorted(groups.items()))


def percent(values) -> str:
    return ", ".join(f"{v:.0%}" for v in values)


def table(rows: list[dict], default: list[dict]) -> str:
    base = {r["seed"]: r["final_success"] for r in default if r["task"] == "lift"}
    lines = [
        "| policy image | steps | other options | seeds | final success per seed | mean ± sd | the default at 20k, same seeds | p vs the default | last 3 evaluations | best evaluation | at 20k | wall s | commit | CPU |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|",
    ]  # fmt: skip
    for key, mine in variants(rows).items():
        finals = np.array([r["final_success"] for r in mine])
        same = np.array([base[r["seed"]] for r in mine])
        p = stats.ttest_ind(finals, same, equal_var=False).pvalue if finals.std() + same.std() > 0 else 1.0
        at_20k = [r["success_at_20000"] for r in mine]
        last_3 = np.mean([np.mean([r["curve"][k] for k in sorted(r["curve"])[-3:]]) for r in mine])
        best = [max(r["curve"].values()) for r in mine]
        lines.append(
            f"| {key[0]} px | {key[1]:,} | {f'`{key[2]}`' if key[2] else '-'} | {', '.join(str(r['seed']) for r in mine)} | {percent(finals)} | "
            f"**{finals.mean():.0%} ± {finals.std(ddof=1) if len(finals) > 1 else 0:.0%}** | "
            f"{same.mean():.0%} ({percent(same)}) | {p:.2f} | {last_3:.0%} | {percent(best)} | {percent(at_20k)} | "
            f"{min(r['wall_s'] for r in mine)}-{max(r['wall_s'] for r in mine)} | {mine[0]['commit']} | {mine[0]['cpu']} |"
        )
    return "\n".join(lines) + "\n"


def plot(rows: list[dict], default: list[dict], path: Path) -> None:
    """Mean success over seeds against env steps, one line per variant and the default (band: min-max)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    groups = {"32 px, 20k steps (the default; Intel Xeon)": [r for r in default if r["task"] == "lift"]}
    for key, runs in variants(rows).items():
        label = f"{key[0]} px, {key[1] // 1000}k steps" + (f", {key[2]}" if key[2] else "")
        groups[label] = runs
    fig, ax = plt.subplots(figsize=(7, 4))
    for label, runs in groups.items():
        steps = sorted(set.intersection(*(set(r["curve"]) for r in runs)))
        values = np.array([[r["curve"][s] for s in steps] for r in runs])
        ax.plot(steps, values.mean(axis=0), label=f"{label} ({len(runs)} seeds)")
        ax.fill_between(steps, values.min(axis=0), values.max(axis=0), alpha=0.15)
    ax.set_xlabel("env steps")
    ax.set_ylabel("lift success (20 evaluation episodes)")
    ax.set_ylim(0, 1)
    ax.legend(fontsize=8)
    ax.grid(alpha=0.3)
    fig.tight_layout()
    fig.savefig(path, dpi=100)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("runs_dir", type=Path, help="folder of lift-robot-px<px>-steps<n>[-ema]-s<seed> runs")
    parser.add_argument("commit", help="the commit every run ran at (recorded per row)")
    parser.add_argument("--out", type=Path, default=HERE, help="where the default runs' runs.json is; output")
    args = parser.parse_args()
    if not args.runs_dir.is_dir():
        parser.error(f"runs_dir {args.runs_dir} is not a folder")
    rows = collect(args.runs_dir, args.commit)
    if not rows:
        parser.error(f"no finished lift-robot-px*-steps*-s*.log runs in {args.runs_dir}")
    (args.out / "variants.json").write_text(json.dumps(rows, indent=1) + "\n")
    default = json.loads((args.out / "runs.json").read_text())
    for run in default:  # JSON keys are strings; the collected curves' are env steps
        run["curve"] = {int(step): rate for step, rate in run["curve"].items()}
    text = table(rows, default)
    plot(rows, default, args.out / "variants.png")
    (args.out / "variants.md").write_text(text + "\n![variants](variants.png)\n")
    print(text)


if __name__ == "__main__":
    main()
