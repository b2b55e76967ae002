#!/usr/bin/env bash
# VLM-guided replay with the oracle scorer and label noise (issue #8): reach, lift, and lift with 25
# demonstrations (plain and LayerNorm critics). Many hours on 2 cores.
# usage: results/replay/reproduce.sh OUT   (from the repository root; REPRODUCE_DRY_RUN=1 prints the commands)
# OUT gets results.jsonl, the runs, diagnostics_*.json, summary.json, results.md and curves_*.png (compare with
# results/replay). replay_experiment.py skips finished runs and resumes interrupted ones, so a rerun resumes.
set -euo pipefail
OUT=${1:?usage: results/replay/reproduce.sh OUT}
source results/lib.sh
provenance "$OUT/provenance.txt"
grid() { python_script benchmarks/replay_experiment.py --out "$OUT" --workers 2 "$@"; }
LIFT=(--tasks lift --total-steps 20000 --eval-every-steps 2500)
D25=("${LIFT[@]}" --demo-episodes 25 --eval-episodes 20)

grid --tasks reach --seeds 0 1 2 --noise 0 0.2 0.4 --aux-weights 0 --total-steps 5000 --eval-every-steps 500 --eval-episodes 10
grid --tasks reach --modes vlm --seeds 0 1 2 --noise 0 0.2 0.4 --aux-weights 0 1 --total-steps 5000 --eval-every-steps 500 --eval-episodes 10
grid "${LIFT[@]}" --modes uniform per vlm vlm_td --seeds 0 1 2 --noise 0.2 --aux-weights 0 --eval-episodes 10
# lift with 25 scripted demonstrations, plain critic (it diverged: see diagnostics_lift-demos25.json)
grid "${D25[@]}" --seeds 0 1 2 --noise 0 0.2 0.4 --aux-weights 0
grid "${D25[@]}" --modes vlm --seeds 0 1 2 --noise 0.2 --aux-weights 1
python_script benchmarks/replay_diagnostics.py "$OUT" --match 'lift-demos25-(uniform|per|vlm)' --json "$OUT/diagnostics_lift-demos25.json"
# the same with a LayerNorm critic (the main result): seeds 0-2 for everything, seeds 3-4 for uniform, per and vlm
grid "${D25[@]}" --layer-norm --seeds 0 1 2 --noise 0 0.2 0.4 --aux-weights 0
grid "${D25[@]}" --layer-norm --modes vlm --seeds 0 1 2 --noise 0.2 --aux-weights 1
grid "${D25[@]}" --layer-norm --modes uniform per vlm --seeds 3 4 --noise 0 0.2 0.4 --aux-weights 0
# sharper VLM mix (warm-up 2,000 learner steps, lambda 0.9) at noise 0.2
grid "${D25[@]}" --layer-norm --modes vlm --seeds 0 1 2 --noise 0.2 --aux-weights 0 --variant strong \
  --train-arg=--vlm-sampler.warmup-steps=2000 --train-arg=--vlm-sampler.lambda-end=0.9
python_script benchmarks/replay_diagnostics.py "$OUT" --match 'lift-demos25-ln' --json "$OUT/diagnostics_lift-demos25-ln.json"
python_script benchmarks/replay_analysis.py "$OUT"
