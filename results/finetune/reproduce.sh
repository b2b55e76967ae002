#!/usr/bin/env bash
# The fine-tuning study of results/finetune/README.md (issue #33 item 5), as measured there.
# usage: results/finetune/reproduce.sh OUT   (from the repository root; REPRODUCE_DRY_RUN=1 prints the commands)
# Trains the lift policy it fine-tunes (the deployable recipe, running on after success, UTD 2, 10 critics:
# results/deployable's lift-nt-utd2e10-s0), then measures it on twin unit b before and while fine-tuning.
# Every step is resumable: a rerun collects what is finished and continues the rest. lift_1min_unit_b.json is
# the first measurement's finetune.json; lift_10min_unit_a.json the second's (10 robot minutes, below); results/bench/finetune.json is the
# end-effector study's (30 robot minutes, five seeds, last below).
set -euo pipefail
OUT=${1:?usage: results/finetune/reproduce.sh OUT}
source results/lib.sh
mkdir -p "$OUT"
provenance "$OUT/provenance.txt"
python_script benchmarks/finetune_experiment.py --tasks lift --seeds 0 --unit b \
  --train-arg=--sim.no-terminate-on-success --train-arg=--agent.utd-ratio=2 --train-arg=--agent.num-critics=10 \
  --conditions interventions scratch keys_only --robot-minutes 1 --eval-every 0.5 --eval-episodes 5 --jobs 3 \
  --runs-dir "$OUT/runs" --json "$OUT/finetune.json"
# The second measurement (2026-12-04): the recipe's lift policy with 100 demonstrations, the unit where it
# drops most, 10 robot minutes, evaluations of 20 episodes every 5; then the safety layer's cost on the nominal
# twin (100 held-out episodes with the default floor and with no floor above the table).
train_run "$OUT" lift-d100-s0 --recipe deployable --sim.task lift --seed 0 --demo-episodes 100 --video-episodes 0 \
  --no-progress --torch-threads 1
python_script benchmarks/finetune_experiment.py --tasks lift --policy-run "$OUT/lift-d100-s0" --unit auto \
  --unit-episodes 10 --seeds 0 --conditions interventions keys_only scratch --robot-minutes 10 --eval-every 5 \
  --eval-episodes 20 --jobs 1 --runs-dir "$OUT/fx" --json "$OUT/finetune-10min.json"
for floor in 0.005 -0.1; do
  vlmrl deploy --policy "$OUT/lift-d100-s0/policy.pt" --episodes 100 --seed 2000000 --video-camera None \
    --torch-threads 1 --env.control-hz 1000 --twin-control-hz 20 --env.safety.workspace-min-m -0.45 -0.45 "$floor" \
    --out-dir "$OUT/safety-floor$floor"
done
# Fine-tuning on the nominal twin (2026-12-04, README "Fine-tuning on the nominal twin"): the recipe's lift policy,
# fine-tuned for 5 then 10 robot minutes under each condition, deployed on 50 held-out start states after each.
nominal_twin() {  # nominal_twin RUN DIR NAME [finetune options...]: DIR/before once, DIR/NAME/{ft,eval-M}
  # env: UNIT (a twin unit: fine-tune and deploy on it; default the nominal twin), MINUTES (default "5 10")
  local run=$1 dir=$2 name=$3 minutes; shift 3
  local fast=(--env.control-hz 1000 --twin-control-hz 20) unit=()
  [ -n "${UNIT:-}" ] && unit=(--robot.unit "$UNIT")
  local eval=(--episodes 50 --seed 2000000 --video-camera None --torch-threads 1 "${fast[@]}" "${unit[@]}")
  dry_run || { mkdir -p "$dir/$name"; printf '%s\n' "$*" > "$dir/$name/options.txt"; }
  provenance "$dir/$name/provenance.txt"
  finished "$dir/before/metrics.json" || vlmrl deploy --policy "$run/policy.pt" --out-dir "$dir/before" "${eval[@]}"
  for minutes in ${MINUTES:-5 10}; do
    finished "$dir/$name/eval-$minutes/metrics.json" && continue
    local resume=(); [ -d "$dir/$name/ft/checkpoint" ] && resume=(--resume)
    logged "$dir/$name/ft-$minutes.log" vlmrl finetune --from "$run" "${resume[@]}" --out-dir "$dir/$name/ft" \
      --operator scripted --episodes 100000 --robot-minutes "$minutes" --seed 0 --torch-threads 1 "${fast[@]}" \
      "${unit[@]}" "$@"
    run_or_print cp "$dir/$name/ft/policy.pt" "$dir/$name/policy-$minutes.pt"
    vlmrl deploy --policy "$dir/$name/policy-$minutes.pt" --out-dir "$dir/$name/eval-$minutes" "${eval[@]}"
  done
}
train_run "$OUT" lift-s0 --recipe deployable --sim.task lift --seed 0 --video-episodes 0 --no-progress --torch-threads 1
N="$OUT/nominal"
nominal_twin "$OUT/lift-s0" "$N" F0-defaults
nominal_twin "$OUT/lift-s0" "$N" F1-absorbing --buffer.absorbing-terminal
nominal_twin "$OUT/lift-s0" "$N" F2-absorbing-clone --buffer.absorbing-terminal --buffer.clone-info-key intervention
nominal_twin "$OUT/lift-s0" "$N" F3-critic-only --critic-warmup-updates 1000000
nominal_twin "$OUT/lift-s0" "$N" F4-critic-only-frozen --critic-warmup-updates 1000000 --freeze-encoder
nominal_twin "$OUT/lift-s0" "$N" F5-frozen-absorbing-clone --freeze-encoder --buffer.absorbing-terminal \
  --buffer.clone-info-key intervention
