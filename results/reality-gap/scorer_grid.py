"""Issue #19 item 3: does a learned scorer's ranking survive the randomised frames?

Runs the lift task's scripted expert (privileged, so it acts the same whatever the camera sees) over the
held-out perturbation grid of a preset and scores every row's frames with learned scorers fitted on the
nominal twin (results/scorers: `vlmrl scorer fit` on 20 scripted lift episodes, front camera, 64 px).
Writes scorer_grid.md / scorer_grid.json beside this file.

    MUJOCO_GL=egl OMP_NUM_THREADS=1 PYTHONPATH=. .venv/bin/python results/reality-gap/scorer_grid.py \
        --students runs/scorers/student-success.pt runs/scorers/student-oracle0.2.pt --episodes 10
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import torch

from sim import SimConfig, make_env
from sim.errors import SimError
from sim.so101.scripted import ScriptedPolicy
from vlm import make_scorer
from vlm.config import LearnedConfig
from vlmrl.evaluation.perturbation_grid import OVERALL, GridSpec, run_grid


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--students", nargs="+", type=Path, required=True)
    parser.add_argument("--perturb", default="medium")
    parser.add_argument("--episodes", type=int, default=10)
    parser.add_argument("--out", type=Path, default=Path(__file__).parent / "scorer_grid")
    args = parser.parse_args()
    torch.set_num_threads(1)
    env = make_env(SimConfig(task="lift", cameras=("front",), image_size=64))
    expert = ScriptedPolicy(env)

    def policy(obs: dict) -> object:
        if env.unwrapped._steps == 0:  # a new episode: the expert starts its phases again
            expert.reset()
        try:
            return expert.act(obs)
        except SimError:  # a perturbed episode the expert lost (its waypoint left the reach): hold still
            return env.unwrapped.joint_targets_array()

    spec = GridSpec(perturb=args.perturb, episodes=args.episodes, views=0)
    results = {}
    for path in args.students:
        scorer = make_scorer(LearnedConfig(path=str(path)))
        results[path.stem] = run_grid(env, policy, spec, scorer, "learned").summary
        scorer.close()
    env.close()
    names = list(next(iter(results.values())))
    lines = [
        f"Scripted lift expert over the held-out `{args.perturb}` grid ({args.episodes} episodes per row, "
        "magnitudes 1-1.5x the preset's ranges); ROC-AUC of each learned scorer on every window of the row.",
        "",
        "| perturbation | expert success | " + " | ".join(f"`{s}` AUC" for s in results) + " |",
        "|---|---|" + "---|" * len(results),
    ]
    for name in names:
        first = next(iter(results.values()))[name]
        aucs = [r[name]["scorer_auc"] for r in results.values()]
        cells = " | ".join("-" if a is None else f"{a:.3f}" for a in aucs)
        lines.append(f"| {name} | {100 * first['success_rate']:.0f}% | {cells} |")
    text = "\n".join(lines) + "\n"
    args.out.with_suffix(".md").write_text(text)
    args.out.with_suffix(".json").write_text(json.dumps(results, indent=2) + "\n")
    print(text)
    print("overall:", {k: v[OVERALL]["scorer_auc"] for k, v in results.items()})


if __name__ == "__main__":
    main()
