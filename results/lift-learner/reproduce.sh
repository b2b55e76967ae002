#!/usr/bin/env bash
# The lift learner (issue #13): state SAC on twin lift with 25 demonstrations, 20k steps; the single-seed
# probes, then the grid of settings A-K (5 seeds, fewer where the README says), then table.md.
# usage: results/lift-learner/reproduce.sh OUT   (from the repository root; REPRODUCE_DRY_RUN=1 prints the commands)
# OUT gets runs/NAME, NAME.log and NAME.json per run (probes under OUT/probes) and table.md (compare with
# results/lift-learner). A run whose JSON exists is skipped on a rerun. One run at a time.
set -euo pipefail
OUT=${1:?usage: results/lift-learner/reproduce.sh OUT}
source results/lib.sh
BASE=(--sim.task lift --replay uniform --eval-episodes 20 --no-progress --video-episodes 0 --torch-threads 1
  --buffer.storage memory --total-steps 20000 --eval-every-steps 2500 --demo-episodes 25 --agent.layer-norm
  --policy-obs state)
D="--buffer.gamma 0.95 --agent.bc-weight 0.4 --agent.no-bc-q-filter"
# The probes ran before anti-windup existed (a7b5e62, c76f2bd): --sim.max-windup-deg 0 is that twin today.
OLD="--sim.max-windup-deg 0"
probe() {  # probe NAME SEED ARGS...
  local name=$1 seed=$2; shift 2
  recorded_run "$OUT/probes" "$name" "$seed" state "${BASE[@]}" --seed "$seed" "$@"
}
probe S-base-s0 0 $OLD
probe S-nstep3-s0 0 $OLD --buffer.n-step 3
probe S-h256-s0 0 $OLD --agent.hidden-dims 256 256
probe S-shaped-s0 0 $OLD --sim.reward shaped
probe S-ent12-s0 0 $OLD --agent.target-entropy -12
probe S-bs256-s0 0 $OLD --batch-size 256
probe S-g95-s0 0 $OLD --buffer.gamma 0.95
probe B-bc04-s0 0 $OLD --agent.bc-weight 0.4
probe B-bc1-s0 0 $OLD --agent.bc-weight 1.0
probe B-bc04nf-s0 0 $OLD --agent.bc-weight 0.4 --agent.no-bc-q-filter
probe B-bc04-s1 1 $OLD --agent.bc-weight 0.4
probe W-bc04-s0 0 --agent.bc-weight 0.4

setting() {  # setting LETTER "SEEDS" ARGS...: the grid's runs G<LETTER>-s<seed>
  local letter=$1 seeds=$2; shift 2
  for seed in $seeds; do
    recorded_run "$OUT" "G$letter-s$seed" "$seed" state "${BASE[@]}" --seed "$seed" "$@"
  done
}
setting A "0 1 2 3 4"
setting B "0 1 2 3 4" --buffer.gamma 0.95
setting C "0 1 2 3 4" --agent.bc-weight 0.4 --agent.no-bc-q-filter
setting D "0 1 2 3 4" $D
setting E "0 1 2 3 4" $OLD
setting F "0 1" --buffer.gamma 0.95 --agent.bc-weight 1.0 --agent.no-bc-q-filter
setting G "0 1 2 3 4" $D --agent.actor-lr 1e-4
setting H "0 1" $D --agent.utd-ratio 2
setting I "0 1 2 3 4" $D --agent.actor-ema 0.005
setting J "0 1 2 3 4" $D --agent.num-critics 10
setting K "0" $D --buffer.n-step 3
python_script benchmarks/lift_learner_table.py "$OUT"