nominal_twin "$OUT/lift-s0" "$N" F6-frozen-abs-clone-warm6000 --freeze-encoder --buffer.absorbing-terminal \
  --buffer.clone-info-key intervention --critic-warmup-updates 6000
nominal_twin "$OUT/lift-s0" "$N" F7-frozen-abs-clone-storepolicy --freeze-encoder --buffer.absorbing-terminal \
  --buffer.clone-info-key intervention --store-action policy
nominal_twin "$OUT/lift-s0" "$N" F8-frozen-abs-cloneall --freeze-encoder --buffer.absorbing-terminal --buffer.clone-all
nominal_twin "$OUT/lift-s0" "$N" F9-frozen-abs-cloneall-start2400 --freeze-encoder --buffer.absorbing-terminal \
  --buffer.clone-all --learning-starts 2400
# Prior data (2026-12-04, README "Prior data, a slower actor and a twin unit"): 25 demonstrations by the scripted
# operator's expert (no updates), on the nominal twin and on unit b, then the cells with --prior-data.
demos() {  # demos RUN OUT N [finetune options...]: OUT/buffer.zarr, N expert-driven episodes from seed 1,000,000
  local run=$1 out=$2 n=$3; shift 3
  finished "$out/policy.pt" || logged "$out.log" vlmrl finetune --from "$run" --operator scripted \
    --scripted-operator.demonstrate --scripted-operator.takeover-steps 150 --scripted-operator.budget-steps 150 \
    --scripted-operator.no-give-up --learning-starts 1000000000 --episodes "$n" --seed 1000000 --torch-threads 1 \
    --env.control-hz 1000 --twin-control-hz 20 --out-dir "$out" "$@"
}
demos "$OUT/lift-s0" "$OUT/demos-lift" 25
D="$OUT/demos-lift/buffer.zarr"
nominal_twin "$OUT/lift-s0" "$N" P1-prior --prior-data "$D"
nominal_twin "$OUT/lift-s0" "$N" P2-prior-frozen-abs --prior-data "$D" --freeze-encoder --buffer.absorbing-terminal
nominal_twin "$OUT/lift-s0" "$N" P3-prior-frozen-abs-actorlr3e-5 --prior-data "$D" --freeze-encoder \
  --buffer.absorbing-terminal --actor-lr 3e-5
nominal_twin "$OUT/lift-s0" "$N" P4-prior-frozen-abs-bc4 --prior-data "$D" --freeze-encoder --buffer.absorbing-terminal \
  --bc-weight 4
nominal_twin "$OUT/lift-s0" "$N" P5-prior-frozen-abs-bc4-actorlr3e-5 --prior-data "$D" --freeze-encoder \
  --buffer.absorbing-terminal --bc-weight 4 --actor-lr 3e-5
demos "$OUT/lift-s0" "$OUT/demos-lift-unit-b" 25 --robot.unit b
DB="$OUT/demos-lift-unit-b/buffer.zarr"
B="$OUT/unit-b"
U6=(--prior-data "$DB" --freeze-encoder --buffer.absorbing-terminal --buffer.clone-info-key intervention --bc-weight 4
    --actor-lr 3e-5)
