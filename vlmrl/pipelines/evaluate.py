"""Run an exported policy in the SO-101 twin under held-out perturbations: how much of its success is left.

    vlmrl evaluate --policy runs/train/policy.pt --perturb medium

The grid is fixed: one row per factor the preset turns on (that factor alone), a row with every factor
at once and the nominal twin, each over the same ``--episodes`` start states (evaluation seeds, never
used in training). Perturbations are drawn with magnitudes of 1 to 1.5 times the preset's ranges
(``sim.randomization.HELD_OUT_MAGNITUDE``) from a seed stream of their own: a policy trained with that
preset never saw them. Writes into ``out_dir``: ``evaluate.md`` (the table), ``evaluate.json`` (per row
and per episode, the draws included), ``perturbed_views.png`` (the first frame of each row's episodes)
and ``config.json``.
"""

from __future__ import annotations

import dataclasses
import json
import logging
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from vlmrl.errors import ConfigError
from vlmrl.pipelines.common import write_config

logger = logging.getLogger("vlmrl.evaluate")

HELD_OUT_SEED_BASE = 2_000_000
"""Start states of the grid: above every training seed and apart from the training evaluation's seeds
(``vlmrl.evaluation.EVAL_SEED_BASE`` = 1,000,000)."""
HELD_OUT_SALT = 0x5EED_0E7A
"""Seed stream of the grid's perturbations (training draws with ``randomize.seed_salt``, 0 by default)."""
NOMINAL, ALL = "nominal", "all"
"""Row names besides the factors: the unperturbed twin and every factor at once."""


@dataclass(frozen=True, kw_only=True)
class Config:
    """vlmrl evaluate: success of an exported policy on a held-out grid of twin perturbations."""

    policy: Path
    """policy.pt written by ``vlmrl train`` (its task, cameras, image size and control rate are used)."""
    perturb: str = "medium"
    """Randomisation preset whose ranges the grid goes beyond (``sim.randomization.PRESETS``)."""
    factors: tuple[str, ...] = ()
    """Factors to give a row (``sim.randomization.FACTORS``); empty: every factor the preset turns on."""
    episodes: int = 10
    """Episodes per row (the same start states in every row)."""
    seed: int = 0
    """Picks the grid's start states and draws; the same seed gives the same grid."""
    max_episode_steps: int | None = None
    """Steps before truncation; None: the task's default."""
    calibration_dir: str | None = None
    """Calibration files of a policy trained through calibrated cameras (None: the default place)."""
    views: int = 4
    """Episodes per row shown in perturbed_views.png."""
    out_dir: Path = Path("runs/evaluate")
    """Where evaluate.md, evaluate.json, perturbed_views.png and config.json go."""
    torch_threads: int = 1
    """Torch threads for policy inference."""


def sim_config_for(run: dict[str, Any], cfg: Config) -> Any:
    """The nominal twin the policy was trained in (``policy_run_info``), for ``cfg``'s episode length."""
    from sim.config import SimConfig

    if not run:
        raise ConfigError(
            f"policy {cfg.policy} does not record how it was trained (task, cameras, image size): "
            "export it with vlmrl train to evaluate it"
        )
    if run.get("suite", "so101") != "so101":
        raise ConfigError(
            f"policy {cfg.policy} was trained in {run['suite']!r}; perturbed evaluation runs the SO-101 twin only"
        )
    keys = {f.name for f in dataclasses.fields(SimConfig)} & set(run) - {"suite"}
    settings = {k: run[k] for k in keys}
    settings["cameras"] = tuple(settings.get("cameras", ()))
    settings["camera_calibration"] = dict(settings.get("camera_calibration") or {})
    return SimConfig(
        suite="so101",
        max_episode_steps=cfg.max_episode_steps,
        calibration_dir=cfg.calibration_dir,
        **settings,
    )


