"""Deployable pixel policies: our SAC on robot observations (joints + camera) vs SB3 SAC, same env and budget.

Two parts, both on the SO-101 twin with ``--policy-obs robot`` observations (the LeRobot joint keys and a
64 px front camera, nothing privileged):

1. Update cost: one SAC update at batch 256 on one thread with the twin's state vector, and with the
   robot observations at the default policy image size; the figure per learner is the median over
   interleaved rounds in process CPU time (as ``sac_vs_sb3.py``). ``pixel_to_state_cost`` = pixel / state;
   ``former_encoder_to_state_cost`` is the same for the encoder before the patch embedding (3x3 convs,
   stride 2-2-1, 8-16-16 channels), timed in the same rounds.
2. Learning: ``vlmrl train --policy-obs robot`` on ``reach`` (and ``lift`` with 25 scripted demonstrations,
   unless ``--quick``) per seed, each run its own process with one torch thread, ``--workers`` at a time;
   in the same run, Stable-Baselines3 SAC with ``MultiInputPolicy`` on the same observations
   (``sim.wrappers.SB3Keys`` renames the ``*.pos`` keys SB3 cannot build on), the same step budget,
   batch size, warm-up, network width and initial temperature, wall-clock capped at ``--sb3-cap-s``.
   Success vs env steps and vs wall-clock seconds from each process's launch.

JSON keys: ``pixel_update_s``, ``state_update_s``, ``pixel_to_state_cost``, ``reach_success`` and
``lift_success`` (mean final success over seeds; null when not run), ``wall_s_to_90_reach`` (median over
seeds of the first evaluation at >= 90%, null if a seed never got there), ``sb3_wall_s_to_90_reach``
(likewise, null if SB3 never got there within the cap), ``speedup_vs_sb3`` (SB3's wall-clock to 90% over
ours; where SB3 does not get there, the cap over ours with ``speedup_is_lower_bound: true``), plus the
curves under ``details``.

    .venv/bin/python benchmarks/pixel_learning.py --quick --json results/bench/pixel_learning.json
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import os
import shlex
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

BATCH = 256
IMAGE_PX = 64


# ----------------------------------------------------------------------------------------- update cost
def random_batch(spec: dict[str, tuple[tuple[int, ...], np.dtype]], action_dim: int, seed: int) -> Any:
    from buffer.batch import Batch

    rng = np.random.default_rng(seed)

    def obs() -> dict[str, np.ndarray]:
        return {
            k: rng.integers(0, 256, (BATCH, *shape), dtype=np.uint8)
            if np.dtype(dtype) == np.uint8
            else rng.normal(size=(BATCH, *shape)).astype(np.float32)
            for k, (shape, dtype) in spec.items()
        }

    ones = np.ones(BATCH, np.float32)
    action = rng.uniform(-1, 1, (BATCH, action_dim)).astype(np.float32)
    return Batch(
        obs(),
        action,
        rng.normal(size=BATCH).astype(np.float32),
        obs(),
        0 * ones,
        0.99 * ones,
        ones,
        np.arange(BATCH),
    )


def update_costs(rounds: int, updates: int) -> dict[str, Any]:
    """Seconds per SAC update (process CPU time, one thread) on state vs robot observations."""
    import gymnasium as gym
    import torch

    from agents.config import FORMER_ENCODER
    from agents.sac import SAC
    from robot.contract import JOINT_KEYS
    from vlmrl.online.config import TrainConfig

    torch.set_num_threads(1)
    agent_cfg = TrainConfig().agent
    # the encoder before the patch embedding (3x3 convs, stride 2-2-1, 8-16-16 channels), for comparison
    former_cfg = dataclasses.replace(agent_cfg, pixel=dataclasses.replace(agent_cfg.pixel, **FORMER_ENCODER))
    action_space = gym.spaces.Box(-1.0, 1.0, (6,), np.float32)
    state_spec = {"state": ((23,), np.dtype(np.float32))}  # the twin's lift state vector
    robot_spec = {
        **{k: ((1,), np.dtype(np.float32)) for k in JOINT_KEYS},
        "pixels/front": ((IMAGE_PX, IMAGE_PX, 3), np.dtype(np.uint8)),
    }
    learners = {
        "state": (SAC(agent_cfg, state_spec, action_space), random_batch(state_spec, 6, 0)),
        "pixel": (SAC(agent_cfg, robot_spec, action_space), random_batch(robot_spec, 6, 1)),
        "former": (SAC(former_cfg, robot_spec, action_space), random_batch(robot_spec, 6, 1)),
    }
    times: dict[str, list[float]] = {name: [] for name in learners}
    for agent, batch in learners.values():  # warm-up
        for _ in range(3):
            agent.update(batch)
    for _ in range(rounds):
        for name, (agent, batch) in learners.items():
            start = time.process_time()
            for _ in range(updates):
                agent.update(batch)
            times[name].append((time.process_time() - start) / updates)
    pixel, state = statistics.median(times["pixel"]), statistics.median(times["state"])
    former = statistics.median(times["former"])
    return {
        "pixel_update_s": pixel,
        "state_update_s": state,
        "pixel_to_state_cost": pixel / state,
        "former_encoder_update_s": former,
        "former_encoder_to_state_cost": former / state,
        "cost_details": {
            "batch_size": BATCH,
            "frame_px": IMAGE_PX,
            "policy_image_px": agent_cfg.pixel.image_size,
            "encoder": {
                k: getattr(agent_cfg.pixel, k)
                for k in ("patch_size", "first_channels", "channels", "num_layers", "strided_layers")
            },
            "hidden_dims": list(agent_cfg.hidden_dims),
            "clock": "process CPU time, 1 torch thread",
            "rounds_s": times,
        },
    }


# ------------------------------------------------------------------------------------------- learning
def child_env() -> dict[str, str]:
    env = dict(os.environ, OMP_NUM_THREADS="1", MKL_NUM_THREADS="1")
    env.setdefault("MUJOCO_GL", "egl")
    env.setdefault("PYOPENGL_PLATFORM", "egl")
    return env


def ours_command(run: dict[str, Any]) -> list[str]:
    cmd = [
        sys.executable, "-m", "vlmrl", "train", "--sim.task", run["task"], "--policy-obs", "robot",
        "--replay", "uniform", "--total-steps", str(run["steps"]), "--eval-every-steps", str(run["eval_every"]),
        "--eval-episodes", str(run["eval_episodes"]), "--seed", str(run["seed"]), "--run-dir", run["dir"],
        "--no-progress", "--video-episodes", "0", "--torch-threads", "1", "--buffer.storage", "memory",
    ]  # fmt: skip
    # lift keeps the train defaults (delta actions, sparse reward) of the replay table
    if run["task"] == "reach":
        cmd += ["--sim.action-mode", run["action_mode"], "--sim.reward", run["reward"]]
    if run["demos"]:
        cmd += ["--demo-episodes", str(run["demos"]), "--agent.layer-norm"]
    return cmd + list(run.get("extra", []))


def sb3_command(run: dict[str, Any]) -> list[str]:
    return [sys.executable, __file__, "--sb3-worker", json.dumps(run)]


def ours_curve(run_dir: str, launch: float) -> list[dict[str, float]]:
    """Evaluations of a finished `vlmrl train` run: env step, seconds since launch, success rate, return."""
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

    events = EventAccumulator(str(Path(run_dir) / "tb"))
    events.Reload()
    if "eval/success_rate" not in events.Tags()["scalars"]:
        return []
    returns = {e.step: e.value for e in events.Scalars("eval/return")}
    return [
        {"step": float(e.step), "wall_s": e.wall_time - launch, "success": float(e.value),
         "return": float(returns[e.step])}
        for e in events.Scalars("eval/success_rate")
    ]  # fmt: skip


def sb3_worker(run: dict[str, Any]) -> None:
    """One SB3 SAC run (this file re-invoked with ``--sb3-worker``): writes its curve to ``run["out"]``."""
    import torch
    from stable_baselines3 import SAC as SB3SAC

    from sim import make_env
    from sim.wrappers import ROBOT_KEYS, SB3Keys
    from vlmrl.online.config import TrainConfig

    torch.set_num_threads(1)
    defaults = TrainConfig()
    sim_cfg = dataclasses.replace(
        defaults.sim, task=run["task"], action_mode=run["action_mode"], reward=run["reward"]
    )
    env = SB3Keys(make_env(sim_cfg), keep=ROBOT_KEYS)
    eval_env = SB3Keys(make_env(sim_cfg), keep=ROBOT_KEYS)
    model = SB3SAC(
        "MultiInputPolicy",
        env,
        batch_size=defaults.batch_size,
        learning_starts=defaults.learning_starts,
        buffer_size=run["steps"] + 1,
        gamma=defaults.buffer.gamma,
        ent_coef=f"auto_{defaults.agent.init_alpha}",
        policy_kwargs={"net_arch": list(defaults.agent.hidden_dims)},
        seed=run["seed"],
        device="cpu",
    )
    learn_with_evaluations(model, eval_env, run)


def learn_with_evaluations(model: Any, eval_env: Any, run: dict[str, Any]) -> None:
    """SB3 ``model.learn`` for ``run["steps"]``, evaluated by ``vlmrl.evaluation.episodes.evaluate`` every
    ``run["eval_every"]`` steps and at the end; the curve (step, seconds since launch, success, return)
    goes to ``run["out"]`` after each evaluation. Learning stops early past ``run["cap_s"]`` if given."""
    from stable_baselines3.common.callbacks import BaseCallback

    from vlmrl.evaluation.episodes import eval_seeds, evaluate

    curve: list[dict[str, float]] = []
    cap_s = run.get("cap_s") or float("inf")

    def evaluation(step: int) -> None:
        result = evaluate(
            eval_env,
            lambda obs: model.predict(obs, deterministic=True)[0],
            eval_seeds(run["seed"], run["eval_episodes"]),
        )
        curve.append(
            {"step": float(step), "wall_s": time.time() - run["launch"], "success": result.success_rate,
             "return": result.mean_return}
        )  # fmt: skip
        Path(run["out"]).write_text(json.dumps(curve))

    class Every(BaseCallback):
        def _on_step(self) -> bool:
            if self.num_timesteps % run["eval_every"] == 0:
                evaluation(self.num_timesteps)
            return time.time() - run["launch"] < cap_s

    model.learn(total_timesteps=run["steps"], callback=Every())
    if not curve or curve[-1]["step"] != model.num_timesteps:
        evaluation(model.num_timesteps)


def run_all(
    runs: list[dict[str, Any]],
    workers: int,
    commands: dict[str, Callable[[dict[str, Any]], list[str]]] | None = None,
) -> None:
    """Launch the runs' processes, ``workers`` at a time; each run gets its ``launch`` time and log.

    ``commands`` maps a run's ``learner`` to its command line (default: this file's ours and SB3).
    """
    commands = commands or {"ours": ours_command, "sb3": sb3_command}
    pending, active = list(runs), []
    while pending or active:
        while pending and len(active) < workers:
            run = pending.pop(0)
            run["launch"] = time.time()
            cmd = commands[run["learner"]](run)
            log = open(run["log"], "w")  # noqa: SIM115 (closed when the process ends)
            active.append(
                (run, subprocess.Popen(cmd, stdout=log, stderr=subprocess.STDOUT, env=child_env()), log)
            )
            print(f"started {run['learner']} {run['task']} seed {run['seed']}", flush=True)
        time.sleep(2.0)
        for item in list(active):
            run, proc, log = item
            if proc.poll() is not None:
                log.close()
                active.remove(item)
                run["returncode"] = proc.returncode
                run["end_s"] = time.time() - run["launch"]
                print(
                    f"finished {run['learner']} {run['task']} seed {run['seed']} rc={proc.returncode}",
                    flush=True,
                )


def first_wall_at(curve: list[dict[str, float]], level: float = 0.9) -> float | None:
    """Wall-clock seconds of the first evaluation at or above ``level``. Success rates come back from
    TensorBoard as float32 (18/20 reads 0.89999998), hence the tolerance."""
    return next((p["wall_s"] for p in curve if p["success"] >= level - 1e-6), None)


def learning(args: argparse.Namespace, work: Path) -> dict[str, Any]:
    tasks = [("reach", 0, args.reach_steps)] + ([] if args.skip_lift else [("lift", 25, args.lift_steps)])
    runs: list[dict[str, Any]] = []
    for seed in args.seeds:
        for task, demos, steps in tasks:
            common = {"task": task, "seed": seed, "steps": steps, "eval_every": args.eval_every,
                      "eval_episodes": args.eval_episodes, "demos": demos, "action_mode": args.action_mode,
                      "reward": args.reward, "extra": shlex.split(args.ours_args)}  # fmt: skip
            name = f"{task}-s{seed}"
            runs.append(
                {
                    **common,
                    "learner": "ours",
                    "dir": str(work / f"ours-{name}"),
                    "log": str(work / f"ours-{name}.log"),
                }
            )
            if task == "reach":  # SB3 has no demonstration path; its reference is reach
                runs.append({**common, "learner": "sb3", "cap_s": args.sb3_cap_s, "out": str(work / f"sb3-{name}.json"),
                             "log": str(work / f"sb3-{name}.log")})  # fmt: skip
    run_all(runs, args.workers)
    for run in runs:
        if run["learner"] == "ours":
            run["curve"] = ours_curve(run["dir"], run["launch"])
        else:
            out = Path(run["out"])
            run["curve"] = json.loads(out.read_text()) if out.exists() else []

    def pick(learner: str, task: str) -> list[dict[str, Any]]:
        return [r for r in runs if r["learner"] == learner and r["task"] == task]

    def final_success(learner: str, task: str) -> float | None:
        finals = [r["curve"][-1]["success"] for r in pick(learner, task) if r["curve"]]
        return float(np.mean(finals)) if finals else None

    def wall_to_90(learner: str) -> float | None:
        walls = [first_wall_at(r["curve"]) for r in pick(learner, "reach")]
        return (
            None
            if not walls or None in walls
            else float(statistics.median(w for w in walls if w is not None))
        )

    ours_90, sb3_90 = wall_to_90("ours"), wall_to_90("sb3")
    speedup, lower_bound = None, False
    if ours_90 is not None:
        if sb3_90 is not None:
            speedup = sb3_90 / ours_90
        else:
            sb3_walls = [r.get("end_s", args.sb3_cap_s) for r in pick("sb3", "reach")]
            speedup, lower_bound = min(args.sb3_cap_s, *sb3_walls) / ours_90, True
    for run in runs:  # env steps per wall-clock second over the whole run (collection, learning, evaluation)
        last = run["curve"][-1] if run["curve"] else None
        run["steps_per_wall_s"] = last["step"] / last["wall_s"] if last and last["wall_s"] > 0 else None
    keep = ("learner", "task", "seed", "steps", "demos", "returncode", "end_s", "steps_per_wall_s", "curve")
    return {
        "reach_success": final_success("ours", "reach"),
        "lift_success": final_success("ours", "lift"),
        "sb3_reach_success": final_success("sb3", "reach"),
        "wall_s_to_90_reach": ours_90,
        "sb3_wall_s_to_90_reach": sb3_90,
        "speedup_vs_sb3": speedup,
        "speedup_is_lower_bound": lower_bound,
        "runs": [{k: r.get(k) for k in keep} for r in runs],
    }


def git_commit() -> str:
    """HEAD's commit, with "+dirty" when the working tree differs from it (results must say what ran)."""
    root = Path(__file__).resolve().parent.parent
    try:
        head = subprocess.run(
            ["git", "rev-parse", "HEAD"], cwd=root, capture_output=True, text=True, check=True
        )
        dirty = subprocess.run(
            ["git", "status", "--porcelain"], cwd=root, capture_output=True, text=True, check=True
        )
    except (OSError, subprocess.CalledProcessError):
        return "unknown"
    return head.stdout.strip() + ("+dirty" if dirty.stdout.strip() else "")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="reach only, one seed, a short budget")
    parser.add_argument("--json", type=Path, default=None, help="write the figures to this JSON file")
    parser.add_argument("--seeds", type=int, nargs="+", default=None, help="default: 0 1 2 (quick: 0)")
    parser.add_argument("--reach-steps", type=int, default=None, help="default 10000 (quick: 4000)")
    parser.add_argument("--lift-steps", type=int, default=20_000)
    parser.add_argument("--skip-lift", action="store_true", help="reach only (implied by --quick)")
    parser.add_argument("--eval-every", type=int, default=1000)
    parser.add_argument(
        "--action-mode",
        default="ee_delta",
        help="reach: the twin's action mode for both learners (SimConfig)",
    )
    parser.add_argument("--reward", default="shaped", help="reach: sparse or shaped, for both learners")
    parser.add_argument("--eval-episodes", type=int, default=10)
    parser.add_argument(
        "--ours-args",
        default="",
        help="extra `vlmrl train` options for our runs only, e.g. the deployable reach recipe "
        "'--asymmetric-critic --agent.privileged-aux-weight 1.0' (results/pixel-reach/README.md)",
    )
    parser.add_argument(
        "--sb3-cap-s", type=float, default=None, help="SB3 wall-clock cap (default 3600; quick: 1200)"
    )
    parser.add_argument("--workers", type=int, default=2, help="runs at a time (one core each)")
    parser.add_argument("--cost-only", action="store_true", help="only the update-cost part")
    parser.add_argument("--work-dir", type=Path, default=None, help="where runs go (default: a temp dir)")
    parser.add_argument("--sb3-worker", default=None, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.sb3_worker is not None:
        sb3_worker(json.loads(args.sb3_worker))
        return 0
    args.seeds = args.seeds or ([0] if args.quick else [0, 1, 2])
    args.reach_steps = args.reach_steps or (4000 if args.quick else 10_000)
    args.sb3_cap_s = args.sb3_cap_s or (1200.0 if args.quick else 3600.0)
    args.skip_lift = args.skip_lift or args.quick
    load = os.getloadavg()[0]
    result: dict[str, Any] = update_costs(rounds=5 if args.quick else 15, updates=5 if args.quick else 10)
    print(
        f"update (batch {BATCH}, 1 thread, CPU time): state {result['state_update_s'] * 1e3:.1f} ms, "
        f"robot pixels {result['pixel_update_s'] * 1e3:.1f} ms, ratio {result['pixel_to_state_cost']:.2f} "
        f"(the former 3x3 encoder: {result['former_encoder_update_s'] * 1e3:.1f} ms, "
        f"ratio {result['former_encoder_to_state_cost']:.2f})",
        flush=True,
    )
    if not args.cost_only:
        work = args.work_dir or Path(tempfile.mkdtemp(prefix="pixel_learning-"))
        work.mkdir(parents=True, exist_ok=True)
        result.update(learning(args, work))
        print(
            f"reach success {result['reach_success']}, lift success {result['lift_success']}, "
            f"wall to 90% reach: ours {result['wall_s_to_90_reach']}, sb3 {result['sb3_wall_s_to_90_reach']} "
            f"(speedup {result['speedup_vs_sb3']}, lower bound: {result['speedup_is_lower_bound']})"
        )
    result["details"] = {
        "quick": args.quick,
        "seeds": args.seeds,
        "reach_steps": args.reach_steps,
        "lift_steps": None if args.skip_lift else args.lift_steps,
        "sb3_cap_s": args.sb3_cap_s,
        "workers": args.workers,
        "reach_env": {
            "action_mode": args.action_mode,
            "reward": args.reward,
            "ours_args": args.ours_args,
            "image_size": 64,
            "cameras": ["front"],
        },
        "load_average_at_start": load,
        "git_commit": git_commit(),
        "cpu_count": os.cpu_count(),
        "note": "wall-clock figures depend on what else runs on the machine; see load_average_at_start",
    }
    if args.json is not None:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(json.dumps(result, indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
