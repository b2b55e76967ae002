#!/bin/bash
# Issue #19 lift probes: lift from robot observations with recipe D (as lift_train.sh), under the
# randomisation (and agent options) given after NAME SEED; CLONE is a clean clone at a fixed commit.
#   results/reality-gap/lift_probe.sh /path/to/clone OUT_DIR appear 0 --sim.randomize.color 0.04 ...
# lift_probes.py OUT_DIR summarises the runs (train.out records each run's commit and arguments).
set -u
CLONE=$1; OUT=$2; NAME=$3; SEED=$4; shift 4
cd "$CLONE"
export MUJOCO_GL=egl PYOPENGL_PLATFORM=egl PYTHONPATH="$CLONE" OMP_NUM_THREADS=1
RUN=$OUT/$NAME-s$SEED
T0=$(date +%s)
.venv/bin/python -m vlmrl train --sim.task lift --replay uniform --eval-episodes 20 --no-progress --video-episodes 0 --torch-threads 1 --buffer.storage memory --total-steps 20000 --eval-every-steps 2500 --demo-episodes 25 --agent.layer-norm --seed "$SEED" --policy-obs robot --asymmetric-critic --agent.privileged-aux-weight 1.0 --buffer.gamma 0.95 --agent.bc-weight 0.4 --agent.no-bc-q-filter "$@" --run-dir "$RUN" > "$RUN.log" 2>&1
echo "$NAME seed $SEED rc $? wall $(( $(date +%s) - T0 )) commit $(git rev-parse --short HEAD) args: $*" >> "$OUT/train.out"
