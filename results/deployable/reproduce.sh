#!/usr/bin/env bash
# The deployable-learner study (issue #32): every run of results/deployable/README.md, then its table.
# usage: results/deployable/reproduce.sh OUT   (from the repository root; REPRODUCE_DRY_RUN=1 prints the commands)
# OUT gets the run dirs, logs/ and runs.json + table.md. Two runs at a time on 2 cores; a finished run
# (its report.md exists) is skipped and an unfinished one restarted, so a rerun resumes.
set -euo pipefail
OUT=${1:?usage: results/deployable/reproduce.sh OUT}
source results/lib.sh
mkdir -p "$OUT/logs"
ROBOT=(--policy-obs robot --sim.action-mode delta --replay uniform --asymmetric-critic --agent.privileged-aux-weight 1.0
  --buffer.storage memory --video-episodes 0 --no-progress)
REACH=(--sim.task reach "${ROBOT[@]}" --sim.reward shaped --total-steps 10000 --eval-every-steps 1000 --eval-episodes 20)
DEP=(--recipe deployable --video-episodes 0 --no-progress)
NT=("${DEP[@]}" --sim.no-terminate-on-success)

train() {  # train NAME ARGS...: one `vlmrl train`, its commit, CPU and wall-clock in logs/NAME.cmd (read by collect.py)
  local name=$1; shift
  finished "$OUT/$name/report.md" && return 0
  dry_run || rm -rf "${OUT:?}/$name"
  dry_run || echo "$(git rev-parse --short HEAD) $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | xargs) vlmrl train $* --run-dir runs/$name" > "$OUT/logs/$name.cmd"
  local start; start=$(date +%s)
  logged "$OUT/logs/$name.log" vlmrl train "$@" --run-dir "$OUT/$name"
  dry_run || echo "wall_s $(( $(date +%s) - start ))" >> "$OUT/logs/$name.cmd"
}

# Reach, shaped reward: episodes that end at success (the README's reach recipe otherwise).
train reach-term-s0 "${REACH[@]}" --seed 0 --sim.terminate-on-success &
train reach-abs-s0 "${REACH[@]}" --seed 0 --sim.terminate-on-success --buffer.absorbing-terminal &
wait
# Reach, the recipe (sparse, 25 demonstrations, ends at success): with and without the absorbing terminal.
for s in 0 1 2; do
  train reach-dep-s$s "${DEP[@]}" --sim.task reach --seed $s --sim.terminate-on-success --buffer.absorbing-terminal &
  train reach-dep-noabs-s$s "${DEP[@]}" --sim.task reach --seed $s --sim.terminate-on-success --buffer.no-absorbing-terminal &
  wait
