"""Run an exported policy in the SO-101 twin under held-out perturbations: how much of its success is left.

    vlmrl evaluate --policy runs/train/policy.pt --perturb medium

    vlmrl evaluate --policy policy.pt --perturb medium --scorer "scorer:learned --scorer.path student.pt"

The grid (``vlmrl.evaluation.perturbation_grid``) is fixed: the nominal twin, one row per factor the preset turns on
(that factor alone) and a row with every factor at once, each over the same ``--episodes`` start states,
with perturbations 1 to 1.5 times the preset's ranges from a seed stream training never uses. Writes into
``out_dir``: ``evaluate.md`` (the table), ``evaluate.json`` (per row and per episode, the draws included),
``perturbed_views.png`` (the first frame of each row's episodes) and ``config.json``. ``--scorer`` (any
scorer, written as after ``vlmrl score EPISODES``) adds the scorer's ROC-AUC on each row's frames.

    vlmrl evaluate --policy runs/train/policy.pt --robot.unit b c      # the twin's units instead of the grid
    vlmrl evaluate --policy runs/train/policy.pt --robot.unit a/factors  # which of unit a's factors costs it

``--robot.unit`` runs the policy on the twin robot of each hardware-like unit (``sim.units``; ``all``: every
one) and of the nominal unit, through the safety layer as ``vlmrl deploy --robot.unit`` runs it, on the
grid's start states (``vlmrl.evaluation.units``): ``units.md``, ``units.json`` and ``unit_views.png``.
"""

from __future__ import annotations

import dataclasses
import logging
from dataclasses import dataclass
from pathlib import Path
from typing import Annotated, Any

import tyro

from sim.config import SimConfig, stored_sim_settings
from sim.factory import make_env
from vlmrl.errors import ConfigError
from vlmrl.evaluation.perturbation_grid import GridSpec, grid_rows, markdown_table, run_grid, write_grid
from vlmrl.evaluation.units import markdown_table as units_table
from vlmrl.evaluation.units import run_units, unit_names, write_units
from vlmrl.run_dir import write_config
from vlmrl.scorers.choice import parse_scorer, ready_scorer

logger = logging.getLogger("vlmrl.evaluate")


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
    """Steps before truncation; None: as long as the policy's training episodes."""
    calibration_dir: str | None = None
    """Calibration files of a policy trained through calibrated cameras (None: the default place)."""
    views: int = 4
    """Episodes per row shown in perturbed_views.png."""
    out_dir: Path = Path("runs/evaluate")
    """Where evaluate.md, evaluate.json, perturbed_views.png and config.json go."""
    torch_threads: int = 1
    """Torch threads for policy inference."""
    scorer: str | None = None
    """A scorer to measure on every row's frames, e.g. ``"scorer:learned --scorer.path student.pt"``: adds
    its ROC-AUC per row. Frames: the scorer's own camera and size when it declares them (a learned
    scorer), else the front camera at the policy's image size."""
    clip_length: int = 8
    """With --scorer: frames per window (as ``vlmrl score``)."""
    clip_stride: int = 2
    """With --scorer: steps between a window's frames."""
    units: Annotated[tuple[str, ...], tyro.conf.arg(name="robot.unit")] = ()
    """Twin units (``sim.units``: a, b, c, d, e, or all) to run the policy on instead of the perturbation
    grid, each after the nominal unit, through the safety layer as ``vlmrl deploy --robot.unit`` does.
    ``a/only-light`` keeps one of a unit's factors alone, ``a/no-light`` leaves it out (factors: latency, gears,
    offsets, camera, light, physics); ``a/factors`` runs the unit and both for every factor."""


def sim_config_for(run: dict[str, Any], cfg: Config) -> Any:
    """The nominal twin the policy was trained in (``policy_run_info``), for ``cfg``'s episode length."""
    if not run:
        raise ConfigError(
            f"policy {cfg.policy} does not record how it was trained (task, cameras, image size): "
            "export it with vlmrl train to evaluate it"
        )
    if run.get("suite", "so101") != "so101":
        raise ConfigError(
            f"policy {cfg.policy} was trained in {run['suite']!r}; perturbed evaluation runs the SO-101 twin only"
        )
    stored = stored_sim_settings(run)
    keys = {f.name for f in dataclasses.fields(SimConfig)} & set(stored) - {"suite", "max_episode_steps"}
    settings = {k: stored[k] for k in keys}
    settings["cameras"] = tuple(settings.get("cameras", ()))
    settings["camera_calibration"] = dict(settings.get("camera_calibration") or {})
    return SimConfig(
        suite="so101",
        max_episode_steps=cfg.max_episode_steps or run.get("max_episode_steps"),
        calibration_dir=cfg.calibration_dir,
        **settings,
    )


