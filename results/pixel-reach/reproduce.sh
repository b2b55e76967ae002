#!/usr/bin/env bash
# Reach (and lift) from robot observations (issue #13): every run whose JSON is in results/pixel-reach, with the
# options its `command` records, one at a time; each run's record as OUT/NAME.json.
# usage: results/pixel-reach/reproduce.sh OUT   (from the repository root; REPRODUCE_DRY_RUN=1 prints the commands)
# A run whose JSON exists is skipped on a rerun. The runs before 5f805bc ran on the twin before anti-windup:
# they get --sim.max-windup-deg 0 (that twin today); a rerun records today's commit and CPU.
set -euo pipefail
OUT=${1:?usage: results/pixel-reach/reproduce.sh OUT}
source results/lib.sh
COMMON=(--replay uniform --no-progress --video-episodes 0 --torch-threads 1 --buffer.storage memory)
OLD=(--sim.max-windup-deg 0)
REACH=(--sim.task reach --policy-obs robot "${COMMON[@]}" --eval-every-steps 1000 --sim.reward shaped "${OLD[@]}")
RECIPE=(--asymmetric-critic --agent.privileged-aux-weight 1.0)
LIFT=(--sim.task lift "${COMMON[@]}" --eval-episodes 20 --demo-episodes 25 --agent.layer-norm)
reach_run() {  # reach_run NAME SEED OBS ARGS...
  local name=$1 seed=$2 obs=$3; shift 3
  recorded_run "$OUT" "$name" "$seed" "$obs" "$@" --seed "$seed"
}
# reach: end-effector deltas (the first recipe), absolute and joint-delta actions, 8k-10k steps
reach_run A-base 0 robot "${REACH[@]}" --eval-episodes 10 --sim.action-mode ee_delta --total-steps 8000
reach_run B-asym-aux1 0 robot "${REACH[@]}" --eval-episodes 10 --sim.action-mode ee_delta --total-steps 8000 "${RECIPE[@]}"
reach_run E-abs-asymaux-s0 0 robot "${REACH[@]}" --eval-episodes 20 --total-steps 8000 --sim.action-mode absolute "${RECIPE[@]}"
reach_run F-delta-asymaux-s0 0 robot "${REACH[@]}" --eval-episodes 20 --total-steps 8000 --sim.action-mode delta "${RECIPE[@]}"
reach_run delta-asymonly-s0 0 robot "${REACH[@]}" --eval-episodes 20 --total-steps 10000 --sim.action-mode delta --asymmetric-critic
reach_run delta-plain-s0 0 robot "${REACH[@]}" --eval-episodes 20 --total-steps 10000 --sim.action-mode delta
for seed in 0 1 2; do
  reach_run delta-recipe-s$seed $seed robot "${REACH[@]}" --eval-episodes 20 --total-steps 10000 --sim.action-mode delta "${RECIPE[@]}"
done
# lift with the reach recipe and 25 demonstrations, before the lift learner's fixes
reach_run lift-demos25-recipe-s0 0 robot "${LIFT[@]}" --policy-obs robot "${OLD[@]}" "${RECIPE[@]}" --total-steps 20000 --eval-every-steps 5000
reach_run lift-demos25-recipe-30k-s0 0 robot "${LIFT[@]}" --policy-obs robot "${OLD[@]}" "${RECIPE[@]}" --total-steps 30000 --eval-every-steps 5000
P=("${LIFT[@]}" --policy-obs robot "${OLD[@]}" "${RECIPE[@]}" --total-steps 20000 --eval-every-steps 2500)
reach_run lift-demos25-recipe-shaped-s0 0 robot "${P[@]}" --sim.reward shaped
reach_run lift-demos25-recipe-utd2-s0 0 robot "${P[@]}" --agent.utd-ratio 2
reach_run lift-demos25-recipe-px64-s0 0 robot "${P[@]}" --agent.pixel.image-size 64
reach_run lift-demos25-recipe-terminate-s0 0 robot "${P[@]}" --sim.terminate-on-success
S=("${LIFT[@]}" --policy-obs state "${OLD[@]}" --total-steps 20000 --eval-every-steps 2500)
reach_run lift-state-demos25-ln-10critics-utd4-s0 0 state "${S[@]}" --agent.num-critics 10 --agent.utd-ratio 4
reach_run lift-state-demos25-ln-terminate-s0 0 state "${S[@]}" --sim.terminate-on-success
# lift with the lift learner's recipe D (anti-windup on: the twin's default since 5f805bc)
for seed in 0 1 2 3 4; do
  reach_run lift-robot-recipe-D-s$seed $seed robot "${LIFT[@]}" --policy-obs robot "${RECIPE[@]}" --total-steps 20000 \
    --eval-every-steps 2500 --buffer.gamma 0.95 --agent.bc-weight 0.4 --agent.no-bc-q-filter
done