def grid_rows(cfg: Config) -> dict[str, Any]:
    """Row name -> the ``sim.randomization.Ranges`` it draws from (None: nominal)."""
    from sim.randomization import FACTORS, PRESETS

    if cfg.perturb not in PRESETS or cfg.perturb == "none":
        presets = [p for p in PRESETS if p != "none"]
        raise ConfigError(f"--perturb {cfg.perturb!r}: unknown preset; expected one of {presets}")
    ranges = PRESETS[cfg.perturb]
    unknown = [f for f in cfg.factors if f not in FACTORS]
    if unknown:
        raise ConfigError(f"--factors: unknown factor(s) {unknown}; expected some of {list(FACTORS)}")
    factors = list(cfg.factors) or [f for f in FACTORS if getattr(ranges, f)]
    off = [f for f in factors if not getattr(ranges, f)]
    if off:
        raise ConfigError(f"--factors {off}: preset {cfg.perturb!r} does not perturb them")
    rows: dict[str, Any] = {NOMINAL: None}
    rows.update({f: ranges.only(f) for f in factors})
    rows[ALL] = ranges
    return rows


def run_row(
    env: Any, policy: Any, ranges: Any, seeds: list[int], views: int
) -> tuple[list[dict[str, Any]], list[np.ndarray]]:
    """Episodes of one row: per-episode results and the first frames of the first ``views`` episodes."""
    from sim.config import RandomizeConfig
    from sim.randomization import HELD_OUT_MAGNITUDE, Perturbation, draw, episode_generator
    from sim.so101.arm import CAMERAS

    # Calibrated cameras whose files store their uncertainty get ranges of that size, as in training.
    per_camera = None if ranges is None else env.unwrapped.camera_ranges(ranges, RandomizeConfig())
    episodes, frames = [], []
    for i, seed in enumerate(seeds):
        if ranges is None:
            perturbation = Perturbation()
        else:
            rng = episode_generator(seed, HELD_OUT_SALT)
            perturbation = draw(ranges, rng, CAMERAS, HELD_OUT_MAGNITUDE, per_camera)
        obs, info = env.reset(seed=seed, options={"perturbation": perturbation})
        if i < views:
            frames.append(env.render())
        total, steps, success, done = 0.0, 0, bool(info.get("success", False)), False
        while not done:
            obs, reward, terminated, truncated, info = env.step(policy(obs))
            total += float(reward)
            steps += 1
            success = success or bool(info.get("success", False))
            done = terminated or truncated
        episodes.append(
            {
                "seed": seed,
                "success": success,
                "return": total,
                "steps": steps,
                "perturbation": dataclasses.asdict(perturbation),
            }
        )
    return episodes, frames


def summarise(rows: dict[str, list[dict[str, Any]]]) -> dict[str, dict[str, Any]]:
    """Per row: success rate, mean return and the success relative to the nominal row's (None when the
    policy never succeeds on the nominal twin)."""
    nominal = float(np.mean([e["success"] for e in rows[NOMINAL]]))
    out = {}
    for name, episodes in rows.items():
        success = float(np.mean([e["success"] for e in episodes]))
        out[name] = {
            "episodes": len(episodes),
            "success_rate": success,
            "mean_return": float(np.mean([e["return"] for e in episodes])),
            "vs_nominal": success / nominal if nominal > 0 else None,
        }
    perturbed = [e for name, episodes in rows.items() if name != NOMINAL for e in episodes]
    overall = float(np.mean([e["success"] for e in perturbed]))
    out["overall (perturbed rows)"] = {
        "episodes": len(perturbed),
        "success_rate": overall,
        "mean_return": float(np.mean([e["return"] for e in perturbed])),
        "vs_nominal": overall / nominal if nominal > 0 else None,
    }
    return out


