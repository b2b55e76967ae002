"""Analyse `replay_experiment.py` results: curves with confidence bands, success at budget, efficiency.

Reads `results.jsonl`; writes `curves_<task>.png` (mean success rate vs env steps with a 95% t-interval
band over seeds, per mode and noise level), `summary.json`, and `results.md` (the table docs/results.md
embeds). Sample-efficiency gain: how many fewer env steps a setting needs to first reach uniform
replay's final mean success rate (linear interpolation on the seed-mean curve); "-" when uniform never
succeeds or the setting never gets there. Mean success over evaluations: the seed-mean curve averaged over
its evaluation points (the normalised area under it), less noisy than the one point at the budget. The
p-value (Welch's t-test on the seeds' success at budget) says how easily seed noise alone gives the
difference from uniform.

    python benchmarks/replay_analysis.py results/replay
"""

from __future__ import annotations

import argparse
import json
import math
import sys
from collections import defaultdict
from pathlib import Path

import numpy as np


def load(path: Path) -> list[dict]:
    rows = [json.loads(line) for line in path.read_text().splitlines() if line.strip()]
    latest: dict[str, dict] = {}
    for row in rows:  # a rerun may append a run twice: keep the last record
        latest[row["name"]] = row
    return list(latest.values())


def setting(row: dict) -> tuple[str, str, float, float]:
    """(task variant, mode, noise, aux weight); runs with demonstrations are their own variant."""
    demos = int(row.get("demo_episodes", 0))
    task = f"{row['task']}-demos{demos}" if demos else row["task"]
    task += "-ln" if row.get("layer_norm") else ""
    mode = f"{row['mode']}[{row['variant']}]" if row.get("variant") else row["mode"]
    return task, mode, float(row["noise"]), float(row["aux_weight"])


def variant_of(mode: str) -> str:
    """The variant in a setting's mode (``vlm[strong]`` -> ``strong``; ``""`` for none)."""
    return mode.partition("[")[2].rstrip("]")


def task_title(task: str) -> str:
    task, ln = (task[: -len("-ln")], True) if task.endswith("-ln") else (task, False)
    name, _, demos = task.partition("-demos")
    return (
        f"SO-101 twin `{name}`, sparse reward"
        + (f", {demos} scripted demonstrations in the buffer" if demos else "")
        + (", LayerNorm critic" if ln else "")
    )


def label(mode: str, noise: float, aux: float) -> str:
    if mode.split("[")[0] in ("uniform", "per"):
        return mode
    return f"{mode} noise={noise:g}" + (f" aux={aux:g}" if aux else "")


