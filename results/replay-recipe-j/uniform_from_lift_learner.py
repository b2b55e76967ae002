"""Add the lift learner's J runs (results/lift-learner/GJ-s*.json) to this folder's results.jsonl as the
uniform[J] rows, so `benchmarks/replay_analysis.py` compares vlm_td[J] with them.

They are the same runs a `replay_experiment.py --modes uniform --variant J` grid would have made: the same
`vlmrl train` options and commit (09b60c9); the lift-learner runner (now `results/lift-learner/reproduce.sh`) differs only in keeping the buffer in
RAM and writing no checkpoints, and for recipe D the two runners gave identical curves seed for seed
(results/replay-recipe-d/README.md). Each row names its source file.

    python results/replay-recipe-j/uniform_from_lift_learner.py [--out DIR]   # DIR/results.jsonl (default: here)
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

HERE = Path(__file__).resolve().parent
SOURCE = HERE.parent / "lift-learner"
TRAIN_ARGS = [
    "--buffer.gamma=0.95",
    "--agent.bc-weight=0.4",
    "--agent.no-bc-q-filter",
    "--agent.num-critics=10",
]


def row(run: dict, source: Path) -> dict:
    steps = run["curve_steps"]
    evals = dict(zip(steps, run["curve_success"]))  # the final evaluation repeats the last step's
    seed = int(run["seed"])
    return {
        "task": "lift", "mode": "uniform", "noise": 0.0, "aux_weight": 0.0, "seed": seed,
        "total_steps": 20000, "eval_every_steps": 2500, "eval_episodes": 20, "demo_episodes": 25,
        "layer_norm": True, "variant": "J", "train_args": TRAIN_ARGS, "scorer": "scorer:oracle",
        "name": f"lift-demos25-ln-uniform-J-noise0-aux0-seed{seed}-steps20000",
        "evals": [{"step": float(s), "success_rate": v} for s, v in evals.items()],
        "final_success": run["curve_success"][-1], "demo_share": None, "wall_s": run["wall_s"],
        "commit": run["git_commit"][:7], "tree_clean": run["tree_clean"], "cpu": run["cpu_model"], "cores": 2,
        "source": str(source.relative_to(HERE.parent.parent)),
    }  # fmt: skip


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=HERE, help="the folder whose results.jsonl gets the rows")
    out = parser.parse_args().out / "results.jsonl"
    lines = [json.loads(x) for x in out.read_text().splitlines() if x.strip()] if out.exists() else []
    kept = [x for x in lines if x["mode"] != "uniform"]
    new = [row(json.loads(p.read_text()), p) for p in sorted(SOURCE.glob("GJ-s*.json"))]
    out.write_text("".join(json.dumps(x) + "\n" for x in [*new, *kept]))
    print(f"{out}: {len(new)} uniform[J] rows from {SOURCE}, {len(kept)} other rows kept")


if __name__ == "__main__":
    main()
