#!/usr/bin/env bash
# VLM-guided replay on top of the lift learner's recipe J (D + 10 critics; issue #13, item 4): twin lift,
# 25 demonstrations, 20k steps, 5 seeds. The uniform[J] rows are the lift-learner study's GJ runs
# (results/lift-learner/GJ-s*.json, committed), added by uniform_from_lift_learner.py.
# usage: results/replay-recipe-j/reproduce.sh OUT   (from the repository root; REPRODUCE_DRY_RUN=1 prints the commands)
# OUT gets results.jsonl, the runs, results.md, summary.json and the curves (compare with
# results/replay-recipe-j). Finished runs are skipped on a rerun.
set -euo pipefail
OUT=${1:?usage: results/replay-recipe-j/reproduce.sh OUT}
source results/lib.sh
provenance "$OUT/provenance.txt"
C=(--out "$OUT" --tasks lift --demo-episodes 25 --layer-norm --aux-weights 0 --total-steps 20000 --eval-every-steps 2500
  --eval-episodes 20 --workers 2 --variant J --train-arg=--buffer.gamma=0.95 --train-arg=--agent.bc-weight=0.4
  --train-arg=--agent.no-bc-q-filter --train-arg=--agent.num-critics=10)
python_script benchmarks/replay_experiment.py "${C[@]}" --modes vlm_td --seeds 0 1 2 3 4 --noise 0
python_script benchmarks/replay_experiment.py "${C[@]}" --modes vlm_td --seeds 0 1 2 3 4 --noise 0.2
python_script benchmarks/replay_experiment.py "${C[@]}" --modes vlm --seeds 0 1 2 3 4 --noise 0
python_script benchmarks/replay_experiment.py "${C[@]}" --modes per --seeds 0 1 2 3 4
python_script benchmarks/replay_experiment.py "${C[@]}" --modes vlm --seeds 0 1 2 3 4 --noise 0.2
python_script results/replay-recipe-j/uniform_from_lift_learner.py --out "$OUT"
python_script benchmarks/replay_analysis.py "$OUT"
