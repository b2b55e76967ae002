#!/bin/bash
# evaluate one policy on the held-out light and medium grids (10 episodes a row, seed 0)
set -u
NAME=$1; POLICY=$2
cd /work/exp14c
export MUJOCO_GL=egl PYOPENGL_PLATFORM=egl PYTHONPATH=/work/exp14c OMP_NUM_THREADS=1
for grid in light medium; do
  .venv/bin/python -m vlmrl evaluate --policy $POLICY --perturb $grid --episodes 10 --seed 0 --out-dir /work/exp14-out/rg/eval-$grid-$NAME > /work/exp14-out/rg/eval-$grid-$NAME.log 2>&1
  echo "$NAME $grid rc $?" >> /work/exp14-out/rg/eval.out
done
