# Sourced by every results/<study>/reproduce.sh: the conventions they share. Run a study's script from the
# repository root with an output folder: `results/<study>/reproduce.sh OUT`. It writes only under OUT (never
# into results/: the committed files are the record to compare with; results/mutation says its one exception),
# and a rerun skips what is finished.
#
#   REPRODUCE_DRY_RUN=1   print each command, shell-quoted, one a line, instead of running it
#   PYTHON                the interpreter with vlmrl installed (default .venv/bin/python, as the Makefile)

[ -f results/lib.sh ] || { echo "run results/<study>/reproduce.sh from the repository root" >&2; exit 2; }
export MUJOCO_GL=${MUJOCO_GL:-egl} PYOPENGL_PLATFORM=${PYOPENGL_PLATFORM:-egl} OMP_NUM_THREADS=${OMP_NUM_THREADS:-1}
PY=${PYTHON:-.venv/bin/python}

dry_run() { [ "${REPRODUCE_DRY_RUN:-0}" = 1 ]; }

run_or_print() {  # run_or_print CMD...: run it, or print it under REPRODUCE_DRY_RUN=1 (one write, so parallel jobs do not interleave)
  if dry_run; then printf '%s\n' "$(printf '%q ' "$@")"; else "$@"; fi
}

logged() {  # logged LOG CMD...: run it with its output in LOG (printed only, under REPRODUCE_DRY_RUN=1)
  local log=$1; shift
  if dry_run; then
    if declare -F "$1" > /dev/null; then "$@"; else run_or_print "$@"; fi  # vlmrl and python_script print themselves
    return
  fi
  mkdir -p "$(dirname "$log")"
  "$@" > "$log" 2>&1
}

vlmrl() { run_or_print "$PY" -m vlmrl "$@"; }

python_script() { run_or_print "$PY" "$@"; }

finished() {  # finished FILE: true when FILE exists, so the step that writes it is skipped (never under a dry run)
  ! dry_run && [ -e "$1" ]
}

provenance() {  # provenance FILE: the commit and CPU a rerun ran on, for its README
  dry_run && return 0
  mkdir -p "$(dirname "$1")"
  { echo "commit $(git rev-parse --short HEAD)$(git diff --quiet HEAD || echo ' (with uncommitted changes)')"
    echo "cpu $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | xargs) x $(nproc)"
    echo "date $(date -u +%FT%TZ)"; } > "$1"
}

train_run() {  # train_run DIR NAME ARGS...: `vlmrl train ARGS --run-dir DIR/NAME`, its output in DIR/NAME.log;
  # skipped once DIR/NAME/policy.pt exists (the run finished), restarted clean otherwise
  local dir=$1 name=$2; shift 2
  finished "$dir/$name/policy.pt" && return 0
  dry_run || rm -rf "${dir:?}/$name"
  logged "$dir/$name.log" vlmrl train "$@" --run-dir "$dir/$name"
}

recorded_run() {  # recorded_run DIR NAME SEED OBS ARGS...: train_run, then DIR/NAME.json (results/lift-learner/record_run.py)
  local dir=$1 name=$2 seed=$3 obs=$4; shift 4
  finished "$dir/$name.json" && return 0
  local start; start=$(date +%s)
  train_run "$dir/runs" "$name" "$@"
  python_script results/lift-learner/record_run.py "$dir/runs/$name" --name "$name" --seed "$seed" --obs "$obs" \
    --wall-s $(( $(date +%s) - start )) --command "vlmrl train $* --run-dir RUN" --out "$dir/$name.json"
}
