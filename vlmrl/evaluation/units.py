"""An exported policy on the twin's hardware-like units (``sim.units``): how much of its success a unit leaves.

``vlmrl evaluate --policy P --robot.unit b c`` runs it: the policy drives the twin robot of each unit through
the safety layer, as ``vlmrl deploy --robot.unit`` drives it (``LeRobotEnv`` around ``SimSO101``), and the
nominal unit first, on the same start states (the held-out grid's seeds,
``vlmrl.evaluation.perturbation_grid.HELD_OUT_SEED_BASE``). Episodes are as long as the policy's training episodes
unless told otherwise, and run as fast as the host allows (the twin still advances one policy control
period per step). Writes ``units.md`` (the table), ``units.json`` (per unit its offsets, per episode the
result) and, with views, ``unit_views.png`` (each unit's first frames: its camera and light).
"""

from __future__ import annotations

import dataclasses
import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from robot.config import ArmConfig, LeRobotEnvConfig
from sim.errors import SimError
from vlmrl.errors import ConfigError
from vlmrl.evaluation.perturbation_grid import row_figures, write_views
from vlmrl.loop.arm_actions import action_converter

FAST_CONTROL_HZ = 10_000.0
"""Loop rate of the units' envs: the twin is stepped in lockstep, so the loop need not wait for real time."""


@dataclass
class UnitsResult:
    """Per unit: summary figures, every episode and the kept first frames; the units' offsets."""

    summary: dict[str, dict[str, Any]]
    rows: dict[str, list[dict[str, Any]]]
    frames: dict[str, list[np.ndarray]]
    units: dict[str, dict[str, Any]]


def unit_names(given: tuple[str, ...]) -> list[str]:
    """The units to run, nominal first (``all``: every named unit); ConfigError for an unknown name."""
    from sim.units import NOMINAL, UNITS, factor_names, unit_named

    names = list(UNITS) if "all" in given else [NOMINAL, *given]
    names = [n for name in names for n in factor_names(name)]
    for name in names:
        try:
            unit_named(name)
        except SimError as exc:
            raise ConfigError(f"--robot.unit {name!r}: {exc}; or 'all'") from None
    return list(dict.fromkeys(names))


def run_units(
    policy: Any,
    source: str,
    names: list[str],
    seeds: list[int],
    max_episode_steps: int | None,
    views: int,
    out_dir: Path,
    on_unit: Any = None,
) -> UnitsResult:
    """Run ``policy`` (an exported policy, ``source`` naming it) on the twin of each unit in ``names`` over
    ``seeds``; each unit's clipped commands go to ``out_dir/units/<name>/safety.jsonl``."""
    from sim.units import NOMINAL, unit_named
    from vlmrl.deployment.policy_episodes import fit_to_policy, refuse_privileged, run_policy_episode
    from vlmrl.deployment.robot_env import RobotEnvConfig, check_policy_fits, make_robot_env

    run = policy.run
    refuse_privileged(policy.obs_spec, run, source)
    reads_pixels = any(k.startswith("pixels/") for k in policy.obs_spec)
    convert = action_converter(run)
    rows, frames = {}, {}
    for name in names:
        cfg = RobotEnvConfig(
            robot=ArmConfig(type="sim_so101", unit=None if name == NOMINAL else name),
            env=LeRobotEnvConfig(
                control_hz=FAST_CONTROL_HZ, max_episode_steps=max_episode_steps, keyboard_estop=False
            ),
            twin_control_hz=run.get("control_hz"),
        )
        cfg = fit_to_policy(cfg, run, reads_pixels, source)
        env = make_robot_env(cfg, out_dir / "units" / name, warn_clips=False)
        with env:
            check_policy_fits(policy.obs_spec, env, source)
            camera = next((k for k in policy.obs_spec if k.startswith("pixels/")), None)
            episodes, first = [], []
            for i, seed in enumerate(seeds):
                result, seen = run_policy_episode(env, policy, seed, convert, camera if i < views else None)
                episodes.append({"seed": seed, **result})
                if seen:
                    first.append(seen[0])
        rows[name], frames[name] = episodes, first
        if on_unit is not None:
            on_unit(name, episodes)
    return UnitsResult(summary(rows), rows, frames, {n: unit_named(n).describe() for n in names})


def summary(rows: dict[str, list[dict[str, Any]]]) -> dict[str, dict[str, Any]]:
    """Per unit: episodes, success rate, mean return, success relative to the nominal unit's (None when the
    policy never succeeds there) and safety clips per episode."""
    from sim.units import NOMINAL

    nominal = float(np.mean([e["success"] for e in rows[NOMINAL]])) if NOMINAL in rows else 0.0
    return {
        name: {
            **row_figures(episodes, nominal),
            "safety_clips_per_episode": float(np.mean([sum(e["safety_clips"].values()) for e in episodes])),
        }
        for name, episodes in rows.items()
    }


def markdown_table(result: UnitsResult, seeds: list[int]) -> str:
    """The summary as a markdown table, with a line saying what was run."""
    lines = [
        f"Twin units (`sim.units`), {len(seeds)} episodes each from the same start states (seeds "
        f"{seeds[0]}..{seeds[-1]}), through the safety layer as `vlmrl deploy --robot.unit` runs them",
        "",
        "| unit | episodes | success | vs nominal | mean return | safety clips / episode |",
        "|---|---|---|---|---|---|",
    ]
    for name, row in result.summary.items():
        ratio = "-" if row["vs_nominal"] is None else f"{row['vs_nominal']:.2f}"
        lines.append(
            f"| {name} | {row['episodes']} | {100 * row['success_rate']:.0f}% | {ratio} | "
            f"{row['mean_return']:.2f} | {row['safety_clips_per_episode']:.1f} |"
        )
    return "\n".join(lines) + "\n"


def write_units(result: UnitsResult, seeds: list[int], out_dir: Path, extra: dict[str, Any]) -> list[Path]:
    """``units.md``, ``units.json`` and, with views, ``unit_views.png`` in ``out_dir``; returns their paths."""
    out_dir.mkdir(parents=True, exist_ok=True)
    (out_dir / "units.md").write_text(markdown_table(result, seeds))
    record = {**extra, "seeds": seeds, "units": result.units, "summary": result.summary, "rows": result.rows}
    (out_dir / "units.json").write_text(json.dumps(record, indent=2, default=_plain) + "\n")
    paths = [out_dir / "units.md", out_dir / "units.json"]
    if any(result.frames.values()):
        paths.append(write_views(result.frames, out_dir / "unit_views.png"))
    return paths


def _plain(value: Any) -> Any:
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return dataclasses.asdict(value)
    return float(value)