S2=(--fresh-agent --prior-data "$DB" --buffer.absorbing-terminal --buffer.clone-info-key intervention --bc-weight 4)
export UNIT=b MINUTES="5 10 20"
nominal_twin "$OUT/lift-s0" "$B" U0-defaults
nominal_twin "$OUT/lift-s0" "$B" U5-prior-frozen-abs-bc4-actorlr3e-5 --prior-data "$DB" --freeze-encoder \
  --buffer.absorbing-terminal --bc-weight 4 --actor-lr 3e-5
nominal_twin "$OUT/lift-s0" "$B" U11-prior-frozen-abs-cloneint-bc20-actorlr3e-5 --prior-data "$DB" --freeze-encoder \
  --buffer.absorbing-terminal --buffer.clone-info-key intervention --bc-weight 20 --actor-lr 3e-5
nominal_twin "$OUT/lift-s0" "$B" S1-scratch-prior-abs --fresh-agent --prior-data "$DB" --buffer.absorbing-terminal
export MINUTES="5 10 20 30"  # three fine-tuning seeds of the cloned-takeover setting and of scratch with it
nominal_twin "$OUT/lift-s0" "$B" U6-prior-frozen-abs-cloneint-bc4-actorlr3e-5 "${U6[@]}"
nominal_twin "$OUT/lift-s0" "$B" S2-scratch-prior-abs-cloneint-bc4 "${S2[@]}"
for seed in 1 2; do
  nominal_twin "$OUT/lift-s0" "$B" "U6-seed$seed" "${U6[@]}" --seed "$seed"
  nominal_twin "$OUT/lift-s0" "$B" "S2-seed$seed" "${S2[@]}" --seed "$seed"
done
demos "$OUT/lift-s0" "$OUT/demos100-lift-unit-b" 100 --robot.unit b  # U7: 100 demonstrations
U7=("${U6[@]}"); U7[1]="$OUT/demos100-lift-unit-b/buffer.zarr"
nominal_twin "$OUT/lift-s0" "$B" U7-demos100 "${U7[@]}"
nominal_twin "$OUT/lift-s0" "$B" U7-seed1 "${U7[@]}" --seed 1
UNIT="" MINUTES="5 10 20" nominal_twin "$OUT/lift-s0" "$N" N6-prior-frozen-abs-cloneint-bc4-actorlr3e-5 \
  --prior-data "$D" --freeze-encoder --buffer.absorbing-terminal --buffer.clone-info-key intervention --bc-weight 4 \
  --actor-lr 3e-5
unset UNIT MINUTES
python_script results/finetune/collect_nominal.py "$N" "$B" --json "$OUT/nominal_twin.json"
# An end-effector lift policy on unit a (2026-12-05, README "An end-effector lift policy on unit a"): the recipe's
# lift policy (end-effector actions since b063ccd; results/deployable section 11's lift-s0), the unit where it drops
# most; a one-seed pilot of 10 robot minutes, then cloned against scratch_cloned over fine-tuning seeds 0-4 for 30
# robot minutes, evaluations of 20 episodes every 10 (results/bench/finetune.json).
train_run "$OUT" ee-lift-s0 --recipe deployable --sim.task lift --seed 0 --video-episodes 0 --no-progress --torch-threads 1
python_script benchmarks/finetune_experiment.py --tasks lift --seeds 0 --policy-run "$OUT/ee-lift-s0" --unit auto \
  --unit-episodes 20 --conditions interventions cloned --cloned-actor-lr 3e-5 --cloned-lr-final-fraction 1 --robot-minutes 10 --eval-every 5 --eval-episodes 20 --jobs 1 \
  --runs-dir "$OUT/ee" --json "$OUT/ee_pilot.json"
python_script benchmarks/finetune_experiment.py --tasks lift --seeds 0 1 2 3 4 --policy-run "$OUT/ee-lift-s0" --unit a \
  --conditions cloned scratch_cloned --cloned-actor-lr 3e-5 --cloned-lr-final-fraction 1 --robot-minutes 30 --eval-every 10 --eval-episodes 20 --jobs 2 \
  --runs-dir "$OUT/ee" --json "$OUT/finetune.json"
