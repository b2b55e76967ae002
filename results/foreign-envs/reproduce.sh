#!/usr/bin/env bash
# The learner on robosuite and Meta-World against SB3's SAC (issue #13): state, 15,000 steps, seeds 0-2.
# usage: results/foreign-envs/reproduce.sh OUT   (from the repository root; REPRODUCE_DRY_RUN=1 prints the commands)
# OUT gets foreign_envs.json, foreign_envs_reach.json and table.md (compare with results/foreign-envs); a grid
# whose JSON exists is skipped on a rerun. Needs the robosuite and Meta-World extras installed.
set -euo pipefail
OUT=${1:?usage: results/foreign-envs/reproduce.sh OUT}
source results/lib.sh
mkdir -p "$OUT"
C=(--steps 15000 --eval-every 5000 --eval-episodes 10)
finished "$OUT/foreign_envs.json" || python_script benchmarks/foreign_envs.py "${C[@]}" --json "$OUT/foreign_envs.json"
finished "$OUT/foreign_envs_reach.json" ||
  python_script benchmarks/foreign_envs.py "${C[@]}" --tasks metaworld:reach-v3 --json "$OUT/foreign_envs_reach.json"
python_script benchmarks/foreign_envs.py --table-from "$OUT/foreign_envs.json" "$OUT/foreign_envs_reach.json" \
  --markdown "$OUT/table.md"
