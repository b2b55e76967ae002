#!/usr/bin/env bash
# The fine-tuning study of results/finetune/README.md (issue #33 item 5), as measured there.
# usage: results/finetune/reproduce.sh OUT   (from the repository root; REPRODUCE_DRY_RUN=1 prints the commands)
# Trains the lift policy it fine-tunes (the deployable recipe, running on after success, UTD 2, 10 critics:
# results/deployable's lift-nt-utd2e10-s0), then measures it on twin unit b before and while fine-tuning.
# Every step is resumable: a rerun collects what is finished and continues the rest. results/bench/finetune.json
# is this study's finetune.json.
set -euo pipefail
OUT=${1:?usage: results/finetune/reproduce.sh OUT}
source results/lib.sh
mkdir -p "$OUT"
provenance "$OUT/provenance.txt"
python_script benchmarks/finetune_experiment.py --tasks lift --seeds 0 --unit b \
  --train-arg=--sim.no-terminate-on-success --train-arg=--agent.utd-ratio=2 --train-arg=--agent.num-critics=10 \
  --conditions interventions scratch keys_only --robot-minutes 1 --eval-every 0.5 --eval-episodes 5 --jobs 3 \
  --runs-dir "$OUT/runs" --json "$OUT/finetune.json"
# The full design (5 seeds, lift and reach, 60 robot minutes, evaluations of 20 episodes every 10):
#   python benchmarks/finetune_experiment.py --tasks lift reach --seeds 0 1 2 3 4 --robot-minutes 60 \
#       --eval-every 10 --eval-episodes 20 --runs-dir OUT/runs-full --json OUT/finetune-full.json