# best_policy.pt against policy.pt (best_policy_unit_a.json): the study's cloned condition for 20 robot minutes in
# one stage, both policies deployed on unit a over the held-out start states.
for s in 0 1 2 3 4; do
  logged "$OUT/logs/best-s$s.log" vlmrl finetune --from "$OUT/ee-lift-s0" --out-dir "$OUT/best/cloned-s$s" \
    --buffer.clone-info-key intervention --bc-weight 4 --buffer.absorbing-terminal --actor-lr 3e-5 --freeze-encoder \
    --prior-data "$OUT/ee/lift/demos-s$s/buffer.zarr" --robot.unit a --operator scripted --episodes 100000 \
    --robot-minutes 20 --seed $((100000 * s)) --torch-threads 1 --env.control-hz 1000 --twin-control-hz 20
  for p in best_policy policy; do
    logged "$OUT/logs/best-s$s-$p.log" vlmrl deploy --policy "$OUT/best/cloned-s$s/$p.pt" --episodes 20 \
      --seed 2000000 --video-camera None --torch-threads 1 --env.control-hz 1000 --twin-control-hz 20 --robot.unit a \
      --out-dir "$OUT/best/cloned-s$s/eval-$p"
  done
done
# The full design (5 seeds, lift and reach, 60 robot minutes, evaluations of 20 episodes every 10):
#   python benchmarks/finetune_experiment.py --tasks lift reach --seeds 0 1 2 3 4 --robot-minutes 60 \
#       --eval-every 10 --eval-episodes 20 --runs-dir OUT/runs-full --json OUT/finetune-full.json
# A stronger cloning weight (bc50_unit_a.json; at a220448): a new recipe lift policy (seed 0), then the cloned
# condition with --bc-weight 50 on unit a, five fine-tuning seeds, 30 robot minutes, evaluations every 10.
python_script benchmarks/deployable_tasks.py --tasks lift --seeds 0 --runs-dir "$OUT/bc50-policies" \
  --json "$OUT/bc50-policies.json"
python_script benchmarks/finetune_experiment.py --tasks lift --policy-run "$OUT/bc50-policies/lift-s0" --unit a \
  --seeds 0 1 2 3 4 --conditions cloned --cloned-actor-lr 3e-5 --cloned-lr-final-fraction 1 --robot-minutes 30 --eval-every 10 --eval-episodes 20 \
  --finetune-arg=--bc-weight=50 --runs-dir "$OUT/bc50" --json "$OUT/bc50_unit_a.json"
# At the cloning weight of 50, scratch_cloned beside the cloned runs above (bc50_scratch_unit_a.json; at a220448):
python_script benchmarks/finetune_experiment.py --tasks lift --policy-run "$OUT/bc50-policies/lift-s0" --unit a \
  --seeds 0 1 2 3 4 --conditions cloned scratch_cloned --cloned-actor-lr 3e-5 --cloned-lr-final-fraction 1 --robot-minutes 30 --eval-every 10 --eval-episodes 20 \
  --finetune-arg=--bc-weight=50 --runs-dir "$OUT/bc50" --json "$OUT/finetune.json"
# A pilot with the cloning weight at 200 (bc200_pilot_unit_a.json; at a220448), fine-tuning seeds 0-1:
python_script benchmarks/finetune_experiment.py --tasks lift --policy-run "$OUT/bc50-policies/lift-s0" --unit a \
  --seeds 0 1 --conditions cloned --cloned-actor-lr 3e-5 --cloned-lr-final-fraction 1 --robot-minutes 30 --eval-every 10 --eval-episodes 20 \
  --finetune-arg=--bc-weight=200 --runs-dir "$OUT/bc200" --json "$OUT/bc200_pilot_unit_a.json"
# A pilot with a 6,000-update critic warm-up at the cloning weight of 50 (critic_warmup_pilot_unit_a.json; at a220448):
python_script benchmarks/finetune_experiment.py --tasks lift --policy-run "$OUT/bc50-policies/lift-s0" --unit a \
  --seeds 0 1 --conditions cloned --cloned-actor-lr 3e-5 --cloned-lr-final-fraction 1 --robot-minutes 30 --eval-every 10 --eval-episodes 20 --finetune-arg=--bc-weight=50 \
  --finetune-arg=--critic-warmup-updates=6000 --runs-dir "$OUT/warm" --json "$OUT/critic_warmup_pilot_unit_a.json"
# Session of 2026-12-05, 09:17 (at 9cac61b), README "Unit a takes the light": three pilots.
# cloned_prior (cloned_prior_pilot_unit_a.json), fine-tuning seed 0, the bc-50 policy and demonstrations above:
python_script benchmarks/finetune_experiment.py --tasks lift --policy-run "$OUT/bc50-policies/lift-s0" --unit a \
  --seeds 0 --conditions cloned_prior --cloned-actor-lr 3e-5 --cloned-lr-final-fraction 1 --robot-minutes 30 --eval-every 10 --eval-episodes 20 --jobs 1 \
  --runs-dir "$OUT/bc50" --json "$OUT/cloned_prior_pilot_unit_a.json"