done
# Lift: ending at success (with the absorbing terminal), and running on after it with UTD 2 and 10 critics.
train lift-dep-s0 "${DEP[@]}" --sim.task lift --seed 0 --sim.terminate-on-success --buffer.absorbing-terminal &
train lift-dep-s1 "${DEP[@]}" --sim.task lift --seed 1 --sim.terminate-on-success --buffer.absorbing-terminal &
wait
train lift-nt-utd2e10-s0 "${NT[@]}" --sim.task lift --seed 0 --agent.utd-ratio 2 --agent.num-critics 10 &
train lift-nt-utd2e10-s1 "${NT[@]}" --sim.task lift --seed 1 --agent.utd-ratio 2 --agent.num-critics 10 &
wait
# More demonstrations (session of 2026-12-03 23:44; demos.json, demos.md): push and place from robot
# observations and, as a diagnostic, from the state vector; 25 against 100 demonstrations, a shaped reward,
# gamma 0.99, the actor reading the auxiliary estimate, the wrist camera beside the front one.
STATE=(--policy-obs state --no-asymmetric-critic --agent.privileged-aux-weight 0 --sim.cameras)
train push-shaped-s0 "${DEP[@]}" --sim.task push --seed 0 --demo-episodes 25 --sim.reward shaped &
train place-shaped-s0 "${DEP[@]}" --sim.task place --seed 0 --sim.reward shaped &
wait
train push-state-s0 "${DEP[@]}" --sim.task push --seed 0 --demo-episodes 25 "${STATE[@]}" &
train place-state-s0 "${DEP[@]}" --sim.task place --seed 0 "${STATE[@]}" &
wait
train push-state-g99-s0 "${DEP[@]}" --sim.task push --seed 0 --demo-episodes 25 "${STATE[@]}" --buffer.gamma 0.99 &
train push-state-d100-s0 "${DEP[@]}" --sim.task push --seed 0 --demo-episodes 100 "${STATE[@]}" &
wait
train push-state-d100-s1 "${DEP[@]}" --sim.task push --seed 1 --demo-episodes 100 "${STATE[@]}" &
train place-state-d100-s0 "${DEP[@]}" --sim.task place --seed 0 --demo-episodes 100 "${STATE[@]}" &
wait
train push-d100-s0 "${DEP[@]}" --sim.task push --seed 0 --demo-episodes 100 &
train place-d100-s0 "${DEP[@]}" --sim.task place --seed 0 --demo-episodes 100 &
wait
train push-d100-s1 "${DEP[@]}" --sim.task push --seed 1 --demo-episodes 100 &
train push-d100-est-s0 "${DEP[@]}" --sim.task push --seed 0 --demo-episodes 100 --agent.actor-reads-estimate &
wait
train place-d100-est-s0 "${DEP[@]}" --sim.task place --seed 0 --demo-episodes 100 --agent.actor-reads-estimate &
train place-d100-wrist-s0 "${DEP[@]}" --sim.task place --seed 0 --demo-episodes 100 --sim.cameras front wrist &
wait
train lift-d100-s0 "${DEP[@]}" --sim.task lift --seed 0 --demo-episodes 100 &
train push-rec-s2 "${DEP[@]}" --sim.task push --seed 2 &   # the recipe since 47d8f98 (100 demonstrations)
wait
train lift-d100-s1 "${DEP[@]}" --sim.task lift --seed 1 --demo-episodes 100
# Lift's seeds 2-4 with 100 demonstrations, and place from 64 px policy images in 8 px patches (session of
# 2026-12-04 03:19).
train lift-d100-s2 "${DEP[@]}" --sim.task lift --seed 2 --demo-episodes 100 &
train lift-d100-s3 "${DEP[@]}" --sim.task lift --seed 3 --demo-episodes 100 &
wait
train lift-d100-s4 "${DEP[@]}" --sim.task lift --seed 4 --demo-episodes 100 &
train place-d100-p8-s0 "${DEP[@]}" --sim.task place --seed 0 --demo-episodes 100 --agent.pixel.image-size 0 \
  --agent.pixel.patch-size 8 &
wait
# Reach after its targets gained their clearance from the home tool point (3fdf494: no episode starts solved).
for s in 0 1 2; do train reach-dep-clear-s$s "${DEP[@]}" --sim.task reach --seed $s; done
# The grid (section 8; session of 2026-12-04 15:19): the recipe on the four tasks, seeds 0-4, each run's
# best and final policy on 100 fresh seeds; writes OUT/deployable_tasks.json (results/bench/deployable_tasks.json).
python_script benchmarks/deployable_tasks.py --tasks reach lift push place --seeds 0 1 2 3 4 --runs-dir "$OUT/grid" \
  --json "$OUT/deployable_tasks.json"
# Section 9 (session of 2026-12-04 18:16): lift with a higher target entropy, seeds 0-4 (lift_target_entropy.json).
python_script benchmarks/deployable_tasks.py --tasks lift --seeds 0 1 2 3 4 --train-args '--agent.target-entropy -3' \
  --runs-dir "$OUT/target-entropy" --json "$OUT/lift_target_entropy.json"
# Section 11 (session of 2026-12-04 21:09): end-effector actions on the four tasks, seeds 0-4 (ee_delta.json), and
# seed 0's lift and place policies through `vlmrl deploy` on the twin arm path.
python_script benchmarks/deployable_tasks.py --tasks reach push place lift --seeds 0 1 2 3 4 \
  --train-args '--sim.action-mode ee_delta' --runs-dir "$OUT/ee-delta" --json "$OUT/ee_delta.json"
