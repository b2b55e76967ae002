#!/usr/bin/env bash
# VLM-guided replay with robot observations (joints + camera), recipe D, the former 3x3 encoder (issue #13,
# item 4, robot half): twin lift, 25 demonstrations, 20k steps, 5 seeds. Today's code has the patch-embedding
# encoder (results/replay-robot-patch): a rerun at HEAD measures that, not the encoder these runs had.
# usage: results/replay-robot/reproduce.sh OUT   (from the repository root; REPRODUCE_DRY_RUN=1 prints the commands)
# OUT gets results.jsonl, the runs, results.md, summary.json and the curves. Finished runs are skipped on a rerun.
set -euo pipefail
OUT=${1:?usage: results/replay-robot/reproduce.sh OUT}
source results/lib.sh
provenance "$OUT/provenance.txt"
C=(--out "$OUT" --tasks lift --demo-episodes 25 --layer-norm --aux-weights 0 --total-steps 20000 --eval-every-steps 2500
  --eval-episodes 20 --workers 2 --variant D-robot --train-arg=--buffer.gamma=0.95 --train-arg=--agent.bc-weight=0.4
  --train-arg=--agent.no-bc-q-filter --train-arg=--policy-obs=robot --train-arg=--asymmetric-critic
  --train-arg=--agent.privileged-aux-weight=1.0 --train-arg=--buffer.storage=memory)
python_script benchmarks/replay_experiment.py "${C[@]}" --modes uniform vlm_td --seeds 0 1 2 3 4 --noise 0
python_script benchmarks/replay_experiment.py "${C[@]}" --modes per --seeds 0 1 2 3 4 --noise 0
python_script benchmarks/replay_analysis.py "$OUT"
