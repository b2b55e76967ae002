#!/usr/bin/env bash
# VLM-guided replay steered by a learned pixel scorer (issue #14): twin lift, 25 demonstrations, 10k steps,
# 5 seeds; uniform, the oracle at noise 0 and 0.2, and results/scorers' student-success student.
# usage: results/replay-learned/reproduce.sh OUT   (from the repository root; REPRODUCE_DRY_RUN=1 prints the commands)
# OUT/scorers gets the student (results/scorers/reproduce.sh); OUT gets results.jsonl, the runs, results.md,
# summary.json and the curves (compare with results/replay-learned). Finished runs are skipped on a rerun.
set -euo pipefail
OUT=${1:?usage: results/replay-learned/reproduce.sh OUT}
source results/lib.sh
provenance "$OUT/provenance.txt"
finished "$OUT/scorers/student-success.pt" || bash results/scorers/reproduce.sh "$OUT/scorers"
C=(--out "$OUT" --tasks lift --demo-episodes 25 --layer-norm --seeds 0 1 2 3 4 --aux-weights 0 --total-steps 10000
  --eval-every-steps 2500 --eval-episodes 20 --workers 2)
python_script benchmarks/replay_experiment.py "${C[@]}" --modes uniform vlm --noise 0 0.2
python_script benchmarks/replay_experiment.py "${C[@]}" --modes vlm --noise 0 --variant learned \
  --scorer "scorer:learned --scorer.path $OUT/scorers/student-success.pt"
python_script benchmarks/replay_analysis.py "$OUT"
