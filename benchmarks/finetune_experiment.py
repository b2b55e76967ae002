"""Fine-tuning on a twin unit the policy never saw (issue #33 item 5): success against robot minutes.

A deployable policy (`vlmrl train --recipe deployable`, trained here unless ``--policy-run`` gives one) goes on
one of the twin's hardware-like units (``sim.units``; ``--unit auto``: the unit where it drops most, from
`vlmrl evaluate --robot.unit all`). Its success there is measured before (`vlmrl deploy --robot.unit`), and
on the nominal twin on the same start states; then each condition runs `vlmrl finetune --operator scripted
--robot.unit U` for up to ``--robot-minutes``, stopping every ``--eval-every`` robot minutes to deploy the
policy it has so far on the unit (``--eval-episodes`` episodes, the same held-out start states every time):

- ``interventions``: fine-tune with the scripted operator's keys and takeovers (its default budget);
- ``keys_only``: fine-tune with its keys only (``--scripted-operator.budget-steps 0``: no takeovers, and
  ``--scripted-operator.no-give-up``: an episode runs out rather than ending with the failure key at the
  first stall, so the policy has whole episodes to learn from);
- ``scratch``: the same operator, takeovers included (the robot's demonstrations), and the same robot
  minutes, from a freshly initialised agent of the same networks (``vlmrl finetune --fresh-agent``);
- ``cloned``: ``--demos`` demonstrations on the unit by the operator's expert (recorded once per policy,
  their robot minutes reported) as ``--prior-data``, the takeovers cloned beside them, a slower actor
  (``--cloned-actor-lr``) and the sim run's encoder kept (``CONDITIONS``: the setting that raised a policy on
  unit b, results/finetune);
- ``scratch_cloned``: the same data and cloning from a fresh agent (its encoder learning, its own actor rate);
- ``cloned_prior``: ``cloned`` with the takeovers also in the prior part of every batch beside the
  demonstrations (``--buffer.prior-info-key intervention``: HIL-SERL's interventions in its demonstration buffer);
- ``cloned_keys_only``: ``cloned`` without the takeovers (the keys only, as ``keys_only``): the same
  demonstrations, robot minutes and actor, to show what the interventions add.

Every run is a real `vlmrl` process; at most ``--jobs`` (default 2) run at once, one torch thread each. A
rerun collects what is finished and resumes the rest (finetune from its checkpoint, evaluations that are
missing). The JSON has per condition the success curve over seeds (mean, sd), Welch p-values between the
conditions at each evaluation (over seeds; with one seed, over the pooled episodes, labelled so),
interventions and safety clips per fine-tuning episode over time, and ``lift_before``,
``lift_after_30min``, ``lift_nominal`` (null, with the reason in ``reasons``, when not measured); after the last
evaluation each run's ``best_policy.pt`` (kept by `vlmrl finetune` from the keys) is deployed the same way
(``best_policy`` per run and condition, ``lift_best_policy``); every row records its commit and CPU.

    python benchmarks/finetune_experiment.py --quick --json runs/bench/finetune-quick.json      # minutes
    python benchmarks/finetune_experiment.py --tasks lift reach --seeds 0 1 2 3 4 \\
        --robot-minutes 60 --eval-every 10 --eval-episodes 20 --json results/bench/finetune.json
    python benchmarks/finetune_experiment.py --policy-run runs/lift-robot --unit b --seeds 0 ...
"""

from __future__ import annotations

import argparse
import itertools
import json
import math
import statistics
import subprocess
import sys
import warnings
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from deployable_tasks import finished as training_finished
from deployable_tasks import train_argv
from replay_experiment import provenance

