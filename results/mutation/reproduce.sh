#!/usr/bin/env bash
# Mutation testing of the modules that decide what is learned (docs/mutation.md): each group's run, then a
# re-run of its survivors and timeouts. Hours on 2 cores (`make mutation` + `make mutation-rerun`).
# usage: results/mutation/reproduce.sh OUT   (from the repository root; REPRODUCE_DRY_RUN=1 prints the commands)
# OUT gets the scratch copies mutmut works in. tools/mutation.py writes its record in place,
# results/mutation/<group>.json: `git diff results/mutation` compares a rerun with the committed one.
set -euo pipefail
OUT=${1:?usage: results/mutation/reproduce.sh OUT}
source results/lib.sh
GROUPS=(sac safety learner replay samplers tasks randomization iql offline scoring_worker reward_checker frame_checks integrity zarr_commit)
python_script tools/mutation.py --jobs 1 --scratch "$OUT/scratch" "${GROUPS[@]}"
python_script tools/mutation.py --rerun --jobs 1 --scratch "$OUT/scratch" "${GROUPS[@]}"
