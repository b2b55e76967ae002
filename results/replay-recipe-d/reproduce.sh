#!/usr/bin/env bash
# VLM-guided replay on top of the lift learner's recipe D (issue #13, item 4, state half): twin lift,
# 25 demonstrations, 20k steps, the oracle at noise 0 and 0.2.
# usage: results/replay-recipe-d/reproduce.sh OUT   (from the repository root; REPRODUCE_DRY_RUN=1 prints the commands)
# OUT gets results.jsonl, the runs, results.md, summary.json and the curves (compare with
# results/replay-recipe-d). Finished runs are skipped on a rerun.
set -euo pipefail
OUT=${1:?usage: results/replay-recipe-d/reproduce.sh OUT}
source results/lib.sh
provenance "$OUT/provenance.txt"
C=(--out "$OUT" --tasks lift --demo-episodes 25 --layer-norm --aux-weights 0 --total-steps 20000 --eval-every-steps 2500
  --eval-episodes 20 --workers 2 --variant D --train-arg=--buffer.gamma=0.95 --train-arg=--agent.bc-weight=0.4
  --train-arg=--agent.no-bc-q-filter)
python_script benchmarks/replay_experiment.py "${C[@]}" --modes uniform per vlm vlm_td --seeds 0 1 2 --noise 0 0.2
python_script benchmarks/replay_experiment.py "${C[@]}" --modes uniform vlm vlm_td --seeds 3 4 --noise 0
python_script benchmarks/replay_experiment.py "${C[@]}" --modes vlm vlm_td --seeds 3 4 --noise 0.2
python_script benchmarks/replay_analysis.py "$OUT"