CLONED = ("--buffer.clone-info-key", "intervention", "--bc-weight", "50", "--buffer.absorbing-terminal")
"""The takeovers cloned beside the demonstrations (results/finetune, "Demonstrations and cloned takeovers"), at a
cloning weight of 50: at 4 the actor followed the critic away from what it cloned and lost the gain by 20 robot
minutes (48, 20, 14% at 10, 20, 30 on unit a against 35, 61, 50% at 50; results/finetune, "A stronger cloning
weight keeps the gain")."""
KEPT = (*CLONED, "--freeze-encoder")
"""``CLONED`` on the sim run's agent, the sim run's encoder kept; its actor learns at ``--cloned-actor-lr``."""
CLONED_ACTOR_LR = 1e-5
"""The actor's learning rate in the conditions on the sim run's agent (``SLOW_ACTOR``). 3e-5 until 2026-12-05: the
joint-target lift policy on unit b peaked within a few robot minutes and fell (62, 43, 21% at 10, 20, 30 robot
minutes over five seeds); at 1e-5 it reached 84, 71, 53% (results/finetune, "A slower actor holds it")."""
KEYS_ONLY = ("--scripted-operator.budget-steps", "0", "--scripted-operator.no-give-up")
"""The operator's keys without its takeovers; an episode runs out rather than ending with the failure key at the
first stall."""
CLONED_LR_FINAL_FRACTION = 0.1
CLONED_LR_DECAY_MINUTES = 15.0
"""In ``SLOW_ACTOR`` the actor's rate falls linearly to ``CLONED_LR_FINAL_FRACTION`` of ``--cloned-actor-lr`` over
the first ``CLONED_LR_DECAY_MINUTES`` robot minutes and stays there (`vlmrl finetune --actor-lr-final-fraction`);
at a constant 1e-5 the gain of the first minutes fell after them (84, 71, 53%; results/finetune, "An annealed
actor keeps it")."""
CONDITIONS: dict[str, tuple[str, ...]] = {
    "interventions": (),
    "keys_only": KEYS_ONLY,
    "scratch": ("--fresh-agent",),
    "cloned": KEPT,
    "scratch_cloned": ("--fresh-agent", *CLONED),
    "cloned_prior": (*KEPT, "--buffer.prior-info-key", "intervention"),
    "cloned_keys_only": (*KEPT, *KEYS_ONLY),
}
"""Each condition's options to `vlmrl finetune`, beside the common ones (``finetune_argv``)."""
SLOW_ACTOR = ("cloned", "cloned_prior", "cloned_keys_only")
"""Conditions that fine-tune the sim run's actor at ``--cloned-actor-lr``."""
WITH_DEMOS = ("cloned", "scratch_cloned", "cloned_prior", "cloned_keys_only")
"""Conditions whose prior data are the demonstrations recorded on the unit first (``record_demos``)."""
DEMO_SEED = 1_000_000
"""Start state of the first demonstration (policy seed s: from ``DEMO_SEED + 100,000 x s``)."""
EVAL_SEED = 2_000_000
"""Start state of the first evaluation episode: the held-out grid's (``vlmrl.evaluation.perturbation_grid``), so the
before figure is `vlmrl evaluate --robot.unit`'s; fine-tuning episodes start from seeds far below it."""
TWIN_HZ = 20
"""The twin's control rate in every run here: robot minutes count its periods."""
FAST = ("--env.control-hz", "1000", "--twin-control-hz", str(TWIN_HZ))
"""The twin steps as fast as the host allows; robot minutes count its 20 Hz control periods."""
ROWS_PER_DEMO = 301
"""At most the buffer rows one demonstration takes (up to 300 steps and its final observation)."""
FINETUNE_CAPACITY = 50_000
"""`vlmrl finetune`'s default ``--buffer.capacity-steps``."""
MAX_EPISODES = 100_000
"""Episodes a fine-tuning stage may run: the robot minutes stop it first."""


@dataclass(frozen=True)
class Plan:
    """What the experiment runs: robot minutes, evaluation points, episodes per evaluation."""

    robot_minutes: float
    eval_every: float
    eval_episodes: int
    finetune_args: tuple[str, ...] = ()
    """Extra `vlmrl finetune` options of every condition (``--finetune-arg``)."""
    collect_only: bool = False
    """Run nothing: summarise the evaluations that exist (``--collect-only``)."""
    demos: int = 25
    """Demonstrations on the unit for the conditions in ``WITH_DEMOS`` (``--demos``)."""
    cloned_actor_lr: float = CLONED_ACTOR_LR
    """The actor's learning rate in ``SLOW_ACTOR`` (``--cloned-actor-lr``)."""
    cloned_lr_final_fraction: float = CLONED_LR_FINAL_FRACTION
    """The fraction of it the rate falls to in ``SLOW_ACTOR`` (``--cloned-lr-final-fraction``; 1: constant)."""
    cloned_lr_decay_minutes: float = CLONED_LR_DECAY_MINUTES
    """Robot minutes over which it falls (``--cloned-lr-decay-minutes``)."""

    def slow_actor_argv(self) -> list[str]:
        """`vlmrl finetune`'s options for the actor of the conditions in ``SLOW_ACTOR``."""
        anneal = ["--actor-lr-final-fraction", f"{self.cloned_lr_final_fraction:g}",
                  "--actor-lr-decay-minutes", f"{self.cloned_lr_decay_minutes:g}"]  # fmt: skip
        return [
            "--actor-lr",
            f"{self.cloned_actor_lr:g}",
            *(anneal if self.cloned_lr_final_fraction < 1 else []),
        ]

    def stages(self) -> list[float]:
        """The robot minutes at which the fine-tuned policy is evaluated."""
        count = round(self.robot_minutes / self.eval_every)
        return [round(self.eval_every * k, 6) for k in range(1, count + 1)]