for task in lift place; do
  logged "$OUT/logs/deploy-ee-$task-s0.log" vlmrl deploy --policy "$OUT/ee-delta/$task-s0/policy.pt" --episodes 10 \
    --out-dir "$OUT/deploy-ee-$task-s0"
done
# Section 12 (session of 2026-12-05): every section-11 lift and place policy through `vlmrl deploy` on the twin arm path
# (20 held-out episodes each), and lift trained with --sim.ee-arm-steps (seeds 0-1) deployed the same way (ee_deploy.json).
for task in lift place; do
  for s in 0 1 2 3 4; do
    logged "$OUT/logs/deploy20-ee-$task-s$s.log" vlmrl deploy --policy "$OUT/ee-delta/$task-s$s/policy.pt" --episodes 20 \
      --seed 2000000 --video-camera None --torch-threads 1 --env.control-hz 1000 --twin-control-hz 20 \
      --out-dir "$OUT/deploy20-ee-$task-s$s"
  done
done
python_script benchmarks/deployable_tasks.py --tasks lift --seeds 0 1 --train-args=--sim.ee-arm-steps \
  --runs-dir "$OUT/ee-arm-steps" --json "$OUT/ee_arm_steps.json"
for s in 0 1; do
  logged "$OUT/logs/deploy20-steps-lift-s$s.log" vlmrl deploy --policy "$OUT/ee-arm-steps/lift-s$s/policy.pt" --episodes 20 \
    --seed 2000000 --video-camera None --torch-threads 1 --env.control-hz 1000 --twin-control-hz 20 \
    --out-dir "$OUT/deploy20-steps-lift-s$s"
done
# Section 13 (session of 2026-12-05, 03:34; at c9b6991): push with 200 demonstrations and with UTD 2 (seeds 0-1), place
# with 100 demonstrations (seeds 0-4; the recipe's own setting for place since) (levers_c9b6991.json).
python_script benchmarks/deployable_tasks.py --tasks push --seeds 0 1 --train-args '--demo-episodes 200' \
  --runs-dir "$OUT/push-d200" --json "$OUT/push_d200.json"
python_script benchmarks/deployable_tasks.py --tasks push --seeds 0 1 --train-args '--agent.utd-ratio 2' \
  --runs-dir "$OUT/push-utd2" --json "$OUT/push_utd2.json"
# (--agent.lr-final-fraction 1: the constant rates of c9b6991, which place's recipe decays since section 16.)
python_script benchmarks/deployable_tasks.py --tasks place --seeds 0 1 2 3 4 \
  --train-args '--demo-episodes 100 --agent.lr-final-fraction 1' --runs-dir "$OUT/place-d100" --json "$OUT/place_d100.json"
# Section 14 (session of 2026-12-05, 06:25): push with the expert that pushes on to the centre (at 23ecd84), then with
# demonstrations cut 10 steps after the first success (at 007699e), seeds 0-1 (levers_push_23ecd84.json).
python_script benchmarks/deployable_tasks.py --tasks push --seeds 0 1 --runs-dir "$OUT/push-expert2" --json "$OUT/push_expert2.json"
python_script benchmarks/deployable_tasks.py --tasks push --seeds 0 1 --train-args '--demo-steps-after-success 10' \
  --runs-dir "$OUT/push-hold10" --json "$OUT/push_hold10.json"
# Section 10: place from a state teacher (seed 0's state run) distilled into robot-observation students (place_teacher.json).
train place-state-teacher-s0 "${DEP[@]}" --sim.task place --seed 0 "${STATE[@]}"
for s in 0 1 2 3 4; do
  train place-student-w1-s$s "${DEP[@]}" --sim.task place --seed $s --teacher-policy "$OUT/place-state-teacher-s0/best_policy.pt" \
    --agent.teacher-weight 1.0
done
for s in 0 1; do
  train place-student-w1enc-s$s "${DEP[@]}" --sim.task place --seed $s --teacher-policy "$OUT/place-state-teacher-s0/best_policy.pt" \
    --agent.teacher-weight 1.0 --agent.actor-trains-encoder &
  train place-student-final-s$s "${DEP[@]}" --sim.task place --seed $s --teacher-policy "$OUT/place-state-teacher-s0/policy.pt" \
    --agent.teacher-weight 1.0 &
  wait