def markdown_table(summary: dict[str, dict[str, Any]], cfg: Config) -> str:
    """The summary as a markdown table with a line saying what the grid was."""
    lines = [
        f"Held-out perturbation grid of preset `{cfg.perturb}` (magnitudes 1-1.5x its ranges, seed "
        f"{cfg.seed}, {cfg.episodes} episodes per row, the same start states in every row)",
        "",
        "| perturbation | episodes | success | vs nominal | mean return |",
        "|---|---|---|---|---|",
    ]
    for name, row in summary.items():
        ratio = "-" if row["vs_nominal"] is None else f"{row['vs_nominal']:.2f}"
        lines.append(
            f"| {name} | {row['episodes']:.0f} | {100 * row['success_rate']:.0f}% | {ratio} | "
            f"{row['mean_return']:.2f} |"
        )
    return "\n".join(lines) + "\n"


def write_views(frames: dict[str, list[np.ndarray]], path: Path, label_px: int = 150) -> Path:
    """A PNG grid: one row per perturbation row (named on the left), its episodes' first frames."""
    from PIL import Image, ImageDraw

    size = max(f.shape[0] for row in frames.values() for f in row)
    columns = max(len(row) for row in frames.values())
    grid = Image.new("RGB", (label_px + columns * (size + 2), len(frames) * (size + 2)), "white")
    draw = ImageDraw.Draw(grid)
    for r, (name, row) in enumerate(frames.items()):
        top = r * (size + 2)
        draw.text((4, top + size // 2 - 5), name, fill="black")
        for c, frame in enumerate(row):
            grid.paste(Image.fromarray(np.asarray(frame, dtype=np.uint8)), (label_px + c * (size + 2), top))
    grid.save(path)
    return path


def main(cfg: Config) -> int:
    """Run the grid and write the table, the JSON and the picture; returns 0."""
    from agents.export import load_policy
    from sim.factory import make_env
    from vlmrl.pipelines.common import check_policy_fits

    if cfg.episodes < 1:
        raise ConfigError(f"--episodes {cfg.episodes}: expected at least 1")
    if cfg.views < 0:
        raise ConfigError(f"--views {cfg.views}: expected 0 or more")
    rows = grid_rows(cfg)
    if not cfg.policy.is_file():
        raise ConfigError(f"--policy {cfg.policy}: no such file")
    import torch

    torch.set_num_threads(cfg.torch_threads)
    policy = load_policy(cfg.policy)
    sim_cfg = sim_config_for(policy.run, cfg)
    env = make_env(sim_cfg)
    try:
        check_policy_fits(policy.obs_spec, env, f"policy {cfg.policy}")
        if policy.action_low.shape != env.action_space.shape:
            raise ConfigError(
                f"policy {cfg.policy} outputs actions of shape {policy.action_low.shape}; the twin's "
                f"{sim_cfg.action_mode} mode takes {env.action_space.shape}"
            )
        write_config(cfg, cfg.out_dir)
        seeds = [HELD_OUT_SEED_BASE + 1000 * cfg.seed + i for i in range(cfg.episodes)]
        results, frames = {}, {}
        for name, ranges in rows.items():
            results[name], frames[name] = run_row(env, policy, ranges, seeds, cfg.views)
            logger.info("%s: success %d/%d", name, sum(e["success"] for e in results[name]), cfg.episodes)
    finally:
        env.close()
    summary = summarise(results)
    table = markdown_table(summary, cfg)
    (cfg.out_dir / "evaluate.md").write_text(table)
    record = {"policy": str(cfg.policy), "perturb": cfg.perturb, "seed": cfg.seed, "summary": summary}
    record["rows"] = results
    (cfg.out_dir / "evaluate.json").write_text(json.dumps(record, indent=2, default=float) + "\n")
    outputs = [cfg.out_dir / "evaluate.md", cfg.out_dir / "evaluate.json"]
    if cfg.views > 0:
        outputs.append(write_views(frames, cfg.out_dir / "perturbed_views.png"))
    print(table)
    print("vlmrl evaluate: " + ", ".join(str(p) for p in outputs))
    return 0