def vlmrl(argv: list[str], log: Path) -> None:
    """One `vlmrl` process, its output appended to ``log``; CalledProcessError naming the log if it fails."""
    log.parent.mkdir(parents=True, exist_ok=True)
    with log.open("a") as out:
        out.write(f"$ vlmrl {' '.join(argv)}\n")
        out.flush()
        done = subprocess.run([sys.executable, "-m", "vlmrl", *argv], stdout=out, stderr=subprocess.STDOUT)
    if done.returncode != 0:
        raise RuntimeError(f"vlmrl {argv[0]} failed (exit {done.returncode}); see {log}")


def policy_run(task: str, seed: int, args: argparse.Namespace) -> Path:
    """The deployable run of ``task`` and ``seed``: ``--policy-run``, else one trained (or resumed) here."""
    if args.policy_run is not None:
        return args.policy_run
    run_dir = args.runs_dir / "policies" / f"{task}-s{seed}"
    if not training_finished(run_dir) and not args.collect_only:
        vlmrl(
            train_argv(task, seed, run_dir, list(args.train_args)),
            args.runs_dir / "logs" / f"train-{task}-s{seed}.log",
        )
    return run_dir


def deploy(
    policy: Path, unit: str | None, episodes: int, out_dir: Path, log: Path, run: bool = True
) -> dict[str, object] | None:
    """``policy`` on ``unit`` (None: the nominal twin) over the held-out start states: success rate, safety
    clips per episode, each episode's outcome. A finished evaluation is read, not rerun; a missing one is
    None unless ``run``."""
    metrics = out_dir / "metrics.json"
    if not metrics.is_file() and not run:
        return None
    if not metrics.is_file():
        argv = ["deploy", "--policy", str(policy), "--episodes", str(episodes), "--seed", str(EVAL_SEED),
                "--video-camera", "None", "--torch-threads", "1", "--out-dir", str(out_dir), *FAST]  # fmt: skip
        if unit is not None:
            argv += ["--robot.unit", unit]
        vlmrl(argv, log)
    rows = json.loads(metrics.read_text())["episodes"]
    return {
        "episodes": len(rows),
        "success": round(statistics.mean(float(r["success"]) for r in rows), 4),
        "outcomes": [int(r["success"]) for r in rows],
        "safety_clips_per_episode": round(statistics.mean(sum(r["safety_clips"].values()) for r in rows), 3),
    }


def pick_unit(policy: Path, episodes: int, out_dir: Path, log: Path) -> tuple[str, dict[str, float]]:
    """``--unit auto``: the unit where the policy's success drops most (`vlmrl evaluate --robot.unit all`,
    first of a tie), and every unit's success."""
    units = out_dir / "units.json"
    if not units.is_file():
        vlmrl(["evaluate", "--policy", str(policy), "--robot.unit", "all", "--episodes", str(episodes),
               "--views", "0", "--out-dir", str(out_dir)], log)  # fmt: skip
    summary = json.loads(units.read_text())["summary"]
    success = {name: round(float(row["success_rate"]), 4) for name, row in summary.items()}
    worst = min((s, name) for name, s in success.items() if name != "nominal")
    return min(name for name, s in success.items() if name != "nominal" and s == worst[0]), success


def condition_argv(condition: str, plan: Plan) -> list[str]:
    """A condition's own `vlmrl finetune` options: ``CONDITIONS``, and the plan's actor in ``SLOW_ACTOR``."""
    slow = plan.slow_actor_argv() if condition in SLOW_ACTOR else []
    return [*CONDITIONS[condition], *slow]


def capacity_argv(plan: Plan) -> list[str]:
    """``--buffer.capacity-steps`` for a plan whose runs would not fit `vlmrl finetune`'s default buffer: the ring
    evicts the oldest episodes, the demonstrations first, and at 50,000 rows they went at about 40 robot minutes
    (the cloned runs then fell; results/finetune, "60 robot minutes"). Robot rows: one a control period
    (``TWIN_HZ``), and a tenth more for the episodes' final observations."""
    rows = (plan.demos + 1) * ROWS_PER_DEMO + math.ceil(1.1 * plan.robot_minutes * 60 * TWIN_HZ)
    return ["--buffer.capacity-steps", str(rows)] if rows > FINETUNE_CAPACITY else []