# A lift policy trained under randomisation over the units' ranges (randomised_policy_pilot_lift.json):
train_run "$OUT" dr-lift-s0 --recipe deployable --sim.task lift --seed 0 --video-episodes 0 --no-progress \
  --torch-threads 1 --sim.randomize.camera-pos-m 0.025 --sim.randomize.camera-rot-deg 4 \
  --sim.randomize.camera-fovy-deg 4 --sim.randomize.light-frac 0.1 --sim.randomize.friction-frac 0.35 \
  --sim.randomize.cube-mass-frac 0.35 --sim.randomize.max-latency-steps 2
for unit in a nominal; do
  u=(); [ "$unit" = a ] && u=(--robot.unit a)
  vlmrl deploy --policy "$OUT/dr-lift-s0/policy.pt" --episodes 20 --seed 2000000 --video-camera None --torch-threads 1 \
    --env.control-hz 1000 --twin-control-hz 20 "${u[@]}" --out-dir "$OUT/dr-before-$unit"
done
# A lift policy with standardised policy images, fine-tuned on unit a (std_policy_pilot_unit_a.json), seed 0:
train_run "$OUT" std-lift-s0 --recipe deployable --sim.task lift --seed 0 --video-episodes 0 --no-progress \
  --torch-threads 1 --agent.pixel.standardize
python_script benchmarks/finetune_experiment.py --tasks lift --policy-run "$OUT/std-lift-s0" --unit a --seeds 0 \
  --conditions cloned scratch_cloned --cloned-actor-lr 3e-5 --cloned-lr-final-fraction 1 --robot-minutes 30 --eval-every 10 --eval-episodes 20 --jobs 2 \
  --runs-dir "$OUT/std" --json "$OUT/std_policy_pilot_unit_a.json"
# Session of 2026-12-05, 20:09 (at c825a9d), README "The joint-target policy on unit b": results/deployable section
# 17's lift seed 0 (--sim.observe-targets, latency 0-2 periods) fine-tuned on unit b (targets_unit_b.json), then the
# pilots on fine-tuning seeds 0-1 (targets_*_pilot_unit_b.json) and --actor-lr 1e-5 on seeds 0-4.
python_script benchmarks/deployable_tasks.py --tasks lift --seeds 0 \
  --train-args '--sim.observe-targets --sim.randomize.max-latency-steps 2' --runs-dir "$OUT/tgt-policies" \
  --json "$OUT/tgt-policies.json"
tgt=(--tasks lift --policy-run "$OUT/tgt-policies/lift-s0" --unit b --robot-minutes 30 --eval-every 10 --eval-episodes 20)
lr3=(--cloned-actor-lr 3e-5 --cloned-lr-final-fraction 1)  # the cloned condition's actor rate until the last run below
python_script benchmarks/finetune_experiment.py "${tgt[@]}" "${lr3[@]}" --seeds 0 1 2 3 4 --conditions cloned scratch_cloned \
  --jobs 2 --runs-dir "$OUT/ft-tgt-b" --json "$OUT/targets_unit_b.json"
python_script benchmarks/finetune_experiment.py "${tgt[@]}" "${lr3[@]}" --seeds 0 1 --conditions cloned --jobs 1 \
  --finetune-arg=--bc-weight=500 --runs-dir "$OUT/ft-tgt-bc500" --json "$OUT/targets_bc500_pilot_unit_b.json"
python_script benchmarks/finetune_experiment.py "${tgt[@]}" "${lr3[@]}" --seeds 0 1 --conditions cloned --jobs 1 --demos 100 \
  --runs-dir "$OUT/ft-tgt-d100" --json "$OUT/targets_demos100_pilot_unit_b.json"
python_script benchmarks/finetune_experiment.py "${tgt[@]}" "${lr3[@]}" --seeds 0 1 --conditions cloned --jobs 1 \
  --finetune-arg=--scripted-operator.budget-steps=0 --finetune-arg=--scripted-operator.no-give-up \
  --runs-dir "$OUT/ft-tgt-notake" --json "$OUT/targets_no_takeovers_pilot_unit_b.json"