def mean_curve(rows: list[dict]) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Steps, seed-mean success, 95% half-width (t-interval), on the steps all seeds share."""
    steps = sorted(set.intersection(*(set(e["step"] for e in r["evals"]) for r in rows)))
    values = np.array(
        [[next(e["success_rate"] for e in r["evals"] if e["step"] == s) for s in steps] for r in rows]
    )
    n = len(rows)
    mean = values.mean(axis=0)
    if n > 1:
        from scipy import stats

        half = stats.t.ppf(0.975, n - 1) * values.std(axis=0, ddof=1) / math.sqrt(n)
    else:
        half = np.zeros_like(mean)
    return np.array(steps), mean, half


def steps_to_reach(steps: np.ndarray, curve: np.ndarray, level: float) -> float:
    """First env step at which the curve reaches `level` (linear interpolation); nan if never."""
    if level <= 0:
        return float("nan")
    for i, value in enumerate(curve):
        if value >= level:
            if i == 0:
                return float(steps[0])
            s0, s1, v0, v1 = steps[i - 1], steps[i], curve[i - 1], curve[i]
            return float(s0 + (level - v0) / (v1 - v0) * (s1 - s0))
    return float("nan")


def welch_p(a: list[float], b: list[float]) -> float | None:
    """Two-sided Welch t-test p-value of two samples of final success rates (None: too few or no spread)."""
    if len(a) < 2 or len(b) < 2:
        return None
    from scipy import stats

    va, vb = np.var(a, ddof=1) / len(a), np.var(b, ddof=1) / len(b)
    if va + vb == 0:
        return None
    t = (np.mean(a) - np.mean(b)) / math.sqrt(va + vb)
    df = (va + vb) ** 2 / (va**2 / (len(a) - 1) + vb**2 / (len(b) - 1))
    return float(2 * stats.t.sf(abs(t), df))


def analyse(rows: list[dict]) -> dict:
    groups: dict[tuple, list[dict]] = defaultdict(list)
    for row in rows:
        groups[setting(row)].append(row)
    summary: dict[str, dict] = {}
    for task in sorted({k[0] for k in groups}):
        baselines = {}  # variant -> uniform replay's figures: a variant's own uniform runs, else plain uniform
        for key in sorted(k for k in groups if k[0] == task and k[1].split("[")[0] == "uniform"):
            uniform = groups[key]
            u_steps, u_curve, _ = mean_curve(uniform)
            u_final = float(u_curve[-1])
            u_finals = [r["final_success"] for r in uniform]
            baselines[variant_of(key[1])] = (u_final, steps_to_reach(u_steps, u_curve, u_final), u_finals)
        plain = baselines.get("", next(iter(baselines.values()), (float("nan"), float("nan"), [])))
        entries = {}
        for key in sorted((k for k in groups if k[0] == task), key=lambda k: (k[1], k[2], k[3])):
            u_final, u_reach, u_finals = baselines.get(variant_of(key[1]), plain)
            steps, curve, half = mean_curve(groups[key])
            finals = [r["final_success"] for r in groups[key]]
            shares = [r["demo_share"] for r in groups[key] if r.get("demo_share") is not None]
            reach = steps_to_reach(steps, curve, u_final)
            entries[label(*key[1:])] = {
                "mode": key[1], "noise": key[2], "aux_weight": key[3], "seeds": len(finals),
                "budget_steps": int(steps[-1]) if len(steps) else 0,
                "final_success_mean": float(np.mean(finals)), "final_success_std": float(np.std(finals)),
                "success_gain_vs_uniform": (float(np.mean(finals)) - u_final) / u_final if u_final > 0 else None,
                "steps_to_uniform_final": None if math.isnan(reach) else reach,
                "step_saving_vs_uniform": None if math.isnan(reach) or math.isnan(u_reach) else 1 - reach / u_reach,
                "demo_share_mean": float(np.mean(shares)) if shares else None,
                "mean_success_over_evals": float(curve.mean()) if len(curve) else float("nan"),
                "p_vs_uniform": welch_p(finals, u_finals) if key[1].split("[")[0] != "uniform" else None,
                "curve": {"steps": steps.tolist(), "mean": curve.tolist(), "ci95": half.tolist()},
            }  # fmt: skip
        summary[task] = {"uniform_final_success": plain[0], "settings": entries}
    return summary


def plot(summary: dict, out: Path) -> list[Path]:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    paths = []
    for task, data in summary.items():
        fig, ax = plt.subplots(figsize=(8, 5))
        for name, entry in data["settings"].items():
            c = entry["curve"]
            steps, mean, half = np.array(c["steps"]), np.array(c["mean"]), np.array(c["ci95"])
            (line,) = ax.plot(
                steps, mean, label=f"{name} (n={entry['seeds']})", lw=2 if entry["noise"] == 0.2 else 1
            )
            ax.fill_between(
                steps,
                np.clip(mean - half, 0, 1),
                np.clip(mean + half, 0, 1),
                color=line.get_color(),
                alpha=0.12,
            )
        ax.set(
            xlabel="env steps",
            ylabel="evaluation success rate",
            title=task_title(task).replace("`", ""),
            ylim=(-0.02, 1.02),
        )
        ax.grid(alpha=0.3)
        ax.legend(fontsize=7, loc="upper left")
        fig.tight_layout()
        path = out / f"curves_{task}.png"
        fig.savefig(path, dpi=110)
        plt.close(fig)
        paths.append(path)
    return paths


def markdown(summary: dict) -> str:
    lines = []
    for task, data in summary.items():
        demos = any(e.get("demo_share_mean") is not None for e in data["settings"].values())
        lines += [
            f"**{task_title(task)}** (uniform replay's final success: {data['uniform_final_success']:.0%})",
            "",
            "| replay | seeds | budget (env steps) | success at budget (mean ± sd) | vs uniform | steps to uniform's final success | step saving | mean success over evaluations |"
            + (" replayed demos |" if demos else "") + " p vs uniform (Welch t, success at budget) |",
            "|---|---|---|---|---|---|---|---|" + ("---|" if demos else "") + "---|",
        ]  # fmt: skip
        for name, e in data["settings"].items():
            gain = "-" if e["success_gain_vs_uniform"] is None else f"{e['success_gain_vs_uniform']:+.0%}"
            reach = "-" if e["steps_to_uniform_final"] is None else f"{e['steps_to_uniform_final']:,.0f}"
            saving = "-" if e["step_saving_vs_uniform"] is None else f"{e['step_saving_vs_uniform']:+.0%}"
            share = e.get("demo_share_mean")
            lines.append(
                f"| {name} | {e['seeds']} | {e['budget_steps']:,} | {e['final_success_mean']:.0%} ± "
                f"{e['final_success_std']:.0%} | {gain} | {reach} | {saving} | {e['mean_success_over_evals']:.0%} |"
                + ((" - |" if share is None else f" {share:.1%} |") if demos else "")
                + (" - |" if e.get("p_vs_uniform") is None else f" {e['p_vs_uniform']:.2f} |")
            )
        lines.append("")
    return "\n".join(lines)


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument(
        "results", type=Path, nargs="?", default=Path(__file__).resolve().parents[1] / "results" / "replay"
    )
    parser.add_argument("--json", type=Path, help="also write the summary here")
    args = parser.parse_args()
    rows = load(args.results / "results.jsonl")
    if not rows:
        print(f"no results in {args.results / 'results.jsonl'}", file=sys.stderr)
        return 1
    summary = analyse(rows)
    (args.results / "summary.json").write_text(json.dumps(summary, indent=2))
    (args.results / "results.md").write_text(markdown(summary))
    for path in plot(summary, args.results):
        print(f"wrote {path}")
    if args.json:
        args.json.write_text(json.dumps(summary, indent=2))
    print(markdown(summary))
    return 0


if __name__ == "__main__":
    sys.exit(main())