def finetune_argv(
    run: Path,
    unit: str,
    condition: str,
    seed: int,
    minutes: float,
    out_dir: Path,
    plan: Plan,
    extra: tuple[str, ...] = (),
) -> list[str]:
    """The `vlmrl finetune` arguments of one stage: up to ``minutes`` robot minutes in all, a new run or the
    resume of the one in ``out_dir``. Fine-tuning episodes start from seed ``100,000 x seed`` on."""
    resume = ["--resume"] if (out_dir / "checkpoint").exists() else []
    return ["finetune", "--from", str(run), *resume, "--out-dir", str(out_dir), *condition_argv(condition, plan), *capacity_argv(plan),
            "--robot.unit", unit, "--operator", "scripted", "--episodes", str(MAX_EPISODES),
            "--robot-minutes", f"{minutes:g}", "--seed", str(100_000 * seed), "--torch-threads", "1", *FAST, *extra]  # fmt: skip


def record_demos(run: Path, unit: str, seed: int, plan: Plan, out_dir: Path) -> dict[str, object]:
    """``plan.demos`` episodes on the unit driven by the scripted operator's expert from their first step, no
    updates (`vlmrl finetune --scripted-operator.demonstrate`): the prior data of ``WITH_DEMOS``, recorded once
    per policy and unit. Returns the store and what the demonstrations cost (robot minutes, successes)."""
    if not (out_dir / "policy.pt").is_file() and not plan.collect_only:
        vlmrl(["finetune", "--from", str(run), "--out-dir", str(out_dir), "--robot.unit", unit,
               "--operator", "scripted", "--scripted-operator.demonstrate", "--scripted-operator.takeover-steps",
               "150", "--scripted-operator.budget-steps", "150", "--scripted-operator.no-give-up",
               "--learning-starts", "1000000000", "--episodes", str(plan.demos),
               "--seed", str(DEMO_SEED + 100_000 * seed), "--torch-threads", "1", *FAST],
              out_dir.with_suffix(".log"))  # fmt: skip
    episodes = read_episodes(out_dir)
    return {
        "store": str(out_dir / "buffer.zarr"),
        "episodes": len(episodes),
        "successes": sum(bool(e["success"]) for e in episodes),
        "robot_minutes": float(episodes[-1]["robot_minutes"]) if episodes else None,  # type: ignore[arg-type]
    }


def read_episodes(ft_dir: Path) -> list[dict[str, object]]:
    """The fine-tuning episodes so far (``metrics.jsonl``)."""
    path = ft_dir / "metrics.jsonl"
    if not path.is_file():
        return []
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def run_condition(
    run: Path,
    unit: str,
    condition: str,
    seed: int,
    plan: Plan,
    out_dir: Path,
    demos: dict[str, object] | None = None,
) -> dict[str, object]:
    """One condition and seed: fine-tune stage by stage, deploying the policy on the unit after each; the
    conditions in ``WITH_DEMOS`` take ``demos`` (``record_demos``) as their prior data."""
    ft_dir, log = out_dir / "finetune", out_dir / "log.txt"
    extra = plan.finetune_args
    if condition in WITH_DEMOS:
        if demos is None:
            raise ValueError(f"condition {condition} needs the demonstrations on the unit (record_demos)")
        extra = ("--prior-data", str(demos["store"]), *extra)
    curve: dict[str, object] = {}
    for minutes in plan.stages():
        if plan.collect_only and not (out_dir / f"eval-{minutes:g}min" / "metrics.json").is_file():
            break
        spent = read_episodes(ft_dir)
        if not spent or float(spent[-1]["robot_minutes"]) < minutes:  # type: ignore[arg-type]
            vlmrl(finetune_argv(run, unit, condition, seed, minutes, ft_dir, plan, extra), log)
        snapshot = out_dir / f"policy-{minutes:g}min.pt"
        if not snapshot.is_file():
            snapshot.write_bytes((ft_dir / "policy.pt").read_bytes())
        evaluation = deploy(snapshot, unit, plan.eval_episodes, out_dir / f"eval-{minutes:g}min", log) or {}
        curve[f"{minutes:g}"] = {
            **evaluation,
            "robot_minutes_spent": spent_by(read_episodes(ft_dir), minutes),
        }
    return {
        "condition": condition,
        "seed": seed,
        "curve": curve,
        "best_policy": best_policy_figures(ft_dir, unit, plan, out_dir, log)
        if len(curve) == len(plan.stages())
        else None,
        "episodes": over_time(read_episodes(ft_dir), plan),
        **({"demonstrations": demos} if condition in WITH_DEMOS else {}),
    }


