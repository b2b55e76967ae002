#!/usr/bin/env bash
# Code as Reward on twin lift (issue #17): the hand-written lift program verified, then SAC with the sparse
# reward, + the oracle aux reward, + the program's dense CaR reward; 10k steps, seeds 0-2.
# usage: results/car/reproduce.sh OUT   (from the repository root; REPRODUCE_DRY_RUN=1 prints the commands)
# OUT gets the verification logs, results.jsonl and the runs (runs/), results.md and summary.json (compare
# with results/car). Finished runs are skipped on a rerun.
set -euo pipefail
OUT=${1:?usage: results/car/reproduce.sh OUT}
source results/lib.sh
PROGRAM=examples/reward_programs/lift.json
mkdir -p "$OUT"
provenance "$OUT/provenance.txt"
# the program verified on held-out seed 7 (30 + 30 episodes), then with the defaults; --no-record keeps
# the rerun from rewriting the verification recorded in the program's file
logged "$OUT/verify-seed7.log" vlmrl reward-program verify --program "$PROGRAM" --verification.expert-episodes 30 \
  --verification.random-episodes 30 --verification.seed 7 --no-record
logged "$OUT/verify-defaults.log" vlmrl reward-program verify --program "$PROGRAM" --no-record
# every row replays the demonstrations through --replay (--prior-share 0): RLPD's prior mix became
# train's default while the first runs ran, and the later ones set --prior-share 0 to match them
C=(--out "$OUT" --tasks lift --modes vlm --noise 0 --seeds 0 1 2 --total-steps 10000 --eval-every-steps 2500
  --eval-episodes 20 --demo-episodes 25 --layer-norm --workers 2 --train-arg=--prior-share=0)
# sparse, and sparse + the oracle's aux reward (weight 1)
python_script benchmarks/replay_experiment.py "${C[@]}" --aux-weights 0 1 --variant p0
# sparse + CaR (weight 1, added to the sparse reward)
python_script benchmarks/replay_experiment.py "${C[@]}" --aux-weights 0 --variant car --train-arg=--reward-program=$PROGRAM
python_script results/car/analyse.py "$OUT" "$OUT"