done
python_script benchmarks/reevaluate.py "$OUT"/place-state-teacher-s0 "$OUT"/place-student-*-s? --episodes 100 --json "$OUT/place_teacher_fresh.json"
python_script results/deployable/collect.py "$OUT" --out "$OUT"
# Section 15 (session of 2026-12-05, 09:17; at 9cac61b): lift with standardised policy images (--agent.pixel.standardize)
# against the recipe, seeds 0-4, then every policy on the twin's units, and seed 0 of each by unit a's factors
# (units_lift_std.json; `--robot.unit a/factors` is new at 656e193, after the runs' commit).
python_script benchmarks/deployable_tasks.py --tasks lift --seeds 0 1 2 3 4 --runs-dir "$OUT/recipe-policies" \
  --json "$OUT/recipe_policies.json"
python_script benchmarks/deployable_tasks.py --tasks lift --seeds 0 1 2 3 4 --train-args=--agent.pixel.standardize \
  --runs-dir "$OUT/std-policies" --json "$OUT/std_policies.json"
for c in recipe std; do
  for s in 0 1 2 3 4; do
    vlmrl evaluate --policy "$OUT/$c-policies/lift-s$s/policy.pt" --robot.unit all --episodes 20 --views 0 \
      --torch-threads 1 --out-dir "$OUT/units/$c-s$s"
  done
  vlmrl evaluate --policy "$OUT/$c-policies/lift-s0/policy.pt" --robot.unit a/factors --episodes 20 --views 0 \
    --torch-threads 1 --out-dir "$OUT/units/$c-s0-factors"
done
python_script results/deployable/units_summary.py "$OUT/units" --conditions recipe std --seeds 0 1 2 3 4 \
  --json "$OUT/units_lift_std.json"
# Section 15's latency pilot (lift_latency_pilot.json; at 95ac25f, where the recipe standardises lift's images):
train "lift-latency-s0" --recipe deployable --sim.task lift --seed 0 --video-episodes 0 --no-progress --torch-threads 1 \
  --sim.randomize.max-latency-steps 2
vlmrl evaluate --policy "$OUT/lift-latency-s0/policy.pt" --robot.unit a/factors b c d e --episodes 20 --views 0 \
  --torch-threads 1 --out-dir "$OUT/units/latency-s0"
# Section 15's place pilot (place_standardize_pilot.json; seeds 0-1 at 858471b), and the recipe's place policies of section 13
# ($OUT/place-d100, trained above) on the units:
python_script benchmarks/deployable_tasks.py --tasks place --seeds 0 1 \
  --train-args '--agent.pixel.standardize --agent.lr-final-fraction 1' --runs-dir "$OUT/place-std" --json "$OUT/place_std.json"
for s in 0 1; do
  vlmrl evaluate --policy "$OUT/place-std/place-s$s/policy.pt" --robot.unit all --episodes 20 --views 0 \
    --torch-threads 1 --out-dir "$OUT/units-place/std-s$s"
done
for s in 0 1 2 3 4; do
  vlmrl evaluate --policy "$OUT/place-d100/place-s$s/policy.pt" --robot.unit all --episodes 20 --views 0 \
    --torch-threads 1 --out-dir "$OUT/units-place/recipe-s$s"
done
# Section 16 (sessions of 2026-12-05, 12:20 and 13:59): push ending at success with the absorbing terminal (at 858471b;
# push_terminate_pilot.json), push with learning rates decayed to a tenth (at acf6a09; push_lr_decay_pilot.json), place
# likewise over seeds 0-4 (place_lr_decay.json; the recipe's own setting for place since, so plain --tasks place reruns
# it), push with 64 px policy images in 8 px patches and with ten critics (at acf6a09; push_px64_pilot.json,
# push_ensemble_pilot.json).
python_script benchmarks/deployable_tasks.py --tasks push --seeds 0 1 \
  --train-args '--sim.terminate-on-success --buffer.absorbing-terminal' --runs-dir "$OUT/push-term" --json "$OUT/push_term.json"
python_script benchmarks/deployable_tasks.py --tasks push --seeds 0 1 --train-args '--agent.lr-final-fraction 0.1' \
  --runs-dir "$OUT/push-lr" --json "$OUT/push_lr.json"
