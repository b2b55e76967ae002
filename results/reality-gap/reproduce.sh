#!/usr/bin/env bash
# The reality gap (issue #19): (1) do the nominal-twin scorers survive randomised frames; (2) reach from robot
# observations trained with and without randomisation, on the held-out grids; (3) lift under randomisation:
# which factors stop it, and the remedies, on the held-out grids. Many hours on 2 cores, one run at a time.
# usage: results/reality-gap/reproduce.sh OUT   (from the repository root; REPRODUCE_DRY_RUN=1 prints the commands)
# OUT gets scorer_grid.*, summary.* (reach), lift.* and lift-runs/, lift_probes.* and the runs (OUT/reach,
# OUT/lift), to compare with results/reality-gap. A finished training (policy.pt) or evaluation
# (evaluate.json) is skipped on a rerun.
set -euo pipefail
OUT=${1:?usage: results/reality-gap/reproduce.sh OUT}
source results/lib.sh
COMMIT=$(git rev-parse --short HEAD)
provenance "$OUT/provenance.txt"

evaluate() {  # evaluate POLICY GRID OUT_DIR: the held-out grid GRID, 10 episodes a row, seed 0
  finished "$3/evaluate.json" && return 0
  logged "$3.log" vlmrl evaluate --policy "$1" --perturb "$2" --episodes 10 --seed 0 --out-dir "$3"
}

# (1) the students of results/scorers score the scripted expert's frames on the held-out medium grid
finished "$OUT/scorers/student-oracle0.2.pt" || bash results/scorers/reproduce.sh "$OUT/scorers"
finished "$OUT/scorer_grid.json" || python_script results/reality-gap/scorer_grid.py \
  --students "$OUT/scorers/student-success.pt" "$OUT/scorers/student-oracle0.2.pt" --episodes 10 --out "$OUT/scorer_grid"

# (2) reach: h13's first recipe (ee_delta, 8k steps) and final one (joint deltas, asymmetric critic + auxiliary
# loss, 10k steps), trained without randomisation and under `light` / `medium`; each final policy on both grids.
# These ran before anti-windup (5f805bc): --sim.max-windup-deg 0 is that twin today.
R=$OUT/reach
BASE=(--sim.task reach --policy-obs robot --replay uniform --eval-episodes 10 --no-progress --video-episodes 0
  --torch-threads 1 --buffer.storage memory --sim.reward shaped --sim.max-windup-deg 0)
FIRST=("${BASE[@]}" --sim.action-mode ee_delta)
FINAL=("${BASE[@]}" --sim.action-mode delta --asymmetric-critic --agent.privileged-aux-weight 1.0 --total-steps 10000
  --eval-every-steps 1000)
reach() {  # reach NAME SEED ARGS...: train R/train-NAME-sSEED, then evaluate it on the medium and light grids
  local name=$1 seed=$2; shift 2
  train_run "$R" "train-$name-s$seed" "$@" --seed "$seed"
  evaluate "$R/train-$name-s$seed/policy.pt" medium "$R/eval-$name-s$seed"
  evaluate "$R/train-$name-s$seed/policy.pt" light "$R/evallight-$name-s$seed"
}
for seed in 0 1 2; do
  reach nominal $seed "${FIRST[@]}" --total-steps 8000 --eval-every-steps 1000
  reach light $seed "${FIRST[@]}" --total-steps 8000 --eval-every-steps 1000 --sim.randomize.preset light
  reach medium $seed "${FIRST[@]}" --total-steps 8000 --eval-every-steps 1000 --sim.randomize.preset medium
done
reach light16k 0 "${FIRST[@]}" --total-steps 16000 --eval-every-steps 2000 --sim.randomize.preset light
for seed in 0 1 2; do
  reach recipe-nominal $seed "${FINAL[@]}"   # h13's runs (results/pixel-reach delta-recipe-s*) evaluated 20 episodes
  reach recipe-light $seed "${FINAL[@]}" --sim.randomize.preset light
done
reach recipe-medium 0 "${FINAL[@]}" --sim.randomize.preset medium
python_script results/reality-gap/summarize.py --out "$OUT" "$R" "$COMMIT"

