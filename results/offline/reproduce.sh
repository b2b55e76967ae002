#!/usr/bin/env bash
# RG-VLM on the twin (issue #16): offline IQL on 100 mixed-quality lift episodes with sparse, VLM (oracle,
# noisy oracle, a learned pixel student) and sparse + VLM rewards, BC as the floor; 5 seeds, 2,500 steps.
# usage: results/offline/reproduce.sh OUT   (from the repository root; REPRODUCE_DRY_RUN=1 prints the commands)
# OUT/data gets the scored dataset and the student, OUT/label its labelled episodes, OUT/runs the runs, and OUT
# table.md, curves.png, summary.json and labels.json (compare with results/offline). A finished dataset, student
# or run (its result.json) is skipped on a rerun.
set -euo pipefail
OUT=${1:?usage: results/offline/reproduce.sh OUT}
source results/lib.sh
DATA=$OUT/data
LABEL=$OUT/label
provenance "$OUT/provenance.txt"
build() {  # build DIR ARGS...: record and score a dataset into DIR, unless its dataset.json says it is done
  local dir=$1; shift
  finished "$dir/dataset.json" && return 0
  dry_run || rm -rf "$dir"
  python_script benchmarks/offline_experiment.py build --out "$dir" "$@"
}
build "$DATA"   # 20 expert, 40 noisy (sd 0.6), 40 random
# the learned pixel scorer as the labeller: 20 labelled episodes of the same recipe from other seeds
build "$LABEL" --expert 8 --noisy 8 --random 4 --seed 1000
finished "$DATA/student-oracle.pt" || vlmrl scorer fit "$LABEL/episodes.zarr" --out "$DATA/student-oracle.pt" \
  --labels teacher --clip-length 2 --clip-stride 2 --num-frames 2 --no-progress teacher:oracle
finished "$DATA/score-learned" || vlmrl score "$DATA/episodes.zarr" --clip-length 2 --clip-stride 2 --aux.kind scaled \
  --out-dir "$DATA/score-learned" scorer:learned --scorer.path "$DATA/student-oracle.pt"
X=(--out "$OUT" --data "$DATA/episodes.zarr")
for seed in 0 1 2 3 4; do
  python_script benchmarks/offline_experiment.py run "${X[@]}" --steps 2500 --eval-every 625 --eval-episodes 20 \
    --variants sparse bc vlm vlm-learned sparse+vlm vlm-noise0.2 sparse+vlm-noise0.2 sparse+vlm-learned --seeds $seed
done
python_script benchmarks/offline_experiment.py analyse "${X[@]}"
python_script benchmarks/offline_experiment.py labels "${X[@]}"
