#!/bin/bash
# The runner of the lift-learner grid and of the pixel lift runs (issue #13), as used: a clean clone at a
# fixed commit (CLONE, its .venv linked in), one run per call; two calls at a time shared the 2 cores.
# usage: run.sh CLONE NAME SEED STEPS OBS [extra vlmrl train args]   (OBS: state | robot; robot adds the
# reach recipe: --asymmetric-critic --agent.privileged-aux-weight 1.0). Writes OUT/NAME.json (OUT: /work/exp14-out).
set -u
CLONE=$1; NAME=$2; SEED=$3; STEPS=$4; OBS=$5; shift 5
cd $CLONE
export MUJOCO_GL=egl PYOPENGL_PLATFORM=egl PYTHONPATH=$CLONE
RUN=/work/exp14-out/runs/$NAME
rm -rf $RUN
START=$(date -u +%H:%M:%S)
BASE="--sim.task lift --replay uniform --eval-episodes 20 --no-progress --video-episodes 0 --torch-threads 1 --buffer.storage memory --total-steps $STEPS --eval-every-steps 2500 --demo-episodes 25 --agent.layer-norm --seed $SEED --policy-obs $OBS"
if [ "$OBS" = robot ]; then BASE="$BASE --asymmetric-critic --agent.privileged-aux-weight 1.0"; fi
CMD="python -m vlmrl train $BASE --run-dir RUN $*"
T0=$(date +%s)
.venv/bin/python -m vlmrl train $BASE --run-dir $RUN "$@" > /work/exp14-out/$NAME.log 2>&1
RC=$?
T1=$(date +%s)
.venv/bin/python - "$NAME" "$SEED" "$RUN" "$CMD" "$START" "$((T1-T0))" "$RC" "$OBS" "$CLONE" <<'PY'
import json, sys, glob, subprocess
name, seed, run, cmd, start, wall, rc, obs, clone = sys.argv[1:]
from tensorboard.backend.event_processing.event_accumulator import EventAccumulator
data = {}
for f in sorted(glob.glob(f"{run}/**/events.out.tfevents*", recursive=True)):
    ea = EventAccumulator(f, size_guidance={"scalars": 0}); ea.Reload()
    for tag in ("eval/success_rate", "train/q_mean", "train/critic_loss", "train/alpha", "train/entropy"):
        if tag in ea.Tags().get("scalars", []):
            data.setdefault(tag, []).extend((e.step, e.value) for e in ea.Scalars(tag))
ev = data.get("eval/success_rate", [])
steps = [s for s, _ in ev]; succ = [round(v, 3) for _, v in ev]
def thin(tag):
    xs = data.get(tag, [])
    if not xs: return []
    k = max(1, len(xs) // 8)
    return [(s, round(v, 3)) for s, v in xs[k-1::k]]
commit = subprocess.check_output(["git", "-C", clone, "rev-parse", "HEAD"], text=True).strip()
clean = subprocess.run(["git", "-C", clone, "diff", "--quiet", "HEAD"]).returncode == 0
cpu = [l.split(":",1)[1].strip() for l in open("/proc/cpuinfo") if l.startswith("model name")][0]
out = dict(name=name, task="lift", policy_obs=obs, seed=int(seed), command=cmd, rc=int(rc), wall_s=int(wall),
           curve_steps=steps, curve_success=succ, final_success=succ[-1] if succ else None,
           best_success=max(succ) if succ else None,
           q_mean=thin("train/q_mean"), critic_loss=thin("train/critic_loss"), alpha=thin("train/alpha"),
           git_commit=commit, tree_clean=clean, date="2026-12-01", started_utc=start, cpu_model=cpu, cpu_count=2)
json.dump(out, open(f"/work/exp14-out/{name}.json", "w"), indent=1)
print(name, succ, "wall", wall, "rc", rc)
PY
