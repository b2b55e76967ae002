#!/usr/bin/env bash
# Issue #19 evidence with h13's final reach recipe (results/pixel-reach: joint-delta actions, asymmetric
# critic + privileged auxiliary loss, 10k steps): h13's three unrandomised policies on the held-out grids,
# and the same recipe trained with --sim.randomize.preset medium (then light), seed 0.
set -uo pipefail
export MUJOCO_GL=egl PYOPENGL_PLATFORM=egl OMP_NUM_THREADS=1 PYTHONPATH=$PWD
V=".venv/bin/python -m vlmrl"
D=runs/reality-gap
evaluate() {  # policy name grid
  local OUT=$D/eval-$2; [ $3 = light ] && OUT=$D/evallight-$2
  [ -f $OUT/evaluate.json ] && return
  echo "$(date -u +%T) evaluate $2 on $3"
  $V evaluate --policy $1 --perturb $3 --episodes 10 --seed 0 --out-dir $OUT > $OUT.log 2>&1
}
for seed in 0 1 2; do for grid in medium light; do
  evaluate /tmp/h13/runs/delta-recipe-s$seed/policy.pt recipe-nominal-s$seed $grid
done; done
while pgrep -f "train-light16k-s0" > /dev/null; do sleep 5; done   # one training at a time
for cond in medium light; do
  RUN=$D/train-recipe-$cond-s0
  echo "$(date -u +%T) train recipe $cond seed 0"
  $V train --sim.task reach --policy-obs robot --replay uniform --eval-every-steps 1000 --eval-episodes 10 \
    --no-progress --video-episodes 0 --torch-threads 1 --buffer.storage memory --sim.reward shaped \
    --run-dir $RUN --total-steps 10000 --sim.action-mode delta --asymmetric-critic \
    --agent.privileged-aux-weight 1.0 --seed 0 --sim.randomize.preset $cond > $D/train-recipe-$cond-s0.log 2>&1
  for grid in medium light; do evaluate $RUN/policy.pt recipe-$cond-s0 $grid; done
done
echo "$(date -u +%T) done"
