"""The deployable learner on every twin task (issue #32): `vlmrl train --recipe deployable`, seeds x tasks.

Each run is a real `vlmrl train` process with the recipe's options (robot observations: the LeRobot joint
keys and the front camera; 25 demonstrations; episodes that end at success). Runs go in parallel on the
cores, one torch thread each; a run whose directory already holds a finished run is collected, not rerun,
and an interrupted one resumes from its checkpoint. The JSON has, per task, the mean final success over
seeds, the collapse figure ``best_minus_last3`` (per seed: best scheduled evaluation minus the mean of the
last three; averaged), and every run's curve, commit and CPU.

The best of twelve 20-episode evaluations is biased upwards (about 15 points at a flat 75%), so each
finished run's ``best_policy.pt`` and ``policy.pt`` are also run on ``--reeval-episodes`` fresh seeds
(``reevaluate.py``; cached in the run's ``reevaluate.json``): ``fresh_final_success`` and
``fresh_best_minus_final`` are the same figures without that bias.

    python benchmarks/deployable_tasks.py --quick --json runs/bench/deployable_tasks.json   # minutes
    python benchmarks/deployable_tasks.py --tasks reach lift push place --seeds 0 1 2 3 4 \\
        --runs-dir runs/deployable --json results/bench/deployable_tasks.json
    python benchmarks/deployable_tasks.py --tasks lift --train-args '--agent.target-entropy -3' \\
        --runs-dir runs/deployable-te3 --json runs/deployable-te3.json                  # a lever on the recipe
"""

from __future__ import annotations

import argparse
import json
import shlex
import statistics
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from reevaluate import reevaluate
from replay_experiment import provenance, read_evals

ROOT = Path(__file__).resolve().parents[1]
TASKS = ("reach", "lift", "push", "place")


def train_argv(task: str, seed: int, run_dir: Path, extra: list[str]) -> list[str]:
    """The `vlmrl` arguments of one run: a new one, or the resume of an interrupted one."""
    if (run_dir / "checkpoint").exists():
        return ["train", "--resume", str(run_dir), "--no-progress"]
    return [
        "train", "--recipe", "deployable", "--sim.task", task, "--seed", str(seed),
        "--video-episodes", "0", "--no-progress", "--torch-threads", "1", "--run-dir", str(run_dir), *extra,
    ]  # fmt: skip


def finished(run_dir: Path) -> bool:
    return (run_dir / "report.md").exists() and "Finished." in (run_dir / "report.md").read_text()


def run_one(task: str, seed: int, run_dir: Path, extra: list[str]) -> float:
    """Train (or resume) one run unless it is finished; returns the wall-clock seconds spent now."""
    if finished(run_dir):
        return 0.0
    run_dir.parent.mkdir(parents=True, exist_ok=True)
    argv = train_argv(task, seed, run_dir, extra)
    started = time.monotonic()
    with open(run_dir.parent / f"{run_dir.name}.log", "a") as log:
        subprocess.run(
            [sys.executable, "-m", "vlmrl", *argv], check=True, stdout=log, stderr=subprocess.STDOUT
        )
    wall = time.monotonic() - started
    (run_dir / "wall_s.txt").write_text(f"{wall:.0f}\n")
    return wall


def fresh_figures(run_dir: Path, episodes: int) -> dict[str, object]:
    """The run's best and final policy on ``episodes`` fresh seeds (cached in ``reevaluate.json``)."""
    cache = run_dir / "reevaluate.json"
    if cache.exists():
        cached = json.loads(cache.read_text())
        if cached.get("episodes") == episodes:
            return dict(cached)
    figures = reevaluate(run_dir, episodes)
    cache.write_text(json.dumps(figures, indent=1) + "\n")
    return figures


def run_record(task: str, seed: int, run_dir: Path, reeval_episodes: int = 0) -> dict[str, object]:
    """One finished run: its config's budget, its scheduled evaluations, where it ran, and (with
    ``reeval_episodes``) its best and final policy on fresh seeds."""
    config = json.loads((run_dir / "config.json").read_text())
    evals = read_evals(run_dir)
    curve = {int(e["step"]): round(e["success_rate"], 4) for e in evals}
    successes = [e["success_rate"] for e in evals]
    last3 = successes[-3:]
    wall = run_dir / "wall_s.txt"
    fresh: dict[str, object] = {}
    if reeval_episodes > 0:
        figures = fresh_figures(run_dir, reeval_episodes)
        fresh = {
            "fresh_episodes": reeval_episodes,
            "fresh_best": figures["best_fresh"],
            "fresh_final": figures["final_fresh"],
            "fresh_best_minus_final": round(float(figures["best_fresh"]) - float(figures["final_fresh"]), 4),  # type: ignore[arg-type]
        }
    return {
        "task": task,
        "seed": seed,
        "steps": config["total_steps"],
        "action_mode": config["sim"]["action_mode"],
        "final_success": round(successes[-1], 4) if successes else None,
        "best": round(max(successes), 4) if successes else None,
        "best_minus_last3": round(max(successes) - sum(last3) / len(last3), 4) if successes else None,
        "curve": curve,
        "wall_s": int(wall.read_text()) if wall.exists() else None,
        **fresh,
        **json.loads((run_dir / "provenance.json").read_text()),
    }