# (3) lift from robot observations with the lift learner's recipe D, 20k steps: without randomisation, under
# `light`, under one group of light's factors (the probes: options spelled from each probe's label and the
# `light` preset's ranges), and under `light` with the remedies; the remedies' policies on both grids.
L=$OUT/lift
LIFT=(--sim.task lift --replay uniform --eval-episodes 20 --no-progress --video-episodes 0 --torch-threads 1
  --buffer.storage memory --eval-every-steps 2500 --demo-episodes 25 --agent.layer-norm --policy-obs robot
  --asymmetric-critic --agent.privileged-aux-weight 1.0 --buffer.gamma 0.95 --agent.bc-weight 0.4 --agent.no-bc-q-filter)
X=(--sim.randomize)
LIGHT=(--sim.randomize.preset light)
PHYSICS=("$X.cube-mass-frac" 0.2 "$X.cube-size-frac" 0.05 "$X.friction-frac" 0.2 "$X.joint-damping-frac" 0.2
  "$X.gripper-force-frac" 0.1 "$X.joint-noise-deg" 0.5)
APPEAR=("$X.camera-pos-m" 0.01 "$X.camera-rot-deg" 1.5 "$X.camera-fovy-deg" 2.0 "$X.light-frac" 0.15 "$X.color" 0.04
  "$X.texture" 0.15)
STD=(--agent.pixel.standardize)
RAMP=(--randomize-ramp-steps 10000)
JIT=(--agent.pixel.color-jitter 0.3)
lift() {  # lift NAME SEED ARGS...: train L/NAME-sSEED for 20k steps, its line in L/train.out (lift_probes.py reads it)
  local name=$1 seed=$2; shift 2
  local start; start=$(date +%s)
  finished "$L/$name-s$seed/policy.pt" && return 0
  train_run "$L" "$name-s$seed" "${LIFT[@]}" --total-steps 20000 --seed "$seed" "$@"
  dry_run || echo "$name seed $seed rc 0 wall $(( $(date +%s) - start )) commit $COMMIT args: $*" >> "$L/train.out"
}
for seed in 0 1 2; do
  lift nominal $seed
  lift light $seed "${LIGHT[@]}"
  lift light-std $seed "${LIGHT[@]}" "${STD[@]}"
  lift ramp10k-std $seed "${LIGHT[@]}" "${STD[@]}" "${RAMP[@]}"
done
lift latonly 0 "$X.max-latency-steps" 1
lift physics 0 "${PHYSICS[@]}"
lift appear 0 "${APPEAR[@]}"
lift texonly 0 "$X.texture" 0.15
lift light-nolat 0 "${LIGHT[@]}" "$X.max-latency-steps" 0
lift light-actenc 0 "${LIGHT[@]}" --agent.actor-trains-encoder
lift light-est 0 "${LIGHT[@]}" --agent.actor-reads-estimate
for seed in 0 1; do lift light-est-std $seed "${LIGHT[@]}" "${STD[@]}" --agent.actor-reads-estimate; done
lift jit3-std 0 "${LIGHT[@]}" "${STD[@]}" "${JIT[@]}"
for seed in 0 1 2 3 4; do lift ramp10k-jit3-std $seed "${LIGHT[@]}" "${STD[@]}" "${JIT[@]}" "${RAMP[@]}"; done
# the standardised seed 0 to 40k steps (its own run: the 20k one above is not resumed)
finished "$L/light-std-40k-s0/policy.pt" || {
  train_run "$L" light-std-40k-s0 "${LIFT[@]}" --total-steps 40000 --seed 0 "${LIGHT[@]}" "${STD[@]}"
  dry_run || echo "light-std-40k seed 0 rc 0 wall 0 commit $COMMIT args: --total-steps 40000" >> "$L/train.out"
}
E=$L/evals
for grid in light medium; do
  for seed in 0 1 2; do
    for cond in nominal light light-std ramp10k-std; do evaluate "$L/$cond-s$seed/policy.pt" $grid "$E/eval-$grid-$cond-s$seed"; done
  done
  for seed in 0 1; do evaluate "$L/light-est-std-s$seed/policy.pt" $grid "$E/eval-$grid-light-est-std-s$seed"; done
  for seed in 0 1 2 3 4; do
    evaluate "$L/ramp10k-jit3-std-s$seed/policy.pt" $grid "$E/eval-$grid-ramp10k-jit3-std-s$seed"
    evaluate "$L/ramp10k-jit3-std-s$seed/best_policy.pt" $grid "$E/eval-$grid-ramp10k-jit3-std-best-s$seed"
  done
done
python_script results/reality-gap/lift_summary.py --out "$OUT" "$E" "$COMMIT"
python_script results/reality-gap/lift_probes.py --out "$OUT" "$L"