python_script benchmarks/deployable_tasks.py --tasks place --seeds 0 1 2 3 4 --train-args '--agent.lr-final-fraction 0.1' \
  --runs-dir "$OUT/place-lr" --json "$OUT/place_lr.json"
python_script benchmarks/deployable_tasks.py --tasks push --seeds 0 1 \
  --train-args '--agent.pixel.image-size 64 --agent.pixel.patch-size 8' --runs-dir "$OUT/push-px64" --json "$OUT/push_px64.json"
python_script benchmarks/deployable_tasks.py --tasks push --seeds 0 1 --train-args '--agent.num-critics 10' \
  --runs-dir "$OUT/push-ens10" --json "$OUT/push_ens10.json"
# Section 17 (session of 2026-12-05, 17:01; at 70cf0ae): push with potential-based shaping and with 4-degree joint
# steps (push_shaping_pilot.json, push_maxdelta4_pilot.json), lift seeing its joint targets under randomised latency
# (lift_targets.json), and those lift policies on the units (units_lift_targets.json).
python_script benchmarks/deployable_tasks.py --tasks push --seeds 0 1 --train-args '--reward-shaping potential' \
  --runs-dir "$OUT/push-shape" --json "$OUT/push_shape.json"
python_script benchmarks/deployable_tasks.py --tasks push --seeds 0 1 --train-args '--sim.max-delta-deg 4' \
  --runs-dir "$OUT/push-maxdelta4" --json "$OUT/push_maxdelta4.json"
python_script benchmarks/deployable_tasks.py --tasks lift --seeds 0 1 2 3 4 \
  --train-args '--sim.observe-targets --sim.randomize.max-latency-steps 2' --runs-dir "$OUT/lift-tgt" --json "$OUT/lift_targets.json"
for s in 0 1 2 3 4; do
  vlmrl evaluate --policy "$OUT/lift-tgt/lift-s$s/policy.pt" --robot.unit all --episodes 20 --views 0 \
    --torch-threads 1 --out-dir "$OUT/units-tgt/tgt-s$s"
done
vlmrl evaluate --policy "$OUT/lift-tgt/lift-s0/policy.pt" --robot.unit a/factors --episodes 20 --views 0 \
  --torch-threads 1 --out-dir "$OUT/units-tgt/tgt-s0-factors"
python_script results/deployable/units_summary.py "$OUT/units-tgt" --conditions tgt --seeds 0 1 2 3 4 \
  --baseline results/deployable/units_lift_std.json:std --json "$OUT/units_lift_targets.json"
# Sections 18-24: two-seed push pilots, each its final policies re-evaluated on 100 fresh seeds.
# push_pilot RUNS_DIR JSON TRAIN_ARGS [more deployable_tasks.py options]
push_pilot() {
  local runs=$1 json=$2 args=$3
  shift 3
  python_script benchmarks/deployable_tasks.py --tasks push --seeds 0 1 "$@" --reeval-episodes 100 \
    --train-args "$args" --runs-dir "$OUT/$runs" --json "$OUT/$json"
}
# Section 18 (session of 2026-12-06, 02:30; at a8ebcae): push trained with the reward paid only within 2 cm of the
# zone's centre, success still 3 cm (push_reward_radius_pilot.json; its gate failed, seeds 2-4 not run).
push_pilot push-r2 push_reward_radius.json '--sim.reward-radius-m 0.02'
# Section 19 (session of 2026-12-06, 03:00; at f79e426): push with the wrist camera beside the front one
# (push_wrist_pilot.json; its gate failed, seeds 2-4 not run).
push_pilot push-wrist push_wrist.json '--sim.cameras front wrist'
# Section 20 (session of 2026-12-06, 08:30): push with three-step returns and with a behaviour-cloning weight of
# 1.0 (push_nstep3_pilot.json, push_bc1_pilot.json).
push_pilot push-nstep3 push_nstep3.json '--buffer.n-step 3'
push_pilot push-bc1 push_bc1.json '--agent.bc-weight 1.0'
# Section 21 (session of 2026-12-06, 09:10): push from demonstrations recorded with noise on the expert's actions
# (push_demo_noise02_pilot.json, push_demo_noise03_pilot.json).
for s in 0.2 0.3; do
  push_pilot "push-dnoise$s" "push_demo_noise$s.json" "--demo-action-noise $s"
