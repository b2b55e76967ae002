#!/usr/bin/env bash
# Scorers that read pixels (issue #14): students fitted on 20 labelled twin lift episodes, evaluated with
# the oracle and a tiny random Idefics3 on 20 held-out ones. About 15 min on 2 shared cores.
# usage: results/scorers/reproduce.sh OUT   (from the repository root; REPRODUCE_DRY_RUN=1 prints the commands)
# OUT gets the recordings, the students and evaluation.json/.md with the curves (compare with results/scorers).
set -euo pipefail
OUT=${1:?usage: results/scorers/reproduce.sh OUT}
source results/lib.sh
R=(--source scripted --env.image-size 64 --no-export-lerobot --env.watchdog.no-enabled)
provenance "$OUT/provenance.txt"
if ! finished "$OUT/heldout/episodes.zarr"; then
  rm -rf "${OUT:?}/train" "$OUT/heldout.part"
  # training set: 12 scripted successes + 8 failures cut short at 10 and 18 steps (20 episodes)
  vlmrl record "${R[@]}" --episodes 12 --seed 0 --out-dir "$OUT/train"
  vlmrl record "${R[@]}" --episodes 4 --seed 100 --env.max-episode-steps 10 --out-dir "$OUT/train"
  vlmrl record "${R[@]}" --episodes 4 --seed 200 --env.max-episode-steps 18 --out-dir "$OUT/train"
  # held out: the same mix from other seeds (written last: its store marks the recordings finished)
  vlmrl record "${R[@]}" --episodes 12 --seed 1000 --out-dir "$OUT/heldout.part"
  vlmrl record "${R[@]}" --episodes 4 --seed 1100 --env.max-episode-steps 10 --out-dir "$OUT/heldout.part"
  vlmrl record "${R[@]}" --episodes 4 --seed 1200 --env.max-episode-steps 18 --out-dir "$OUT/heldout.part"
  dry_run || mv "$OUT/heldout.part" "$OUT/heldout"
fi
# students: success-info labels, twin-progress labels, and a student of the noise-0.2 oracle
finished "$OUT/student-success.pt" || vlmrl scorer fit "$OUT/train/episodes.zarr" --out "$OUT/student-success.pt" --no-progress
finished "$OUT/student-progress.pt" || vlmrl scorer fit "$OUT/train/episodes.zarr" --out "$OUT/student-progress.pt" \
  --labels progress --no-progress
finished "$OUT/student-oracle0.2.pt" || vlmrl scorer fit "$OUT/train/episodes.zarr" --out "$OUT/student-oracle0.2.pt" \
  --labels teacher --no-progress teacher:oracle --teacher.noise 0.2
# the plumbing floor: hf on a tiny random Idefics3 (no weights can be downloaded here)
finished "$OUT/tiny-idefics3" || python_script -c \
  "import sys; from vlm.random_models import save_random_vlm; save_random_vlm(sys.argv[1], 'idefics3')" "$OUT/tiny-idefics3"
vlmrl score "$OUT/heldout/episodes.zarr" --evaluate --out-dir "$OUT" --json "$OUT/evaluation.json" \
  scorer:oracle \
  --compare "scorer:oracle --scorer.noise 0.2" "scorer:oracle --scorer.noise 0.4" \
  "scorer:learned --scorer.path $OUT/student-success.pt" "scorer:learned --scorer.path $OUT/student-progress.pt" \
  "scorer:learned --scorer.path $OUT/student-oracle0.2.pt" "scorer:hf --scorer.model $OUT/tiny-idefics3 --scorer.num-frames 2"