def best_policy_figures(
    ft_dir: Path, unit: str, plan: Plan, out_dir: Path, log: Path
) -> dict[str, object] | None:
    """The run's ``best_policy.pt`` (the policy `vlmrl finetune` kept at its best run of own successes, from the
    keys; ``best_policy.json`` says when) deployed on the unit as the stages are, the same start states; None
    when the run kept none (fewer episodes than its ``--best-window``, or no own success)."""
    record_path = ft_dir / "best_policy.json"
    if not (ft_dir / "best_policy.pt").is_file() or not record_path.is_file():
        return None
    record = json.loads(record_path.read_text())
    where = out_dir / f"eval-best-episode{record['episode']}"
    snapshot = where.with_suffix(".pt")
    if not snapshot.is_file() and not plan.collect_only:
        snapshot.write_bytes((ft_dir / "best_policy.pt").read_bytes())
    evaluation = deploy(snapshot, unit, plan.eval_episodes, where, log, run=not plan.collect_only)
    if evaluation is None:
        return None
    kept = {k: record[k] for k in ("episode", "robot_minutes", "own_success_rate", "window")}
    return {**evaluation, "kept": kept}


def spent_by(episodes: list[dict[str, object]], minutes: float) -> float:
    """The robot minutes spent when the stage up to ``minutes`` stopped: at the end of the episode that
    reached them (the last one so far if none has)."""
    reached = [float(e["robot_minutes"]) for e in episodes if float(e["robot_minutes"]) >= minutes - 1e-9]  # type: ignore[arg-type]
    return reached[0] if reached else float(episodes[-1]["robot_minutes"])  # type: ignore[arg-type]


def over_time(episodes: list[dict[str, object]], plan: Plan) -> dict[str, dict[str, float]]:
    """Per fine-tuning stage (the robot minutes it ran up to, the key): its episodes' count, success (the
    operator's success key), intervention steps and takeovers per episode, safety clips per episode. A stage
    runs until its minutes are spent, so an episode belongs to the first stage whose minutes exceed those
    spent before it began."""
    stages = plan.stages()
    periods: dict[float, list[dict[str, object]]] = {}
    began = 0.0
    for e in episodes:
        stage = next((m for m in stages if began < m - 1e-9), stages[-1])
        periods.setdefault(stage, []).append(e)
        began = float(e["robot_minutes"])  # type: ignore[arg-type]

    def mean(rows: list[dict[str, object]], value: Any) -> float:
        return statistics.mean(float(value(e)) for e in rows)

    return {
        f"{stage:g}": {
            "episodes": len(rows),
            "success": round(mean(rows, lambda e: bool(e["success"])), 4),
            "interventions_per_episode": round(mean(rows, lambda e: e["interventions"]), 2),
            "takeovers_per_episode": round(mean(rows, lambda e: e.get("takeovers", 0)), 3),
            "safety_clips_per_episode": round(
                mean(rows, lambda e: sum(e.get("safety_clips", {}).values())), 2
            ),
        }
        for stage, rows in periods.items()
    }


def welch_p(a: list[float], b: list[float]) -> float | None:
    """Two-sided Welch t-test p-value of ``a`` against ``b``; None when either has fewer than two values or both
    have no spread (the test is undefined)."""
    from scipy.stats import ttest_ind

    if len(a) < 2 or len(b) < 2 or (statistics.pstdev(a) == 0 and statistics.pstdev(b) == 0):
        return None
    with warnings.catch_warnings():  # one constant sample (all seeds at 90%) is a valid Welch test
        warnings.simplefilter("ignore", RuntimeWarning)
        return round(float(ttest_ind(a, b, equal_var=False).pvalue), 4)