done
# Section 22 (session of 2026-12-06, 09:15): push with actor and critics of 256 x 256 and 256 x 256 x 256 units
# (push_h256x2_pilot.json, push_h256x3_pilot.json).
push_pilot push-h256x2 push_h256x2.json '--agent.hidden-dims 256 256'
push_pilot push-h256x3 push_h256x3.json '--agent.hidden-dims 256 256 256'
# Section 23 (session of 2026-12-06, 09:47): push with batches of 256 and with a quarter of each batch from the
# demonstrations (push_batch256_pilot.json, push_prior025_pilot.json).
push_pilot push-batch256 push_batch256.json '--batch-size 256'
push_pilot push-prior025 push_prior025.json '--prior-share 0.25'
# Section 24 (session of 2026-12-06, 10:17): push with a curriculum on the zone's distance over the first 15,000
# steps (push_task_ramp_pilot.json).
push_pilot push-ramp push_task_ramp.json '--task-ramp-steps 15000' --jobs 2
# Section 25 (session of 2026-12-06, 11:50): push with training episodes jump-started by the scripted expert, its
# share falling to none at step 15,000 and at step 30,000 (push_jump15k_pilot.json, push_jump30k_pilot.json).
push_pilot push-jump15k push_jump15k.json '--jump-start-steps 15000' --jobs 2
push_pilot push-jump30k push_jump30k.json '--jump-start-steps 30000' --jobs 2
# Section 26 (session of 2026-12-06, 12:55): a screen of learner levers on push from the state vector
# (push_state_*_screen.json): the recipe from state, no cloning term, UTD 4 with 10 critics, gamma 0.99.
PUSH_STATE='--policy-obs state --no-asymmetric-critic --agent.privileged-aux-weight 0 --sim.cameras'
push_pilot push-state-ref push_state_ref.json "$PUSH_STATE" --jobs 2
push_pilot push-state-bc0 push_state_bc0.json "$PUSH_STATE --agent.bc-weight 0" --jobs 2
push_pilot push-state-utd4e10 push_state_utd4e10.json "$PUSH_STATE --agent.utd-ratio 4 --agent.num-critics 10" --jobs 2
push_pilot push-state-g99 push_state_g99.json "$PUSH_STATE --buffer.gamma 0.99" --jobs 2
# Section 27 (session of 2026-12-06, 12:20): push from the state vector with the reward paid within 2 cm, and with a
# cloning weight of 1.0 (push_state_r2_screen.json, push_state_bc1_screen.json).
push_pilot push-state-r2 push_state_r2.json "$PUSH_STATE --sim.reward-radius-m 0.02" --jobs 2
push_pilot push-state-bc1 push_state_bc1.json "$PUSH_STATE --agent.bc-weight 1.0" --jobs 2
# Where the pushes of section 26's reference and of section 27's cells stop (seed 1's final policies, 30 fresh
# episodes run to the time limit; push_probe_state.json).
python_script benchmarks/push_probe.py "$OUT/push-state-ref/push-s1/policy.pt" "$OUT/push-state-r2/push-s1/policy.pt" \
  "$OUT/push-state-bc1/push-s1/policy.pt" --expert --episodes 30 --json "$OUT/push_probe_state.json"
