#!/usr/bin/env bash
# The benchmarks of docs/results.md: each compares a part with its reference in the same run and writes JSON.
# usage: results/bench/reproduce.sh OUT   (from the repository root; REPRODUCE_DRY_RUN=1 prints the commands)
# OUT gets NAME.json per benchmark (compare with results/bench/NAME.json); a benchmark whose JSON exists is
# skipped, so a rerun resumes. Run on a quiet machine: the figures are speeds. benchmarks/readme_results.py
# reads the `bench NAME SCRIPT ARGS` lines below as each benchmark's command on the results page.
set -euo pipefail
OUT=${1:?usage: results/bench/reproduce.sh OUT}
source results/lib.sh
mkdir -p "$OUT"
provenance "$OUT/provenance.txt"

bench() {  # bench NAME SCRIPT ARGS...: python SCRIPT ARGS --json OUT/NAME.json, unless that JSON exists
  local name=$1; shift
  finished "$OUT/$name.json" || python_script "$@" --json "$OUT/$name.json"
}

gpu_bench() {  # gpu_bench NAME SCRIPT ARGS...: bench, where a CUDA GPU is visible (skipped, and said, elsewhere)
  if dry_run || command -v nvidia-smi > /dev/null; then bench "$@"; else echo "skipped $1: it measures a GPU and none is visible" >&2; fi
}

bench sim_throughput benchmarks/sim_throughput.py
bench buffer_throughput benchmarks/buffer_throughput.py --quick
bench sac_vs_sb3 benchmarks/sac_vs_sb3.py
bench scoring benchmarks/scoring.py --quick
bench pixel_learning benchmarks/pixel_learning.py --quick --reach-steps 8000 --action-mode delta --reward shaped --ours-args '--asymmetric-critic --agent.privileged-aux-weight 1.0' --workers 2 --sb3-cap-s 1500
bench pixel_cost benchmarks/pixel_learning.py --cost-only
bench scale_out benchmarks/scale_out.py --quick
bench viewer benchmarks/viewer.py
bench viewer-quick benchmarks/viewer.py --quick
# reach and lift, seeds 0-2: lift is about 2 hours of one core per LeRobot seed; the committed JSON merged runs of
# one or two seeds (its `sources`: reach --jobs 1 and 2, lift --jobs 1 and 2)
bench lerobot_sac benchmarks/lerobot_sac.py --tasks reach,lift --seeds 0 1 2 --jobs 2
bench deployable_tasks benchmarks/deployable_tasks.py --tasks reach lift push place --seeds 0 1 2 3 4
# finetune's policy: results/deployable section 17's lift seed 0, which reads its joint targets (results/finetune).
finished "$OUT/finetune.json" || python_script benchmarks/deployable_tasks.py --tasks lift --seeds 0 \
  --train-args '--sim.observe-targets --sim.randomize.max-latency-steps 2' --runs-dir "$OUT/lift-targets" --json "$OUT/lift-targets.json"
bench finetune benchmarks/finetune_experiment.py --tasks lift --policy-run "$OUT/lift-targets/lift-s0" --unit b --seeds 0 1 2 3 4 --conditions cloned cloned_keys_only scratch_cloned --robot-minutes 30 --eval-every 10 --eval-episodes 20
gpu_bench gpu_paths benchmarks/gpu_paths.py
