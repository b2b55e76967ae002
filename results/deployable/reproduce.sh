#!/usr/bin/env bash
# The deployable-learner study (issue #32): every run of results/deployable/README.md, then its table.
# usage: results/deployable/reproduce.sh OUT     (from the repository root; OUT gets the run dirs and logs/)
# Two runs at a time on 2 cores; a finished run (its report.md exists) is skipped, so a rerun resumes.
set -euo pipefail
OUT=${1:?usage: results/deployable/reproduce.sh OUT}
export MUJOCO_GL=egl PYOPENGL_PLATFORM=egl OMP_NUM_THREADS=1
mkdir -p "$OUT/logs"
ROBOT="--policy-obs robot --sim.action-mode delta --replay uniform --asymmetric-critic --agent.privileged-aux-weight 1.0 --buffer.storage memory --video-episodes 0 --no-progress"
REACH="--sim.task reach $ROBOT --sim.reward shaped --total-steps 10000 --eval-every-steps 1000 --eval-episodes 20"
DEP="--recipe deployable --video-episodes 0 --no-progress"
NT="$DEP --sim.no-terminate-on-success"

run() {  # run NAME ARGS...: one `vlmrl train`, its commit, CPU and wall-clock in logs/NAME.cmd
  local name=$1; shift
  [ -f "$OUT/$name/report.md" ] && return 0
  rm -rf "${OUT:?}/$name"
  echo "$(git rev-parse --short HEAD) $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | xargs) vlmrl train $* --run-dir runs/$name" > "$OUT/logs/$name.cmd"
  local start; start=$(date +%s)
  .venv/bin/python -m vlmrl train "$@" --run-dir "$OUT/$name" > "$OUT/logs/$name.log" 2>&1
  echo "wall_s $(( $(date +%s) - start ))" >> "$OUT/logs/$name.cmd"
}

# Reach, shaped reward: episodes that end at success (the README's reach recipe otherwise).
run reach-term-s0 $REACH --seed 0 --sim.terminate-on-success &
run reach-abs-s0 $REACH --seed 0 --sim.terminate-on-success --buffer.absorbing-terminal &
wait
# Reach, the recipe (sparse, 25 demonstrations, ends at success): with and without the absorbing terminal.
for s in 0 1 2; do
  run reach-dep-s$s $DEP --sim.task reach --seed $s --sim.terminate-on-success --buffer.absorbing-terminal &
  run reach-dep-noabs-s$s $DEP --sim.task reach --seed $s --sim.terminate-on-success --buffer.no-absorbing-terminal &
  wait
done
# Lift: ending at success (with the absorbing terminal), and running on after it with UTD 2 and 10 critics.
run lift-dep-s0 $DEP --sim.task lift --seed 0 --sim.terminate-on-success --buffer.absorbing-terminal &
run lift-dep-s1 $DEP --sim.task lift --seed 1 --sim.terminate-on-success --buffer.absorbing-terminal &
wait
run lift-nt-utd2e10-s0 $NT --sim.task lift --seed 0 --agent.utd-ratio 2 --agent.num-critics 10 &
run lift-nt-utd2e10-s1 $NT --sim.task lift --seed 1 --agent.utd-ratio 2 --agent.num-critics 10 &
wait
.venv/bin/python results/deployable/collect.py "$OUT"
