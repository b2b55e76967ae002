#!/usr/bin/env bash
# Evidence for issue #14: students fitted on <= 20 labelled twin lift episodes, evaluated on 20 held-out ones.
# Run from the repository root; takes ~15 min on 2 shared cores. Data go to runs/scorers (not committed).
set -euo pipefail
export MUJOCO_GL=egl PYOPENGL_PLATFORM=egl OMP_NUM_THREADS=1
V=".venv/bin/python -m vlmrl"
D=runs/scorers
R="--source scripted --env.image-size 64 --no-export-lerobot --env.watchdog.no-enabled"
if [ ! -d $D/heldout/episodes.zarr ]; then
  # training set: 12 scripted successes + 8 failures cut short at 10 and 18 steps (20 episodes)
  $V record $R --episodes 12 --seed 0 --out-dir $D/train
  $V record $R --episodes 4 --seed 100 --env.max-episode-steps 10 --out-dir $D/train
  $V record $R --episodes 4 --seed 200 --env.max-episode-steps 18 --out-dir $D/train
  # held out: the same mix from other seeds
  $V record $R --episodes 12 --seed 1000 --out-dir $D/heldout
  $V record $R --episodes 4 --seed 1100 --env.max-episode-steps 10 --out-dir $D/heldout
  $V record $R --episodes 4 --seed 1200 --env.max-episode-steps 18 --out-dir $D/heldout
fi
# students: success-info labels, twin-progress labels, and a student of the noise-0.2 oracle
$V scorer fit $D/train/episodes.zarr --out $D/student-success.pt --no-progress
$V scorer fit $D/train/episodes.zarr --out $D/student-progress.pt --labels progress --no-progress
$V scorer fit $D/train/episodes.zarr --out $D/student-oracle0.2.pt --labels teacher --no-progress \
    teacher:oracle --teacher.noise 0.2
# the plumbing floor: hf on a tiny random Idefics3 (no weights can be downloaded here)
.venv/bin/python -c "from vlm.random_models import save_random_vlm; save_random_vlm('$D/tiny-idefics3', 'idefics3')"
$V score $D/heldout/episodes.zarr --evaluate --out-dir results/scorers --json results/scorers/evaluation.json \
    scorer:oracle \
    --compare "scorer:oracle --scorer.noise 0.2" "scorer:oracle --scorer.noise 0.4" \
    "scorer:learned --scorer.path $D/student-success.pt" "scorer:learned --scorer.path $D/student-progress.pt" \
    "scorer:learned --scorer.path $D/student-oracle0.2.pt" "scorer:hf --scorer.model $D/tiny-idefics3 --scorer.num-frames 2"
