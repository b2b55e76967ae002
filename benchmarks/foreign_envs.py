"""Our SAC vs Stable-Baselines3 SAC on environments nobody here wrote: robosuite Lift and Meta-World MT1.

Both learners read the adapter's privileged ``state`` vector (robosuite: Panda proprioception and the
cube's pose; Meta-World: its 39-d observation) with the dense reward (``--sim.reward shaped``: the suite's
own staged or shaped reward, normalised, minus 1 until success). Same step budget, networks (256x256),
batch (256), warm-up (1,000 random steps), discount (0.99), learning rates (3e-4) and initial temperature
(0.1, tuned towards ``-action_dim``). Ours is ``vlmrl train --policy-obs state --replay uniform``, the
path a user runs; SB3 is ``SAC("MultiInputPolicy")`` on the same adapter with only the ``state`` key kept
(its ``CombinedExtractor`` flattens that one key, so the networks match ``MlpPolicy``'s). Each run is its
own process with one torch thread, ``--workers`` at a time; both are evaluated every ``--eval-every``
steps by ``vlmrl.evaluation.episodes.evaluate`` on the same held-out seeds (deterministic actions).

JSON (``--json PATH``): per task under ``tasks``: ``ours_return`` / ``sb3_return`` and ``ours_success`` /
``sb3_success`` (mean ± sd over seeds of the final evaluation), ``return_p`` (Welch's t-test of the final
returns), ``ours_wall_s`` / ``sb3_wall_s`` (mean run time), and every run's curve under ``runs``.

    .venv/bin/python benchmarks/foreign_envs.py --json results/foreign-envs/foreign_envs.json \\
        --markdown results/foreign-envs/table.md
    .venv/bin/python benchmarks/foreign_envs.py --table-from results/foreign-envs/*.json \\
        --markdown results/foreign-envs/table.md   # the table again, from finished grids
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import tempfile
from pathlib import Path
from typing import Any

import numpy as np
from pixel_learning import git_commit, learn_with_evaluations, ours_curve, run_all

HIDDEN = (256, 256)
BATCH = 256
WARMUP = 1000
TASKS = (("robosuite", "Lift"), ("metaworld", "push-v3"))


def ours_command(run: dict[str, Any]) -> list[str]:
    return [
        sys.executable, "-m", "vlmrl", "train", "--sim.suite", run["suite"], "--sim.task", run["task"],
        "--sim.cameras", "--sim.reward", "shaped", "--policy-obs", "state", "--replay", "uniform",
        "--total-steps", str(run["steps"]), "--eval-every-steps", str(run["eval_every"]),
        "--eval-episodes", str(run["eval_episodes"]), "--seed", str(run["seed"]), "--run-dir", run["dir"],
        "--batch-size", str(BATCH), "--learning-starts", str(WARMUP),
        "--agent.hidden-dims", *map(str, HIDDEN), "--no-progress", "--video-episodes", "0",
        "--torch-threads", "1", "--buffer.storage", "memory",
    ]  # fmt: skip


def sb3_command(run: dict[str, Any]) -> list[str]:
    return [sys.executable, __file__, "--sb3-worker", json.dumps(run)]


def sb3_worker(run: dict[str, Any]) -> None:
    """One SB3 SAC run (this file re-invoked with ``--sb3-worker``): writes its curve to ``run["out"]``."""
    import torch
    from stable_baselines3 import SAC as SB3SAC

    from sim import make_env
    from sim.config import SimConfig
    from sim.wrappers import SB3Keys
    from vlmrl.online.config import TrainConfig

    torch.set_num_threads(1)
    agent = TrainConfig().agent
    sim_cfg = SimConfig(suite=run["suite"], task=run["task"], cameras=(), reward="shaped")
    env = SB3Keys(make_env(sim_cfg), keep=("state",))
    eval_env = SB3Keys(make_env(sim_cfg), keep=("state",))
    model = SB3SAC(
        "MultiInputPolicy",
        env,
        learning_rate=agent.critic_lr,
        batch_size=BATCH,
        learning_starts=WARMUP,
        buffer_size=run["steps"] + 1,
        gamma=TrainConfig().buffer.gamma,
        tau=agent.tau,
        ent_coef=f"auto_{agent.init_alpha}",
        policy_kwargs={"net_arch": list(HIDDEN)},
        seed=run["seed"],
        device="cpu",
    )
    learn_with_evaluations(model, eval_env, run)


def mean_sd(values: list[float]) -> tuple[float | None, float | None]:
    if not values:
        return None, None
    return float(np.mean(values)), float(np.std(values, ddof=1)) if len(values) > 1 else 0.0


def summarise(runs: list[dict[str, Any]], suite: str, task: str) -> dict[str, Any]:
    """Final-evaluation figures of one task, ours against SB3."""
    from scipy.stats import ttest_ind

    out: dict[str, Any] = {"suite": suite, "task": task}
    finals: dict[str, list[float]] = {}
    for learner in ("ours", "sb3"):
        mine = [r for r in runs if r["learner"] == learner and r["task"] == task and r["curve"]]
        finals[learner] = [r["curve"][-1]["return"] for r in mine]
        out[f"{learner}_return"], out[f"{learner}_return_sd"] = mean_sd(finals[learner])
        out[f"{learner}_success"], out[f"{learner}_success_sd"] = mean_sd(
            [r["curve"][-1]["success"] for r in mine]
        )
        out[f"{learner}_wall_s"] = statistics.mean(r["end_s"] for r in mine) if mine else None
        out[f"{learner}_seeds"] = len(mine)
    both = all(len(v) > 1 for v in finals.values())
    out["return_p"] = (
        float(ttest_ind(finals["ours"], finals["sb3"], equal_var=False).pvalue) if both else None
    )
    return out


def _pct(value: float | None, sd: float | None) -> str:
    return "-" if value is None else f"{100 * value:.0f}% ± {100 * (sd or 0.0):.0f}%"


def _ret(value: float | None, sd: float | None) -> str:
    return "-" if value is None else f"{value:.1f} ± {sd or 0.0:.1f}"


def table(results: list[dict[str, Any]]) -> str:
    """The results table of finished grids: one row per task, ours against SB3 at the same budget."""
    first = results[0]["details"]
    lines = [
        f"Seeds {', '.join(map(str, first['seeds']))}; {first['eval_episodes']} evaluation episodes per "
        f"evaluation; {first['cpu_model']} ({first['cpu_count']} cores, {first['workers']} runs at a time). "
        "Return: the episode's sum of `--sim.reward shaped` (progress - 1 per step, 200 steps: -200 is no "
        "progress at all).",
        "",
        "| task | budget (env steps) | return at budget: ours | SB3 | p (Welch t, returns) | success: ours | "
        "SB3 | wall s per run: ours | SB3 | commit |",
        "|---|---|---|---|---|---|---|---|---|---|",
    ]
    for result in results:
        details = result["details"]
        for row in result["tasks"]:
            p = "-" if row["return_p"] is None else f"{row['return_p']:.2g}"
            walls = [f"{row[k]:.0f}" if row[k] is not None else "-" for k in ("ours_wall_s", "sb3_wall_s")]
            lines.append(
                f"| {row['suite']} {row['task']} | {details['steps']:,} | "
                f"{_ret(row['ours_return'], row['ours_return_sd'])} | "
                f"{_ret(row['sb3_return'], row['sb3_return_sd'])} | {p} | "
                f"{_pct(row['ours_success'], row['ours_success_sd'])} | "
                f"{_pct(row['sb3_success'], row['sb3_success_sd'])} | {walls[0]} | {walls[1]} | "
                f"{details['git_commit'][:7]} |"
            )
    return "\n".join(lines) + "\n"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="one seed, 2,000 steps per task")
    parser.add_argument("--json", type=Path, default=None, help="write the figures to this JSON file")
    parser.add_argument("--seeds", type=int, nargs="+", default=None, help="default: 0 1 2 (quick: 0)")
    parser.add_argument("--steps", type=int, default=None, help="env steps per run (default 20000)")
    parser.add_argument("--eval-every", type=int, default=None, help="default 5000 (quick: 1000)")
    parser.add_argument("--eval-episodes", type=int, default=10)
    parser.add_argument(
        "--tasks",
        nargs="+",
        default=[f"{suite}:{task}" for suite, task in TASKS],
        help="SUITE:TASK pairs (robosuite task names, Meta-World MT1 names)",
    )
    parser.add_argument("--workers", type=int, default=2, help="runs at a time (one core each)")
    parser.add_argument("--work-dir", type=Path, default=None, help="where runs go (default: a temp dir)")
    parser.add_argument("--markdown", type=Path, default=None, help="write the results table here")
    parser.add_argument(
        "--table-from",
        type=Path,
        nargs="+",
        default=None,
        help="only write --markdown, from these finished grids' JSON files",
    )
    parser.add_argument("--sb3-worker", default=None, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.sb3_worker is not None:
        sb3_worker(json.loads(args.sb3_worker))
        return 0
    if args.table_from is not None:
        if args.markdown is None:
            parser.error("--table-from needs --markdown PATH")
        args.markdown.write_text(table([json.loads(path.read_text()) for path in args.table_from]))
        return 0
    seeds = args.seeds or ([0] if args.quick else [0, 1, 2])
    steps = args.steps or (2000 if args.quick else 20_000)
    eval_every = args.eval_every or (1000 if args.quick else 5000)
    tasks = []
    for pair in args.tasks:
        suite, sep, task = pair.partition(":")
        if not sep or suite not in ("robosuite", "metaworld") or not task:
            parser.error(f"--tasks entries are SUITE:TASK with SUITE robosuite or metaworld, got {pair!r}")
        tasks.append((suite, task))
    work = args.work_dir or Path(tempfile.mkdtemp(prefix="foreign_envs-"))
    work.mkdir(parents=True, exist_ok=True)
    load = os.getloadavg()[0]
    runs: list[dict[str, Any]] = []
    for suite, task in tasks:
        for seed in seeds:
            for learner in ("ours", "sb3"):
                name = f"{learner}-{task}-s{seed}"
                runs.append({"learner": learner, "suite": suite, "task": task, "seed": seed, "steps": steps,
                             "eval_every": eval_every, "eval_episodes": args.eval_episodes,
                             "dir": str(work / name), "out": str(work / f"{name}.json"),
                             "log": str(work / f"{name}.log")})  # fmt: skip
    run_all(runs, args.workers, {"ours": ours_command, "sb3": sb3_command})
    for run in runs:
        if run["learner"] == "ours":
            run["curve"] = ours_curve(run["dir"], run["launch"])
        else:
            out = Path(run["out"])
            run["curve"] = json.loads(out.read_text()) if out.exists() else []
    summary = [summarise(runs, suite, task) for suite, task in tasks]
    for row in summary:
        print(
            f"{row['suite']} {row['task']}: return ours {row['ours_return']} ± {row['ours_return_sd']}, "
            f"sb3 {row['sb3_return']} ± {row['sb3_return_sd']} (p {row['return_p']}); success ours "
            f"{row['ours_success']}, sb3 {row['sb3_success']}"
        )
    failed = [f"{r['learner']} {r['task']} seed {r['seed']}" for r in runs if r["returncode"] != 0]
    keep = ("learner", "suite", "task", "seed", "steps", "returncode", "end_s", "curve")
    result = {
        "tasks": summary,
        "runs": [{k: r.get(k) for k in keep} for r in runs],
        "details": {
            "quick": args.quick,
            "seeds": seeds,
            "steps": steps,
            "eval_every": eval_every,
            "eval_episodes": args.eval_episodes,
            "hidden_dims": list(HIDDEN),
            "batch_size": BATCH,
            "warmup_steps": WARMUP,
            "workers": args.workers,
            "load_average_at_start": load,
            "git_commit": git_commit(),
            "cpu_model": cpu_model(),
            "cpu_count": os.cpu_count(),
        },
    }
    if args.json is not None:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(json.dumps(result, indent=2))
    if args.markdown is not None:
        args.markdown.parent.mkdir(parents=True, exist_ok=True)
        args.markdown.write_text(table([result]))
    if failed:
        print(f"failed runs: {failed} (logs in {work})", file=sys.stderr)
        return 1
    return 0


def cpu_model() -> str:
    try:
        lines = Path("/proc/cpuinfo").read_text().splitlines()
    except OSError:
        return "unknown"
    return next((line.split(":", 1)[1].strip() for line in lines if line.startswith("model name")), "unknown")


if __name__ == "__main__":
    raise SystemExit(main())
