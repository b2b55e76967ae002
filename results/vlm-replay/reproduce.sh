#!/usr/bin/env bash
# The pre-registered VLM-guided replay grid (issue #35, README.md here): the pilot that picks the three
# Meta-World tasks, then every registered cell x seeds 0-4, two runs at a time.
# usage: results/vlm-replay/reproduce.sh OUT   (from the repository root; REPRODUCE_DRY_RUN=1 prints the commands)
#   MW_TASKS="drawer-open window-open door-open"   the pilot's choice (README "The pilot"); unset: run the
#                                                  pilot only, then the twin's cells
# Each cell is `benchmarks/replay_experiment.py --cell NAME --seed S --out OUT`, which skips a finished run.
set -euo pipefail
OUT=${1:?usage: results/vlm-replay/reproduce.sh OUT}
source results/lib.sh
mkdir -p "$OUT/logs"
provenance "$OUT/provenance.txt"
CANDIDATES=(drawer-open window-open button-press-topdown door-open handle-press plate-slide reach push)

cell() {  # cell NAME SEED: one registered cell, its output in logs/
  logged "$OUT/logs/${1//\//_}-s$2.log" python_script benchmarks/replay_experiment.py --cell "$1" --seed "$2" --out "$OUT"
}

pairs() {  # pairs NAME...: seeds 0-4 of each cell, two runs at a time
  local name seed
  for name in "$@"; do
    for seed in 0 1 2 3 4; do
      cell "$name" "$seed" &
      if (( $(jobs -rp | wc -l) >= 2 )); then wait -n; fi
    done
  done
  wait
}

# The pilot: uniform, seeds 0 and 1, every candidate (the README's rule picks the first three in 10-70%).
for task in "${CANDIDATES[@]}"; do
  cell "metaworld/$task/uniform" 0 &
  cell "metaworld/$task/uniform" 1 &
  wait
done

# Meta-World: the pilot's three tasks, every condition.
if [ -n "${MW_TASKS:-}" ]; then
  for task in $MW_TASKS; do
    pairs "metaworld/$task/uniform" "metaworld/$task/per" "metaworld/$task/vlm-oracle" \
      "metaworld/$task/vlm-oracle-noise0.2" "metaworld/$task/vlm-learned"
  done
fi

# The twin: lift and place, 0/5/25 demonstrations, uniform against the VLM (oracle and learned student).
for task in lift place; do
  for demos in 0 5 25; do
    pairs "twin/$task/demos$demos/uniform" "twin/$task/demos$demos/vlm-oracle" "twin/$task/demos$demos/vlm-learned"
  done
done

# The registered test over what ran (grid.md, grid.json, curves.png in OUT).
python_script benchmarks/replay_grid_report.py --results "$OUT/results.jsonl" --out "$OUT"