def summarize(rows: list[dict[str, object]], before: dict[str, object], plan: Plan) -> dict[str, object]:
    """Per condition and evaluation: mean and sd of success over seeds; Welch p-values between the conditions;
    interventions and safety clips over time (means over seeds)."""
    conditions = list(dict.fromkeys(str(r["condition"]) for r in rows))
    points = [f"{m:g}" for m in plan.stages()]
    curves: dict[str, object] = {}
    for condition in conditions:
        runs = [r for r in rows if r["condition"] == condition]
        per_point = {}
        for point in points:
            values = [float(r["curve"][point]["success"]) for r in runs if point in r["curve"]]  # type: ignore[index]
            if values:
                per_point[point] = {
                    "success": round(statistics.mean(values), 4),
                    "sd": round(statistics.stdev(values), 4) if len(values) > 1 else None,
                    "seeds": len(values),
                }
        periods = {}
        for point in points:
            got = [r["episodes"][point] for r in runs if point in r["episodes"]]  # type: ignore[operator,index]
            if got:
                periods[point] = {
                    key: round(statistics.mean(float(g[key]) for g in got), 3)
                    for key in ("episodes", "success", "interventions_per_episode", "takeovers_per_episode",
                                "safety_clips_per_episode")
                }  # fmt: skip
        curves[condition] = {
            "success": per_point,
            "finetune_episodes": periods,
            "best_policy": best_summary(runs, points),
        }
    p_values: dict[str, dict[str, object]] = {}
    for a, b in itertools.combinations(conditions, 2):
        pair: dict[str, object] = {}
        for point in points:
            seeds_a = [
                float(r["curve"][point]["success"])
                for r in rows
                if r["condition"] == a and point in r["curve"]
            ]  # type: ignore[index]
            seeds_b = [
                float(r["curve"][point]["success"])
                for r in rows
                if r["condition"] == b and point in r["curve"]
            ]  # type: ignore[index]
            if not seeds_a or not seeds_b:
                continue
            if len(seeds_a) > 1 and len(seeds_b) > 1:
                pair[point] = {"p": welch_p(seeds_a, seeds_b), "over": "seeds"}
            else:  # one seed: the evaluation episodes are the only samples (not independent runs)

                def outcomes(condition: str, point: str) -> list[float]:
                    return [
                        float(o)
                        for r in rows
                        if r["condition"] == condition and point in r["curve"]
                        for o in r["curve"][point]["outcomes"]
                    ]  # type: ignore[index]

                pair[point] = {
                    "p": welch_p(outcomes(a, point), outcomes(b, point)),
                    "over": "episodes (one seed)",
                }
        p_values[f"{a}_vs_{b}"] = pair
    return {"curves": curves, "p_values": p_values, "before": before}


def best_summary(runs: list[dict[str, object]], points: list[str]) -> dict[str, object] | None:
    """``best_policy.pt`` over the seeds that kept one: mean and sd of its success on the unit, the robot
    minutes it was kept at, and the paired t-test against the same seeds' policies at the last evaluation."""
    from scipy.stats import ttest_rel

    kept = [r for r in runs if r.get("best_policy") and points and points[-1] in r["curve"]]  # type: ignore[operator]
    if not kept:
        return None
    best = [float(r["best_policy"]["success"]) for r in kept]  # type: ignore[index]
    last = [float(r["curve"][points[-1]]["success"]) for r in kept]  # type: ignore[index]
    differs = len(kept) > 1 and statistics.pstdev([b - f for b, f in zip(best, last)]) > 0
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        p = round(float(ttest_rel(best, last).pvalue), 4) if differs else None
    return {
        "success": round(statistics.mean(best), 4),
        "sd": round(statistics.stdev(best), 4) if len(best) > 1 else None,
        "seeds": len(best),
        "kept_at_robot_minutes": [r["best_policy"]["kept"]["robot_minutes"] for r in kept],  # type: ignore[index]
        "final": points[-1],
        "final_success": round(statistics.mean(last), 4),
        "paired_p_vs_final": p,
    }


AFTER_CONDITIONS = ("interventions", "cloned", "cloned_prior")
"""Conditions that fine-tune with the scripted operator's takeovers, in the order ``<task>_after_30min`` takes the
first that ran: the plain one, then those with demonstrations on the unit and the takeovers cloned."""


def headline(
    task: str, figures: dict[str, object], before: dict[str, object], plan: Plan
) -> dict[str, object]:
    """``<task>_before``, ``<task>_after_30min`` (from the first of ``AFTER_CONDITIONS`` that ran, named in
    ``<task>_after_condition``), ``<task>_best_policy`` (that condition's ``best_policy.pt`` on the unit) and
    ``<task>_nominal`` (None with a reason where not measured)."""
    out: dict[str, object] = {
        f"{task}_before": before["unit_success"],
        f"{task}_nominal": before["nominal_success"],
    }
    reasons: dict[str, str] = {}
    curves: dict[str, Any] = figures["curves"]  # type: ignore[assignment]
    condition = next((c for c in AFTER_CONDITIONS if curves.get(c, {}).get("success")), "interventions")
    curve = curves.get(condition, {}).get("success", {})
    out[f"{task}_after_condition"] = condition
    best = curves.get(condition, {}).get("best_policy")
    out[f"{task}_best_policy"] = best["success"] if best else None
    if not best:
        reasons[f"{task}_best_policy"] = f"not measured: no {condition} run kept a best_policy.pt"
    if "30" in curve:
        out[f"{task}_after_30min"] = curve["30"]["success"]
    else:
        out[f"{task}_after_30min"] = None
        reached = max((float(k) for k in curve), default=0.0)
        reasons[f"{task}_after_30min"] = (
            f"not measured: fine-tuned ({condition}) for {reached:g} robot minutes (--robot-minutes "
            f"{plan.robot_minutes:g}, evaluations every {plan.eval_every:g})"
            if curve
            else "not measured: no condition with the operator's takeovers ran"
        )
    return {**out, "reasons": reasons}


