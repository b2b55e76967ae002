"""Critic diagnostics of replay-experiment runs: is Q bounded by the largest possible return?

With a sparse reward r in {0, 1} per step and discount gamma, no return exceeds 1 / (1 - gamma) (100 at
gamma 0.99; the entropy bonus adds little at the learned alpha). A mean critic estimate far above that
means the critic diverged (extrapolation error on actions the data does not cover), and then success
curves say more about the divergence than about the replay mode. Reads each run's TensorBoard scalars.

    python benchmarks/replay_diagnostics.py results/replay --match 'lift-demos25-(uniform|per|vlm)'
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from pathlib import Path

import numpy as np


def last_fifth_mean(run_dir: Path, tag: str) -> float | None:
    """Mean of a training scalar over the last fifth of the run's steps (None when not logged)."""
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

    acc = EventAccumulator(str(run_dir / "tb"), size_guidance={"scalars": 0})
    acc.Reload()
    if tag not in acc.Tags().get("scalars", []):
        return None
    events = acc.Scalars(tag)
    steps = np.array([e.step for e in events])
    values = np.array([e.value for e in events])
    return float(values[steps >= 0.8 * steps.max()].mean())


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("results", type=Path, help="a replay_experiment.py --out folder")
    parser.add_argument("--match", default="", help="only runs whose name this regular expression finds")
    parser.add_argument("--json", type=Path, help="write the per-run figures here")
    args = parser.parse_args()
    rows = [json.loads(line) for line in (args.results / "results.jsonl").read_text().splitlines() if line]
    figures = {}
    for row in rows:
        run_dir = args.results / "runs" / row["name"]
        if not re.search(args.match, row["name"]) or not (run_dir / "tb").exists():
            continue
        figures[row["name"]] = {
            "q_mean_last_fifth": last_fifth_mean(run_dir, "train/q_mean"),
            "alpha_last_fifth": last_fifth_mean(run_dir, "train/alpha"),
            "final_success": row["final_success"],
        }
    if not figures:
        print(
            f"no runs with TensorBoard logs under {args.results / 'runs'} match {args.match!r}",
            file=sys.stderr,
        )
        return 1
    bound = 1 / (1 - 0.99)
    print(f"{'run':<62} {'Q (last 1/5)':>12} {'alpha':>7} {'success':>8}")
    for name, f in sorted(figures.items()):
        q, alpha = f["q_mean_last_fifth"], f["alpha_last_fifth"]
        print(f"{name:<62} {q if q is not None else float('nan'):>12.4g} "
              f"{alpha if alpha is not None else float('nan'):>7.3g} {f['final_success']:>8.0%}")  # fmt: skip
    qs = [f["q_mean_last_fifth"] for f in figures.values() if f["q_mean_last_fifth"] is not None]
    diverged = sum(q > bound for q in qs)
    print(f"{diverged} of {len(qs)} runs end with mean Q above the largest possible return {bound:.0f}")
    if args.json:
        args.json.write_text(json.dumps({"bound": bound, "diverged": diverged, "runs": figures}, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