# Section 28 (session of 2026-12-06, 12:35): push with the expert taking over training episodes stalled for 10
# steps, its steps with the demonstrations (push_takeover_pilot.json; push_state_takeover_screen.json).
push_pilot push-takeover push_takeover.json '--takeover-stall-steps 10 --buffer.prior-info-key intervention' --jobs 2
push_pilot push-state-takeover push_state_takeover.json "$PUSH_STATE --takeover-stall-steps 10 --buffer.prior-info-key intervention" --jobs 2
# Section 29 (session of 2026-12-06, 12:47): push cloned with weight 1.0 whose gradient also trains the encoder
# (push_bc1_encoder_pilot.json), and push from the state vector cloned with weight 2.5 (push_state_bc25_screen.json).
push_pilot push-bc1-encoder push_bc1_encoder.json '--agent.bc-weight 1.0 --agent.actor-trains-encoder' --jobs 2
push_pilot push-state-bc25 push_state_bc25.json "$PUSH_STATE --agent.bc-weight 2.5" --jobs 2
# Section 30 (session of 2026-12-06, 13:08): push cloned with weight 2.5 whose gradient also trains the encoder
# (push_bc25_encoder_pilot.json).
push_pilot push-bc25-encoder push_bc25_encoder.json '--agent.bc-weight 2.5 --agent.actor-trains-encoder' --jobs 2
# Section 31 (session of 2026-12-06, 14:11): push from the state vector with 5,000 updates on the demonstrations
# before the first step (push_state_du5k_screen.json), and with target entropy -12
# (push_state_te12_screen.json).
push_pilot push-state-du5k push_state_du5k.json "$PUSH_STATE --demo-updates 5000 --learning-starts 0" --jobs 2
push_pilot push-state-te12 push_state_te12.json "$PUSH_STATE --agent.target-entropy -12" --jobs 2
# Section 32 (session of 2026-12-06, 14:21): IBRL's proposals after 5,000 demonstration updates, from the state
# vector (push_state_ibrl_screen.json) and from robot observations (push_ibrl_pilot.json).
push_pilot push-state-ibrl push_state_ibrl.json "$PUSH_STATE --demo-updates 5000 --learning-starts 0 --agent.proposals" --jobs 2
push_pilot push-ibrl push_ibrl.json '--demo-updates 5000 --learning-starts 0 --agent.proposals' --jobs 2
# Section 33 (session of 2026-12-06, 14:41): 5,000 demonstration updates with the clone's gradient in the encoder
# (push_du_bc1_encoder_pilot.json), and from the state vector with cloning weight 2.5 (push_state_du_bc25_screen.json)
# and with 20,000 demonstration updates (push_state_du20k_screen.json).
push_pilot push-du-bc1-encoder push_du_bc1_encoder.json '--demo-updates 5000 --learning-starts 0 --agent.bc-weight 1.0 --agent.actor-trains-encoder' --jobs 2
push_pilot push-state-du-bc25 push_state_du_bc25.json "$PUSH_STATE --demo-updates 5000 --learning-starts 0 --agent.bc-weight 2.5" --jobs 2
push_pilot push-state-du20k push_state_du20k.json "$PUSH_STATE --demo-updates 20000 --learning-starts 0" --jobs 2
# Section 34 (session of 2026-12-06, 15:11): push that sees its joint targets, from the state vector
# (push_state_targets_screen.json), with the recipe (push_targets_pilot.json) and with section 33's (a)
# (push_du_bc1_encoder_targets_pilot.json).
push_pilot push-state-targets push_state_targets.json "$PUSH_STATE --sim.observe-targets" --jobs 2
push_pilot push-targets push_targets.json '--sim.observe-targets' --jobs 2
push_pilot push-du-bc1-encoder-targets push_du_bc1_encoder_targets.json '--sim.observe-targets --demo-updates 5000 --learning-starts 0 --agent.bc-weight 1.0 --agent.actor-trains-encoder' --jobs 2
# Section 34's seeds 2-4 of (c), three at once, then the five-seed summary (push_du_bc1_encoder_targets_pilot.json;
# its push rows are results/bench/deployable_tasks.json's since).
python_script benchmarks/deployable_tasks.py --tasks push --seeds 2 3 4 --jobs 3 --reeval-episodes 100 \
  --train-args '--sim.observe-targets --demo-updates 5000 --learning-starts 0 --agent.bc-weight 1.0 --agent.actor-trains-encoder' \
  --runs-dir "$OUT/push-du-bc1-encoder-targets" --json "$OUT/push_du_bc1_encoder_targets_s234.json"
python_script benchmarks/deployable_tasks.py --tasks push --seeds 0 1 2 3 4 --collect-only --reeval-episodes 100 \
  --runs-dir "$OUT/push-du-bc1-encoder-targets" --json "$OUT/push_du_bc1_encoder_targets_pilot.json"