# --cloned-actor-lr 1e-5 (the default since; a constant rate until the annealed runs below): seeds 0-4 (targets_lr1e5_unit_b.json, also results/bench/finetune.json,
# collected with --collect-only from one folder holding these cloned runs and ft-tgt-b's scratch_cloned runs, which
# the rate does not reach).
python_script benchmarks/finetune_experiment.py "${tgt[@]}" --cloned-lr-final-fraction 1 --seeds 0 1 2 3 4 --conditions cloned --jobs 2 \
  --runs-dir "$OUT/ft-tgt-lr1e5" --json "$OUT/targets_lr1e5_unit_b.json"
# Reach on unit e (reach_units.json, reach_unit_e_pilot.json; policy at c825a9d, fine-tuning at 4083b5d and 3ac4f02):
python_script benchmarks/deployable_tasks.py --tasks reach --seeds 0 --runs-dir "$OUT/reach-pol" --json "$OUT/reach-pol.json"
vlmrl evaluate --policy "$OUT/reach-pol/reach-s0/policy.pt" --robot.unit all --episodes 20 --views 0 \
  --out-dir "$OUT/reach-pol/units-s0"
python_script benchmarks/finetune_experiment.py --tasks reach --policy-run "$OUT/reach-pol/reach-s0" --unit e \
  --seeds 0 1 2 3 4 --conditions cloned scratch_cloned --cloned-lr-final-fraction 1 --robot-minutes 10 --eval-every 5 --eval-episodes 20 --jobs 2 \
  --runs-dir "$OUT/ft-reach-e" --json "$OUT/reach_unit_e_pilot.json"
# The actor's rate annealed (annealed_unit_b.json; at 02995fc, before it was the cloned condition's default):
# seeds 0 and 2 as pilots, then 1, 3, 4, the demonstrations of ft-tgt-lr1e5 copied into the folder first.
mkdir -p "$OUT/ft-anneal/lift"
for s in 0 1 2 3 4; do
  [ -d "$OUT/ft-anneal/lift/demos-s$s" ] || [ ! -d "$OUT/ft-tgt-lr1e5/lift/demos-s$s" ] || \
    cp -a "$OUT/ft-tgt-lr1e5/lift/demos-s$s" "$OUT/ft-anneal/lift/"
done
python_script benchmarks/finetune_experiment.py "${tgt[@]}" --cloned-lr-final-fraction 1 --seeds 0 2 1 3 4 --conditions cloned \
  --finetune-arg=--actor-lr-final-fraction=0.1 --finetune-arg=--actor-lr-decay-minutes=15 --jobs 2 \
  --runs-dir "$OUT/ft-anneal" --json "$OUT/annealed_unit_b.json"
# Keys only (keys_only_unit_b.json; at fdf50fc, the annealed actor the cloned conditions' default): the same folder.
python_script benchmarks/finetune_experiment.py "${tgt[@]}" --seeds 0 1 2 3 4 --conditions cloned_keys_only --jobs 2 \
  --runs-dir "$OUT/ft-anneal" --json "$OUT/keys_only_unit_b.json"
# The annealed runs resumed to 60 robot minutes (cloned60_evicted_unit_b.json; at fdf50fc; the later --robot-minutes
# wins; the stores keep the 50,000 rows they were made with, so the demonstrations are evicted at ~41 minutes):
python_script benchmarks/finetune_experiment.py "${tgt[@]}" --robot-minutes 60 --cloned-lr-final-fraction 1 \
  --seeds 0 1 2 3 4 --conditions cloned --finetune-arg=--actor-lr-final-fraction=0.1 \
  --finetune-arg=--actor-lr-decay-minutes=15 --jobs 2 --runs-dir "$OUT/ft-anneal" --json "$OUT/cloned60_evicted_unit_b.json"
# 60 robot minutes with the demonstrations kept (keep60_pilot_unit_b.json; at 501cd41, capacity_argv's 87,026 rows):
mkdir -p "$OUT/ft-keep60/lift"
for s in 0 2; do
  [ -d "$OUT/ft-keep60/lift/demos-s$s" ] || [ ! -d "$OUT/ft-anneal/lift/demos-s$s" ] || \
    cp -a "$OUT/ft-anneal/lift/demos-s$s" "$OUT/ft-keep60/lift/"
done
python_script benchmarks/finetune_experiment.py "${tgt[@]}" --robot-minutes 60 --seeds 0 2 --conditions cloned --jobs 2 \
  --runs-dir "$OUT/ft-keep60" --json "$OUT/keep60_pilot_unit_b.json"
