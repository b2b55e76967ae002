#!/bin/bash
# lift, robot observations, recipe D, trained under --sim.randomize.preset light (issue #19 evidence)
set -u
SEED=$1
cd /work/exp14c
export MUJOCO_GL=egl PYOPENGL_PLATFORM=egl PYTHONPATH=/work/exp14c OMP_NUM_THREADS=1
RUN=/work/exp14-out/rg/train-lift-light-s$SEED
T0=$(date +%s)
.venv/bin/python -m vlmrl train --sim.task lift --replay uniform --eval-episodes 20 --no-progress --video-episodes 0 --torch-threads 1 --buffer.storage memory --total-steps 20000 --eval-every-steps 2500 --demo-episodes 25 --agent.layer-norm --seed $SEED --policy-obs robot --asymmetric-critic --agent.privileged-aux-weight 1.0 --buffer.gamma 0.95 --agent.bc-weight 0.4 --agent.no-bc-q-filter --sim.randomize.preset light --run-dir $RUN > $RUN.log 2>&1
echo "seed $SEED rc $? wall $(( $(date +%s) - T0 ))" >> /work/exp14-out/rg/train.out
