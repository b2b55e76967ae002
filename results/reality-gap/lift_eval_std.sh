#!/bin/bash
# Evaluate one policy on the held-out light and medium grids (10 episodes a row, seed 0), as lift_eval.sh.
#   results/reality-gap/lift_eval_std.sh /path/to/clone OUT_DIR light-std-s0 OUT_DIR/light-std-s0/policy.pt
set -u
CLONE=$1; OUT=$2; NAME=$3; POLICY=$4
cd "$CLONE"
export MUJOCO_GL=egl PYOPENGL_PLATFORM=egl PYTHONPATH="$CLONE" OMP_NUM_THREADS=1
mkdir -p "$OUT/evals"
for grid in light medium; do
  .venv/bin/python -m vlmrl evaluate --policy "$POLICY" --perturb $grid --episodes 10 --seed 0 --out-dir "$OUT/evals/eval-$grid-$NAME" > "$OUT/evals/eval-$grid-$NAME.log" 2>&1
  echo "$NAME $grid rc $? commit $(git rev-parse --short HEAD)" >> "$OUT/evals/eval.out"
done
