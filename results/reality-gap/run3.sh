#!/usr/bin/env bash
# Issue #19 evidence, third part: does randomised training catch up with twice the steps? light, 16k steps, seed 0.
set -uo pipefail
export MUJOCO_GL=egl PYOPENGL_PLATFORM=egl OMP_NUM_THREADS=1 PYTHONPATH=$PWD
V=".venv/bin/python -m vlmrl"
D=runs/reality-gap
while kill -0 $(cat $D/driver2.pid) 2>/dev/null; do sleep 5; done
RUN=$D/train-light16k-s0
echo "$(date -u +%T) train light 16k seed 0"
$V train --sim.task reach --policy-obs robot --replay uniform --total-steps 16000 \
  --eval-every-steps 2000 --eval-episodes 10 --seed 0 --run-dir $RUN --no-progress \
  --video-episodes 0 --torch-threads 1 --buffer.storage memory \
  --sim.action-mode ee_delta --sim.reward shaped --sim.randomize.preset light > $D/train-light16k-s0.log 2>&1
for grid in medium light; do
  OUT=$D/eval-light16k-s0; [ $grid = light ] && OUT=$D/evallight-light16k-s0
  echo "$(date -u +%T) evaluate light16k on $grid"
  $V evaluate --policy $RUN/policy.pt --perturb $grid --episodes 10 --seed 0 --out-dir $OUT > $OUT.log 2>&1
done
echo "$(date -u +%T) done"
