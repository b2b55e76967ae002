"""Is a run's drop after its best evaluation real? Re-evaluate its best and its final policy on fresh seeds.

A run's curve evaluates 20 episodes on the same seeds every 2,500 steps, and ``best_policy.pt`` is the
policy of the highest of those evaluations. The best of twelve noisy evaluations is biased upwards, so
"best minus the mean of the last three" (issue #32's collapse figure) is positive for a learner that never
changes: about 15 points at a flat 75% success with 20-episode evaluations. This benchmark measures the
drop without that bias: ``best_policy.pt`` and ``policy.pt`` of each run on ``--episodes`` seeds that
neither training nor its evaluations used, with a two-proportion z-test per run and over all runs.

    python benchmarks/reevaluate.py runs/deployable/lift-s0 runs/deployable/lift-s1 --episodes 100 \\
        --json results/deployable/reevaluate.json
"""

from __future__ import annotations

import argparse
import json
import math
import time
from pathlib import Path
from typing import Any

from replay_experiment import provenance

REEVAL_SEED_BASE = 3_000_000
"""Fresh seeds: training uses seeds below 1,000,000, its evaluations 1,000,000 + 1000 x seed + i."""


def two_proportion_p(successes_a: int, n_a: int, successes_b: int, n_b: int) -> float:
    """Two-sided p-value of a two-proportion z-test (pooled); 1.0 when both rates are 0 or 1."""
    pooled = (successes_a + successes_b) / (n_a + n_b)
    se = math.sqrt(pooled * (1 - pooled) * (1 / n_a + 1 / n_b))
    if se == 0:
        return 1.0
    z = (successes_a / n_a - successes_b / n_b) / se
    return math.erfc(abs(z) / math.sqrt(2))


def success_on_fresh_seeds(policy_path: Path, episodes: int, seed_base: int) -> list[bool]:
    """Per-episode success of an exported policy in the nominal twin it was trained in."""
    from agents.export import load_policy
    from sim.factory import make_env
    from vlmrl.evaluation.episodes import evaluate
    from vlmrl.pipelines.evaluate import Config, sim_config_for

    policy = load_policy(policy_path)
    env = make_env(sim_config_for(policy.run, Config(policy=policy_path)))
    try:
        result = evaluate(env, policy, [seed_base + i for i in range(episodes)])
    finally:
        env.close()
    return [e.success for e in result.episodes]


def reevaluate(run_dir: Path, episodes: int) -> dict[str, Any]:
    """The run's curve figures beside its best and final policy on fresh seeds."""
    from replay_experiment import read_evals

    evals = [(int(e["step"]), e["success_rate"]) for e in read_evals(run_dir) if "success_rate" in e]
    rates = [rate for _, rate in evals]
    started = time.monotonic()
    best = success_on_fresh_seeds(run_dir / "best_policy.pt", episodes, REEVAL_SEED_BASE)
    final = success_on_fresh_seeds(run_dir / "policy.pt", episodes, REEVAL_SEED_BASE)
    return {
        "run": str(run_dir),
        "curve": evals,
        "curve_best": max(rates) if rates else None,
        "curve_last3": sum(rates[-3:]) / len(rates[-3:]) if rates else None,
        "episodes": episodes,
        "best_fresh": sum(best) / episodes,
        "final_fresh": sum(final) / episodes,
        "p_best_vs_final": two_proportion_p(sum(best), episodes, sum(final), episodes),
        "wall_s": round(time.monotonic() - started, 1),
    }


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("runs", nargs="+", type=Path, help="finished vlmrl train run directories")
    parser.add_argument("--episodes", type=int, default=100, help="fresh-seed episodes per policy")
    parser.add_argument("--json", type=Path, help="write the figures here")
    args = parser.parse_args()
    import torch

    torch.set_num_threads(1)
    rows = []
    for run_dir in args.runs:
        row = reevaluate(run_dir, args.episodes)
        rows.append(row)
        print(
            f"{run_dir}: curve best {100 * row['curve_best']:.0f}%, last three {100 * row['curve_last3']:.0f}%; "
            f"fresh seeds ({args.episodes}): best policy {100 * row['best_fresh']:.0f}%, "
            f"final {100 * row['final_fresh']:.0f}% (p = {row['p_best_vs_final']:.2f})"
        )
    n = args.episodes * len(rows)
    best_all = round(sum(r["best_fresh"] * args.episodes for r in rows))
    final_all = round(sum(r["final_fresh"] * args.episodes for r in rows))
    summary = {
        "curve_best_minus_last3": sum(r["curve_best"] - r["curve_last3"] for r in rows) / len(rows),
        "fresh_best_minus_final": (best_all - final_all) / n,
        "p_best_vs_final": two_proportion_p(best_all, n, final_all, n),
    }
    print(
        f"all runs: curve best - last three {100 * summary['curve_best_minus_last3']:.1f} points; "
        f"on fresh seeds best - final {100 * summary['fresh_best_minus_final']:.1f} points "
        f"(p = {summary['p_best_vs_final']:.2f})"
    )
    if args.json:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(json.dumps({"runs": rows, "summary": summary, **provenance()}, indent=2) + "\n")


if __name__ == "__main__":
    main()
