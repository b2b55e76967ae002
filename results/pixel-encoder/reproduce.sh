#!/usr/bin/env bash
# The patch-embedding encoder (issue #13): its update cost, reach and lift from robot observations with the
# README recipes, a second 3x3 conv, and lift with 64 px policy images, a 40k budget and an averaged actor.
# usage: results/pixel-encoder/reproduce.sh OUT   (from the repository root; REPRODUCE_DRY_RUN=1 prints the commands)
# OUT gets pixel_cost.json, the runs and their logs, runs.json + results.md, variant/runs.json and
# variants.json/.md/.png (compare with results/pixel-encoder). A finished run is skipped on a rerun.
set -euo pipefail
OUT=${1:?usage: results/pixel-encoder/reproduce.sh OUT}
source results/lib.sh
COMMIT=$(git rev-parse --short HEAD)
provenance "$OUT/provenance.txt"
finished "$OUT/pixel_cost.json" || python_script benchmarks/pixel_learning.py --cost-only --json "$OUT/pixel_cost.json"
REACH=(--sim.task reach --policy-obs robot --sim.action-mode delta --sim.reward shaped --replay uniform
  --total-steps 10000 --asymmetric-critic --agent.privileged-aux-weight 1.0 --eval-every-steps 1000
  --eval-episodes 20 --buffer.storage memory --video-episodes 0 --no-progress)
LIFT=(--sim.task lift --policy-obs robot --demo-episodes 25 --agent.layer-norm --replay uniform --asymmetric-critic
  --agent.privileged-aux-weight 1.0 --buffer.gamma 0.95 --agent.bc-weight 0.4 --agent.no-bc-q-filter
  --eval-every-steps 2500 --eval-episodes 20 --buffer.storage memory --video-episodes 0 --no-progress)
# the README recipes with the default encoder (summarize.py reads OUT/<task>-robot-s<seed>/tb and .log)
for seed in 0 1 2; do train_run "$OUT" reach-robot-s$seed "${REACH[@]}" --seed $seed; done
for seed in 0 1 2 3 4; do train_run "$OUT" lift-robot-s$seed "${LIFT[@]}" --total-steps 20000 --seed $seed; done
python_script results/pixel-encoder/summarize.py "$OUT" "$COMMIT" "$OUT"
# a second 3x3 conv after the patch embedding, seeds 0-2
for seed in 0 1 2; do
  train_run "$OUT/variant" lift-robot-s$seed "${LIFT[@]}" --total-steps 20000 --seed $seed --agent.pixel.num-layers 3
done
python_script results/pixel-encoder/summarize.py "$OUT/variant" "$COMMIT" "$OUT/variant"
# policy image size and budget: 64 px images (image-size 0: the frames' own), 40k steps, 40k with an averaged actor
for seed in 0 1 2 3 4; do
  train_run "$OUT/variants" lift-robot-px0-steps20000-s$seed "${LIFT[@]}" --total-steps 20000 --seed $seed --agent.pixel.image-size 0
  train_run "$OUT/variants" lift-robot-px32-steps40000-s$seed "${LIFT[@]}" --total-steps 40000 --seed $seed --agent.pixel.image-size 32
  train_run "$OUT/variants" lift-robot-px32-steps40000-ema-s$seed "${LIFT[@]}" --total-steps 40000 --seed $seed \
    --agent.pixel.image-size 32 --agent.actor-ema 0.005
done
python_script results/pixel-encoder/variants.py "$OUT/variants" "$COMMIT" --out "$OUT"
