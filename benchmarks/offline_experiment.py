"""RG-VLM on the SO-101 twin: offline IQL on a mixed-quality lift dataset with sparse, VLM and sparse + VLM
rewards, behaviour cloning as the floor (issue #16; Lee et al. 2025, shared/seeds/004).

    python benchmarks/offline_experiment.py build --out results/offline/data      # record + score the dataset
    python benchmarks/offline_experiment.py run --out results/offline --seeds 0 1 2 --variants bc sparse ...
    python benchmarks/offline_experiment.py analyse --out results/offline         # table.md, curves.png, summary.json
    python benchmarks/offline_experiment.py labels --out results/offline          # aux rewards vs the oracle's

The learned pixel scorer as the labeller (``vlm-learned`` variants): a student (``vlmrl scorer fit``)
distils the oracle on 20 labelled episodes recorded with the same recipe from other seeds, then scores
the dataset (its id: ``learned-student-oracle``)::

    python benchmarks/offline_experiment.py build --out /tmp/offline-label --expert 8 --noisy 8 --random 4 --seed 1000
    python -m vlmrl scorer fit /tmp/offline-label/episodes.zarr --out /tmp/offline-data/student-oracle.pt \
        --labels teacher --clip-length 2 --clip-stride 2 --num-frames 2 --no-progress teacher:oracle
    python -m vlmrl score /tmp/offline-data/episodes.zarr --clip-length 2 --clip-stride 2 --aux.kind scaled \
        --out-dir /tmp/offline-data/score-learned scorer:learned --scorer.path /tmp/offline-data/student-oracle.pt

``build`` records the twin's scripted expert, the expert with Gaussian action noise and uniform-random
actions into a vlmrl zarr store (front camera, so a scorer can judge the clips; the sim config is stored,
so ``vlmrl train --offline`` evaluates in the twin), then runs ``vlmrl score`` with the oracle scorer at
label noise 0 and 0.2 (``--aux.kind scaled``: the clip's score is the reward of the transition reaching
its last frame, RG-VLM's labelling). ``run`` trains one ``vlmrl train --offline`` per (variant, seed),
state observations, a fixed number of gradient steps, success evaluated in the twin. ``analyse`` writes
the table (mean, sd, Welch t-test p against sparse, git commit per row) and the curves.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import math
import os
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

NOISES = (0.0, 0.2)
VARIANTS = {
    "bc": ("sparse", True),
    "sparse": ("sparse", False),
    "vlm": ("scorer:oracle", False),
    "vlm-noise0.2": ("scorer:oracle-noise0.2", False),
    "sparse+vlm": ("sparse+scorer:oracle", False),
    "sparse+vlm-noise0.2": ("sparse+scorer:oracle-noise0.2", False),
    "vlm-learned": ("scorer:learned-student-oracle", False),
    "sparse+vlm-learned": ("sparse+scorer:learned-student-oracle", False),
}
"""Variant -> (--reward, behaviour cloning)."""


def git_commit() -> str:
    out = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=ROOT, capture_output=True, text=True)
    dirty = subprocess.run(
        ["git", "status", "--porcelain", "--untracked-files=no"], cwd=ROOT, capture_output=True, text=True
    )
    return out.stdout.strip() + ("+dirty" if dirty.stdout.strip() else "")


def build(args: argparse.Namespace) -> None:
    from buffer import BufferConfig
    from sim.config import SimConfig
    from sim.factory import make_env
    from sim.so101.tasks import TASKS
    from vlmrl.loop.assembly import open_episode_store
    from vlmrl.offline.datasets import mixed_quality_episodes

    out = Path(args.out)
    store = out / "episodes.zarr"
    if store.exists():
        raise SystemExit(f"{store} exists; remove it to rebuild")
    out.mkdir(parents=True, exist_ok=True)
    sim = SimConfig(
        task=args.task, cameras=("front",), image_size=64, action_mode="delta", terminate_on_success=False
    )
    env = make_env(sim)
    started = time.monotonic()
    rollouts = mixed_quality_episodes(
        env, args.expert, args.noisy, args.random, args.noise_std, seed=args.seed
    )
    spec = env.observation_space
    obs_spec = {k: (tuple(space.shape), np.dtype(space.dtype)) for k, space in spec.spaces.items()}
    counts = {"expert": args.expert, "noisy": args.noisy, "random": args.random, "noise_std": args.noise_std}
    successes = {}
    kinds = ["expert"] * args.expert + ["noisy"] * args.noisy + ["random"] * args.random
    for kind in ("expert", "noisy", "random"):
        successes[kind] = int(
            sum(r["info"]["success"].max() > 0.5 for r, k in zip(rollouts, kinds) if k == kind)
        )
    attrs = {
        "task_description": str(TASKS[args.task]().description),
        "control_hz": sim.control_hz,
        "robot_type": "sim",
        "sim_config": dataclasses.asdict(sim),
        "counts": counts,
        "successes": successes,
    }
    total = sum(len(r["action"]) + 1 for r in rollouts)
    buffer = open_episode_store(
        store,
        BufferConfig(storage="zarr", capacity_steps=total + 16),
        obs_spec,
        env.action_space.shape[0],
        ("success", "progress"),
        attrs,
    )
    with buffer:
        for r in rollouts:
            buffer.add_episode(r["obs"], r["action"], r["reward"], r["terminated"], r["truncated"], r["info"])
    env.close()
    print(
        f"build: {len(rollouts)} episodes ({counts}; successes {successes}) -> {store} in {time.monotonic() - started:.0f} s"
    )
    for noise in NOISES:
        cmd = [
            sys.executable, "-m", "vlmrl", "score", str(store), "--clip-length", "2", "--clip-stride", "2",
            "--aux.kind", "scaled", "--out-dir", str(out / f"score-noise{noise:g}"),
            "scorer:oracle", "--scorer.noise", str(noise),
        ]  # fmt: skip
        print("build:", " ".join(cmd[2:]))
        subprocess.run(cmd, check=True, cwd=ROOT)
    (out / "dataset.json").write_text(
        json.dumps({**attrs, "episodes": len(rollouts), "rows": total}, indent=2)
    )


def run(args: argparse.Namespace) -> None:
    import torch

    from agents.config import IQLConfig
    from vlmrl.offline import run as offline

    torch.set_num_threads(1)
    commit = git_commit()
    for variant in args.variants:
        reward, bc = VARIANTS[variant]
        for seed in args.seeds:
            run_dir = Path(args.out) / "runs" / f"{variant}-seed{seed}"
            if (run_dir / "result.json").exists():
                print(f"run: {run_dir} done already")
                continue
            cfg = offline.OfflineConfig(
                data=Path(args.data),
                reward=reward,
                policy_obs="state",
                agent=IQLConfig(
                    hidden_dims=tuple(args.hidden),
                    temperature=args.temperature,
                    expectile=args.expectile,
                    bc=bc,
                    seed=seed,
                ),
                gradient_steps=args.steps,
                batch_size=256,
                eval_every_steps=args.eval_every,
                eval_episodes=args.eval_episodes,
                checkpoint_every_steps=args.steps,
                seed=seed,
                run_dir=str(run_dir),
            )
            started = time.monotonic()
            offline.main(cfg)
            history = torch.load(run_dir / "checkpoint.pt", weights_only=False)["history"]
            result = {
                "variant": variant,
                "seed": seed,
                "reward": reward,
                "bc": bc,
                "commit": commit,
                "steps": args.steps,
                "success": history[-1]["success_rate"],
                "curve": [[h["step"], h["success_rate"]] for h in history],
                "wall_s": time.monotonic() - started,
                "config": dataclasses.asdict(cfg) | {"data": str(cfg.data)},
            }
            result["hidden_dims"] = list(args.hidden)
            (run_dir / "result.json").write_text(json.dumps(result, indent=2))


def welch_p(a: list[float], b: list[float]) -> float:
    """Two-sided Welch t-test p-value (NaN when undefined: fewer than 2 values or no variance)."""
    from scipy import stats

    if len(a) < 2 or len(b) < 2 or (np.var(a) == 0 and np.var(b) == 0):
        return math.nan
    return float(stats.ttest_ind(a, b, equal_var=False).pvalue)


def final_episodes(rows: list[dict]) -> tuple[int, int]:
    """(successful, total) evaluation episodes of the final evaluations of ``rows`` (the runs of a variant)."""
    total = sum(int(r["config"]["eval_episodes"]) for r in rows)
    wins = sum(round(r["success"] * int(r["config"]["eval_episodes"])) for r in rows)
    return wins, total


def fisher_p(a: tuple[int, int], b: tuple[int, int]) -> float:
    """Two-sided Fisher exact test on (successes, episodes) pairs: the episode-level check beside Welch's
    t on per-seed rates, which against an all-zero group is a one-sample test of a few 5% steps."""
    from scipy import stats

    return float(stats.fisher_exact([[a[0], a[1] - a[0]], [b[0], b[1] - b[0]]]).pvalue)


def analyse(args: argparse.Namespace) -> None:
    out = Path(args.out)
    # Committed results (per_run/) and runs finished here (runs/, git-ignored); a run here wins.
    found = {p.stem: p for p in sorted((out / "per_run").glob("*.json"))}
    found |= {p.parent.name: p for p in sorted((out / "runs").glob("*/result.json"))}
    results = [json.loads(p.read_text()) for _, p in sorted(found.items())]
    by_variant: dict[str, list[dict]] = {}
    for r in results:
        by_variant.setdefault(r["variant"], []).append(r)
    base = [r["success"] for r in by_variant.get("sparse", [])]
    data = json.loads((Path(args.data).parent / "dataset.json").read_text())
    lines = [
        f"Dataset: {data['episodes']} twin `lift` episodes, {data['rows']} rows: {data['counts']['expert']} scripted expert, "
        f"{data['counts']['noisy']} expert with Gaussian action noise (sd {data['counts']['noise_std']} of half the range), "
        f"{data['counts']['random']} uniform-random; successful: {data['successes']}.",
        "",
        "| variant | reward | seeds | success at budget (mean ± sd) | p vs sparse (Welch t) | final episodes won | p vs sparse (Fisher, episodes) | mean success over evaluations | gradient steps | commit |",
        "|---|---|---|---|---|---|---|---|---|---|",
    ]
    summary = {}
    for variant in VARIANTS:
        rows = by_variant.get(variant)
        if not rows:
            continue
        s = [r["success"] for r in rows]
        p = welch_p(s, base) if variant != "sparse" else math.nan
        won = final_episodes(rows)
        p_fisher = fisher_p(won, final_episodes(by_variant["sparse"])) if variant != "sparse" else math.nan
        commits = sorted({r["commit"] for r in rows})
        reward = "(behaviour cloning)" if rows[0]["bc"] else f"`{rows[0]['reward']}`"
        sd = float(np.std(s, ddof=1)) if len(s) > 1 else 0.0
        area = float(np.mean([np.mean([v for _, v in r["curve"]]) for r in rows]))
        lines.append(
            f"| {variant} | {reward} | {len(s)} | {100 * np.mean(s):.0f}% ± {100 * sd:.0f}% | "
            f"{'-' if math.isnan(p) else f'{p:.2g}'} | {won[0]} / {won[1]} | "
            f"{'-' if math.isnan(p_fisher) else f'{p_fisher:.2g}'} | {100 * area:.1f}% | {rows[0]['steps']:,} | "
            f"{', '.join(commits)} |"
        )
        summary[variant] = {
            "seeds": [r["seed"] for r in rows],
            "success": s,
            "mean": float(np.mean(s)),
            "sd": sd,
            "p_vs_sparse": p,
            "final_episodes_won": list(won),
            "p_vs_sparse_fisher": p_fisher,
            "commits": commits,
        }
    (out / "table.md").write_text("\n".join(lines) + "\n")
    (out / "summary.json").write_text(json.dumps(summary, indent=2))
    print("\n".join(lines))

    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(7, 4.5))
    for variant, rows in by_variant.items():
        steps = [s for s, _ in rows[0]["curve"]]
        curves = np.array([[v for _, v in r["curve"]] for r in rows if len(r["curve"]) == len(steps)])
        mean = curves.mean(axis=0)
        ax.plot(steps, mean, marker="o", label=f"{variant} ({len(curves)} seeds)")
        ax.fill_between(steps, curves.min(axis=0), curves.max(axis=0), alpha=0.1)
    ax.set(
        xlabel="gradient steps",
        ylabel="twin success rate",
        title="offline lift: IQL rewards vs BC",
        ylim=(-0.05, 1.05),
    )
    ax.grid(alpha=0.3)
    ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(out / "curves.png", dpi=100)


def labels(args: argparse.Namespace) -> None:
    """How each stored aux reward agrees with the noise-free oracle's (per transition) and how well its
    episode sum tells successful from failed episodes (AUC); writes ``labels.json`` into ``--out``."""
    from scipy import stats

    from vlmrl.offline.datasets import load_episodes

    episodes = load_episodes(Path(args.data), ["state"])
    rows = episodes.transition_rows()
    success = episodes.episode_success()
    out = {}
    for scorer_id, aux in sorted(episodes.aux.items()):
        sums = np.array([aux[s : e - 1].sum() for s, e in zip(episodes.starts, episodes.ends)])
        good, bad = sums[success], sums[~success]
        out[scorer_id] = {
            "pearson_vs_oracle": float(stats.pearsonr(aux[rows], episodes.aux["oracle"][rows])[0]),
            "spearman_vs_oracle": float(stats.spearmanr(aux[rows], episodes.aux["oracle"][rows])[0]),
            "episode_sum_auc": float(
                ((good[:, None] > bad[None, :]) + 0.5 * (good[:, None] == bad[None, :])).mean()
            ),
        }
        print(scorer_id, {k: round(v, 3) for k, v in out[scorer_id].items()})
    (Path(args.out) / "labels.json").write_text(json.dumps(out, indent=2))


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    sub = parser.add_subparsers(dest="cmd", required=True)
    b = sub.add_parser("build")
    b.add_argument("--out", default="results/offline/data")
    b.add_argument("--task", default="lift")
    b.add_argument("--expert", type=int, default=20)
    b.add_argument("--noisy", type=int, default=40)
    b.add_argument("--random", type=int, default=40)
    b.add_argument("--noise-std", type=float, default=0.6)
    b.add_argument("--seed", type=int, default=0)
    r = sub.add_parser("run")
    r.add_argument("--out", default="results/offline")
    r.add_argument("--data", default="results/offline/data/episodes.zarr")
    r.add_argument("--variants", nargs="+", default=list(VARIANTS), choices=list(VARIANTS))
    r.add_argument("--seeds", nargs="+", type=int, default=[0, 1, 2])
    r.add_argument("--steps", type=int, default=6_000)
    r.add_argument("--hidden", nargs="+", type=int, default=[128, 128])
    r.add_argument("--eval-every", type=int, default=1_500)
    r.add_argument("--eval-episodes", type=int, default=20)
    r.add_argument("--temperature", type=float, default=10.0)
    r.add_argument("--expectile", type=float, default=0.7)
    a = sub.add_parser("analyse")
    a.add_argument("--out", default="results/offline")
    a.add_argument("--data", default="results/offline/data/episodes.zarr")
    lab = sub.add_parser("labels")
    lab.add_argument("--out", default="results/offline")
    lab.add_argument("--data", default="results/offline/data/episodes.zarr")
    args = parser.parse_args()
    os.environ.setdefault("MUJOCO_GL", "egl")
    {"build": build, "run": run, "analyse": analyse, "labels": labels}[args.cmd](args)


if __name__ == "__main__":
    main()