def grid_spec(cfg: Config) -> GridSpec:
    """The grid ``cfg`` asks for."""
    return GridSpec(
        perturb=cfg.perturb,
        factors=cfg.factors,
        episodes=cfg.episodes,
        seed=cfg.seed,
        views=cfg.views,
        clip_length=cfg.clip_length,
        clip_stride=cfg.clip_stride,
    )


def main(cfg: Config) -> int:
    """Run the grid and write the table, the JSON and the picture; returns 0."""
    from agents.export import load_policy
    from vlmrl.deployment.robot_env import check_policy_fits

    if cfg.episodes < 1:
        raise ConfigError(f"--episodes {cfg.episodes}: expected at least 1")
    if cfg.views < 0:
        raise ConfigError(f"--views {cfg.views}: expected 0 or more")
    if cfg.clip_length < 1 or cfg.clip_stride < 1:
        raise ConfigError(
            f"--clip-length {cfg.clip_length} / --clip-stride {cfg.clip_stride}: expected at least 1"
        )
    spec = grid_spec(cfg)
    if cfg.units:
        return evaluate_units(cfg, spec)
    grid_rows(spec)  # an unknown preset or factor fails before anything is loaded
    scorer_cfg = None
    if cfg.scorer is not None:
        scorer_cfg = parse_scorer(cfg.scorer, "--scorer")
    if not cfg.policy.is_file():
        raise ConfigError(f"--policy {cfg.policy}: no such file")
    import torch

    torch.set_num_threads(cfg.torch_threads)
    policy = load_policy(cfg.policy)
    sim_cfg = sim_config_for(policy.run, cfg)
    env = make_env(sim_cfg)
    scorer = None
    try:
        check_policy_fits(policy.obs_spec, env, f"policy {cfg.policy}")
        if policy.action_low.shape != env.action_space.shape:
            raise ConfigError(
                f"policy {cfg.policy} outputs actions of shape {policy.action_low.shape}; the twin's "
                f"{sim_cfg.action_mode} mode takes {env.action_space.shape}"
            )
        prompt = ""
        if scorer_cfg is not None:
            scorer, prompt = ready_scorer(scorer_cfg, env.unwrapped.task_description)
        write_config(cfg, cfg.out_dir)
        result = run_grid(
            env,
            policy,
            spec,
            scorer,
            scorer_cfg.kind if scorer_cfg is not None else "",
            on_row=lambda name, episodes: logger.info(
                "%s: success %d/%d", name, sum(e["success"] for e in episodes), len(episodes)
            ),
            prompt=prompt,
        )
    finally:
        env.close()
        if scorer is not None:
            scorer.close()
    outputs = write_grid(result, spec, cfg.out_dir, "evaluate", {"policy": str(cfg.policy)})
    print(markdown_table(result.summary, spec))
    print("vlmrl evaluate: " + ", ".join(str(p) for p in outputs))
    return 0


def evaluate_units(cfg: Config, spec: GridSpec) -> int:
    """``--robot.unit``: the policy on the twin's units (``vlmrl.evaluation.units``); returns 0."""
    from agents.export import load_policy

    names = unit_names(cfg.units)
    if cfg.scorer is not None:
        raise ConfigError(
            "--scorer measures a scorer on the perturbation grid; leave --robot.unit out for it"
        )
    if not cfg.policy.is_file():
        raise ConfigError(f"--policy {cfg.policy}: no such file")
    import torch

    torch.set_num_threads(cfg.torch_threads)
    policy = load_policy(cfg.policy)
    sim_config_for(
        policy.run, cfg
    )  # refuses a policy file without its training settings, or of another suite
    write_config(cfg, cfg.out_dir)
    seeds = spec.seeds()
    result = run_units(
        policy, f"policy {cfg.policy}", names, seeds, cfg.max_episode_steps, cfg.views, cfg.out_dir,
        on_unit=lambda name, episodes: logger.info(
            "unit %s: success %d/%d", name, sum(e["success"] for e in episodes), len(episodes)
        ),
    )  # fmt: skip
    outputs = write_units(result, seeds, cfg.out_dir, {"policy": str(cfg.policy)})
    print(units_table(result, seeds))
    print("vlmrl evaluate: " + ", ".join(str(p) for p in outputs))
    return 0
