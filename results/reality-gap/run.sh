#!/usr/bin/env bash
# Issue #19 evidence: reach with robot observations (h13's recipe), trained with and without
# --sim.randomize.preset medium, each evaluated on the nominal twin and the held-out medium grid.
set -uo pipefail
export MUJOCO_GL=egl PYOPENGL_PLATFORM=egl OMP_NUM_THREADS=1 PYTHONPATH=$PWD
V=".venv/bin/python -m vlmrl"
D=runs/reality-gap
for seed in 0 1 2; do
  for cond in nominal medium; do
    RUN=$D/train-$cond-s$seed
    EXTRA=""
    [ $cond = medium ] && EXTRA="--sim.randomize.preset medium"
    if [ ! -f $RUN/policy.pt ]; then
      echo "$(date -u +%T) train $cond seed $seed"
      /usr/bin/time -v $V train --sim.task reach --policy-obs robot --replay uniform --total-steps 8000 \
        --eval-every-steps 1000 --eval-episodes 10 --seed $seed --run-dir $RUN --no-progress \
        --video-episodes 0 --torch-threads 1 --buffer.storage memory \
        --sim.action-mode ee_delta --sim.reward shaped $EXTRA > $D/train-$cond-s$seed.log 2>&1
    fi
    echo "$(date -u +%T) evaluate $cond seed $seed"
    $V evaluate --policy $RUN/policy.pt --perturb medium --episodes 10 --seed 0 \
      --out-dir $D/eval-$cond-s$seed > $D/eval-$cond-s$seed.log 2>&1
    echo "$(date -u +%T) done $cond seed $seed"
  done
done