def summarize(records: list[dict[str, object]]) -> dict[str, object]:
    """Per task: mean and sd of final success over seeds, mean best_minus_last3, seeds, steps, commit, CPU."""
    tasks: dict[str, object] = {}
    for task in dict.fromkeys(str(r["task"]) for r in records):
        rows = [r for r in records if r["task"] == task and r["final_success"] is not None]
        finals = [float(r["final_success"]) for r in rows]  # type: ignore[arg-type]
        tasks[task] = {
            "final_success": round(statistics.mean(finals), 4),
            "final_success_sd": round(statistics.stdev(finals), 4) if len(finals) > 1 else 0.0,
            "best_minus_last3": round(statistics.mean(float(r["best_minus_last3"]) for r in rows), 4),  # type: ignore[arg-type]
            "seeds": [r["seed"] for r in rows],
            "finals": finals,
            "steps": sorted({r["steps"] for r in rows}),
            "action_mode": sorted({str(r.get("action_mode", "")) for r in rows} - {""}),
            "commit": sorted({str(r["commit"]) for r in rows}),
            "cpu_model": sorted({str(r["cpu"]) for r in rows}),
        }
        train_args = sorted({shlex.join(r.get("train_args") or []) for r in rows})  # type: ignore[arg-type]
        if train_args != [""]:  # the recipe with more options: say which, so no one reads it as the recipe's
            tasks[task]["train_args"] = train_args  # type: ignore[index]
        fresh = [r for r in rows if "fresh_final" in r]
        if fresh:
            tasks[task].update(  # type: ignore[attr-defined]
                fresh_episodes=sorted({r["fresh_episodes"] for r in fresh}),
                fresh_final_success=round(statistics.mean(float(r["fresh_final"]) for r in fresh), 4),  # type: ignore[arg-type]
                fresh_best_minus_final=round(
                    statistics.mean(float(r["fresh_best_minus_final"]) for r in fresh),  # type: ignore[arg-type]
                    4,
                ),
            )
    return {"tasks": tasks, "runs": records}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tasks", nargs="+", default=list(TASKS), choices=TASKS)
    parser.add_argument("--seeds", nargs="+", type=int, default=[0, 1, 2, 3, 4])
    parser.add_argument("--runs-dir", type=Path, default=Path("runs/deployable"))
    parser.add_argument("--jobs", type=int, default=2, help="runs at a time (one per core)")
    parser.add_argument("--quick", action="store_true", help="reach, one seed, 2,000 steps: a smoke run")
    parser.add_argument(
        "--collect-only", action="store_true", help="summarise the finished runs, run nothing"
    )
    parser.add_argument(
        "--reeval-episodes",
        type=int,
        default=100,
        help="fresh-seed episodes for each finished run's best and final policy (0: skip)",
    )
    parser.add_argument(
        "--train-args",
        default="",
        help="more `vlmrl train` options for every new run, one shell-quoted string (a lever to try on the "
        "recipe, e.g. '--agent.target-entropy -3'; a single flag needs the = form, --train-args=--sim.ee-arm-steps, "
        "or argparse reads it as an option of its own); recorded with each run and in the JSON",
    )
    parser.add_argument("--json", type=Path, help="write the figures here")
    args = parser.parse_args(argv)
    extra: list[str] = shlex.split(args.train_args)
    if args.quick:
        args.tasks, args.seeds = ["reach"], [0]
        args.runs_dir = args.runs_dir.with_name(args.runs_dir.name + "-quick")
        extra += [
            "--total-steps",
            "2000",
            "--eval-every-steps",
            "1000",
            "--eval-episodes",
            "5",
            "--demo-episodes",
            "5",
        ]
        args.reeval_episodes = min(args.reeval_episodes, 5)
    jobs = [(t, s, args.runs_dir / f"{t}-s{s}") for t in args.tasks for s in args.seeds]
    if not args.collect_only:
        origin = provenance()
        for _, _, run_dir in jobs:
            if not finished(run_dir):
                run_dir.mkdir(parents=True, exist_ok=True)
                (run_dir / "provenance.json").write_text(json.dumps({**origin, "train_args": extra}))
        with ThreadPoolExecutor(args.jobs) as pool:
            list(pool.map(lambda job: run_one(*job, extra), jobs))
    records = [run_record(t, s, d, args.reeval_episodes) for t, s, d in jobs if finished(d)]
    if not records:
        print("deployable_tasks: no finished runs", file=sys.stderr)
        return 1
    figures = summarize(records)
    for task, row in figures["tasks"].items():  # type: ignore[union-attr]
        print(
            f"{task:6s} final {row['final_success']:.0%} ± {row['final_success_sd']:.0%} over seeds "
            f"{row['seeds']}, best - last 3: {row['best_minus_last3'] * 100:.0f} points, {row['steps']} steps"
            + (
                f"; fresh seeds: final {row['fresh_final_success']:.0%}, best - final "
                f"{row['fresh_best_minus_final'] * 100:.0f} points"
                if "fresh_final_success" in row
                else ""
            )
        )
    if args.json:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(json.dumps(figures, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