def run_provenance(run_dir: Path, origin: dict[str, object], collect_only: bool) -> dict[str, object]:
    """Where a condition's run ran: its ``provenance.json``, written (``origin``: this checkout's commit and
    CPU) when this script first runs it, so rows collected later, or from another checkout, keep the commit
    and CPU the run had; ``origin`` for a run without one."""
    path = run_dir / "provenance.json"
    if path.is_file():
        return dict(json.loads(path.read_text()))
    if not collect_only:
        run_dir.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps(origin) + "\n")
    return origin


def run_task(
    task: str, args: argparse.Namespace, plan: Plan, origin: dict[str, object]
) -> tuple[dict[str, object], dict[str, object]]:
    """One task: its policies, the unit, success before (unit and nominal), every condition and seed; returns
    the summary (with every run's row) and the before figures."""
    task_dir = args.runs_dir / task
    with ThreadPoolExecutor(args.jobs) as pool:
        runs = dict(zip(args.seeds, pool.map(lambda s: policy_run(task, s, args), args.seeds)))
    unit, units = args.unit, None
    if unit == "auto":
        unit, units = pick_unit(runs[args.seeds[0]] / "policy.pt", args.unit_episodes, task_dir / "units",
                                task_dir / "units.log")  # fmt: skip
    befores: dict[Path, dict[str, object]] = {}  # by the run as given (the JSON names no machine's folders)
    for seed, run in runs.items():  # one "before" per distinct policy
        if all(run.resolve() != seen.resolve() for seen in befores):
            befores[run] = {
                where: deploy(run / "policy.pt", None if where == "nominal" else unit, plan.eval_episodes,
                              task_dir / f"before-s{seed}-{where}", task_dir / "before.log", not plan.collect_only)
                for where in ("unit", "nominal")
            }  # fmt: skip

    def mean_success(where: str) -> float | None:
        got = [float(b[where]["success"]) for b in befores.values() if b[where] is not None]  # type: ignore[index]
        return round(statistics.mean(got), 4) if got else None

    before = {
        "unit": unit,
        "unit_success": mean_success("unit"),
        "nominal_success": mean_success("nominal"),
        "per_policy": {str(run): b for run, b in befores.items()},
        "units_auto": units,
    }

    demos: dict[int, dict[str, object]] = {}
    if any(c in WITH_DEMOS for c in args.conditions):  # before the conditions, once per seed's policy
        with ThreadPoolExecutor(args.jobs) as pool:
            got = pool.map(
                lambda s: record_demos(runs[s], str(unit), s, plan, task_dir / f"demos-s{s}"), args.seeds
            )
            demos = dict(zip(args.seeds, got))

    def one(job: tuple[str, int]) -> dict[str, object]:
        condition, seed = job
        run_dir = task_dir / f"{condition}-s{seed}"
        ran_at = run_provenance(run_dir, origin, plan.collect_only)
        row = run_condition(runs[seed], str(unit), condition, seed, plan, run_dir, demos.get(seed))
        return {**row, "policy_run": str(runs[seed]), **ran_at}

    with ThreadPoolExecutor(args.jobs) as pool:
        rows = list(pool.map(one, [(c, s) for s in args.seeds for c in args.conditions]))
    return {**summarize(rows, before, plan), "runs": rows}, before


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--tasks", nargs="+", default=["lift", "reach"], choices=["lift", "reach", "push", "place"]
    )
    parser.add_argument("--seeds", nargs="+", type=int, default=[0, 1, 2, 3, 4])
    parser.add_argument("--policy-run", type=Path, help="a finished `vlmrl train --recipe deployable` run to use "
                        "for every seed (one task); else one is trained per task and seed")  # fmt: skip
    parser.add_argument("--unit", default="auto", help="twin unit a..e, or auto: where the policy drops most")
    parser.add_argument("--unit-episodes", type=int, default=10, help="episodes per unit for --unit auto")
    parser.add_argument("--conditions", nargs="+", default=list(CONDITIONS), choices=list(CONDITIONS))
    parser.add_argument("--robot-minutes", type=float, default=60.0, help="fine-tuning robot minutes per run")
    parser.add_argument("--eval-every", type=float, default=10.0, help="robot minutes between evaluations")
    parser.add_argument("--eval-episodes", type=int, default=20, help="episodes per evaluation")
    parser.add_argument("--runs-dir", type=Path, default=Path("runs/finetune-experiment"))
    parser.add_argument("--jobs", type=int, default=2, help="runs at a time (one per core)")
    parser.add_argument("--train-arg", dest="train_args", action="append", default=[],
                        help="an extra `vlmrl train` option for the policies trained here (repeatable)")  # fmt: skip
    parser.add_argument(
        "--quick", action="store_true", help="reach, one seed, a short policy, 1 robot minute"
    )
    parser.add_argument("--finetune-arg", dest="finetune_args", action="append", default=[],
                        help="an extra `vlmrl finetune` option for every condition (repeatable), e.g. "
                        "--finetune-arg=--scripted-operator.stall-steps=10")  # fmt: skip
    parser.add_argument("--demos", type=int, default=25,
                        help="demonstrations on the unit for the cloned and scratch_cloned conditions")  # fmt: skip
    parser.add_argument("--cloned-actor-lr", type=float, default=CLONED_ACTOR_LR,
                        help=f"actor learning rate of {' and '.join(SLOW_ACTOR)} (default %(default)g)")  # fmt: skip
    parser.add_argument("--cloned-lr-final-fraction", type=float, default=CLONED_LR_FINAL_FRACTION,
                        help="the fraction of --cloned-actor-lr the rate falls to over --cloned-lr-decay-minutes "
                        "(1: constant; default %(default)g)")  # fmt: skip
    parser.add_argument("--cloned-lr-decay-minutes", type=float, default=CLONED_LR_DECAY_MINUTES,
                        help="robot minutes over which it falls (default %(default)g)")  # fmt: skip
    parser.add_argument("--collect-only", action="store_true",
                        help="run nothing: summarise the evaluations that exist (a run in progress)")  # fmt: skip
    parser.add_argument("--json", type=Path, help="write the figures here")
    args = parser.parse_args(argv)
    if args.quick:
        args.tasks, args.seeds = args.tasks[:1] if args.policy_run else ["reach"], args.seeds[:1]
        args.robot_minutes, args.eval_every, args.eval_episodes = 1.0, 0.5, 3
        args.runs_dir = args.runs_dir.with_name(args.runs_dir.name + "-quick")
        if not args.policy_run:
            args.train_args += [
                "--total-steps=2000",
                "--eval-every-steps=1000",
                "--eval-episodes=2",
                "--demo-episodes=5",
            ]
    if args.policy_run is not None and len(args.tasks) != 1:
        parser.error("--policy-run gives one policy: name its task alone with --tasks")
    if not args.eval_every > 0 or round(args.robot_minutes / args.eval_every) < 1:
        parser.error("--eval-every must be positive and at most --robot-minutes")
    if not 0 < args.cloned_actor_lr < float("inf"):
        parser.error(f"--cloned-actor-lr must be a positive number, got {args.cloned_actor_lr}")
    if not 0 < args.cloned_lr_final_fraction <= 1:
        parser.error(f"--cloned-lr-final-fraction must be in (0, 1], got {args.cloned_lr_final_fraction}")
    if not 0 < args.cloned_lr_decay_minutes < float("inf"):
        parser.error(
            f"--cloned-lr-decay-minutes must be a positive number, got {args.cloned_lr_decay_minutes}"
        )
    plan = Plan(
        args.robot_minutes, args.eval_every, args.eval_episodes, tuple(args.finetune_args), args.collect_only,
        args.demos, args.cloned_actor_lr, args.cloned_lr_final_fraction, args.cloned_lr_decay_minutes,
    )  # fmt: skip
    origin = provenance()
    report: dict[str, object] = {
        "plan": {
            **vars(plan),
            "stages": plan.stages(),
            "conditions": args.conditions,
            "seeds": args.seeds,
            "conditions_argv": {c: condition_argv(c, plan) for c in args.conditions},
        },
        "reasons": {},
    }
    for task in args.tasks:
        figures, before = run_task(task, args, plan, origin)
        top = headline(task, figures, before, plan)
        report["reasons"].update(top.pop("reasons"))  # type: ignore[attr-defined]
        report.update(top)
        report[task] = figures
        print(
            f"{task} on unit {before['unit']}: before {before['unit_success']}, nominal {before['nominal_success']}"
        )
        for condition, curve in figures["curves"].items():  # type: ignore[attr-defined]
            points = ", ".join(f"{m} min {v['success']:.2f}" for m, v in curve["success"].items())
            print(f"  {condition:13s} {points}")
    for task in ("lift",):
        for key in (f"{task}_before", f"{task}_after_30min", f"{task}_nominal"):
            if key not in report:
                report[key] = None
                report["reasons"][key] = f"not measured: --tasks {' '.join(args.tasks)}"  # type: ignore[index]
    report["provenance"] = origin
    if args.json:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(json.dumps(report, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
