"""Named training recipes: `vlmrl train --recipe NAME` sets a measured combination of options at once.

A recipe is a table of ``TrainConfig`` fields (dotted paths such as ``agent.layer_norm``) and their values,
with per-task budgets. It sets a field only where the command line left it at ``vlmrl train``'s default, so
any option given beside ``--recipe`` wins. The values a recipe set are printed when the run starts and listed
in the run's report; ``config.json`` holds the resolved config as always.

Each recipe's measured results are in docs/deployable.md and ``results/deployable/``.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal

from vlmrl.errors import ConfigError

if TYPE_CHECKING:
    from vlmrl.train_config import TrainConfig


@dataclass(frozen=True)
class Recipe:
    """A named set of ``vlmrl train`` options."""

    summary: str
    """One sentence: what a run with this recipe produces."""
    settings: dict[str, Any]
    """Dotted ``TrainConfig`` field -> value, for every task."""
    task_settings: dict[str, dict[str, Any]] = field(default_factory=dict)
    """Twin task -> settings that differ per task (budgets)."""


DEPLOYABLE = Recipe(
    summary=(
        "a policy a real SO-101 runs (joints + front camera, joint-delta actions), learned with 25 scripted "
        "demonstrations, a sparse reward and episodes that end at success"
    ),
    settings={
        "policy_obs": "robot",
        "sim.action_mode": "delta",
        "sim.reward": "sparse",
        # Episodes end at success and the success is valued as held for ever (docs/deployable.md, "Success-terminal
        # episodes"): the critic's targets at success are exact instead of bootstrapped.
        "sim.terminate_on_success": True,
        "buffer.absorbing_terminal": True,
        "buffer.gamma": 0.95,
        "buffer.storage": "memory",
        "replay": "uniform",
        "demo_episodes": 25,
        "agent.layer_norm": True,
        "agent.bc_weight": 0.4,
        "agent.bc_q_filter": False,
        "asymmetric_critic": True,
        "agent.privileged_aux_weight": 1.0,
        "eval_every_steps": 2500,
        "eval_episodes": 20,
    },
    task_settings={
        "reach": {"total_steps": 10_000, "eval_every_steps": 1000},
        "lift": {"total_steps": 30_000},
        "push": {"total_steps": 30_000},
        "place": {"total_steps": 30_000},
    },
)

RECIPES: dict[str, Recipe] = {"deployable": DEPLOYABLE}
"""The recipes of ``--recipe``, by name."""

if TYPE_CHECKING:
    RecipeName = str
else:
    RecipeName = Literal[("none", *RECIPES)]
"""A recipe name as a CLI choice ("none": no recipe)."""


def _get(obj: Any, path: str) -> Any:
    for name in path.split("."):
        obj = getattr(obj, name)
    return obj


def _with(obj: Any, path: str, value: Any) -> Any:
    head, _, rest = path.partition(".")
    if not rest:
        return dataclasses.replace(obj, **{head: value})
    return dataclasses.replace(obj, **{head: _with(getattr(obj, head), rest, value)})


def recipe_settings(name: str, task: str) -> dict[str, Any]:
    """The settings recipe ``name`` makes for twin task ``task`` (its per-task values win)."""
    if name not in RECIPES:
        raise ConfigError(f"recipe {name!r}: choose one of none, {', '.join(RECIPES)}")
    recipe = RECIPES[name]
    return {**recipe.settings, **recipe.task_settings.get(task, {})}


def apply_recipe(cfg: TrainConfig, defaults: TrainConfig) -> tuple[TrainConfig, dict[str, Any]]:
    """``cfg`` with its recipe's settings where ``cfg`` has ``defaults``' value; returns it and the settings
    it took (those the command line had changed are left as given)."""
    if cfg.recipe == "none":
        return cfg, {}
    if cfg.sim.suite != "so101":
        raise ConfigError(
            f"recipe {cfg.recipe!r} is for the SO-101 twin (--sim.suite so101), not {cfg.sim.suite!r}"
        )
    applied: dict[str, Any] = {}
    for path, value in recipe_settings(cfg.recipe, cfg.sim.task).items():
        if _get(cfg, path) == _get(defaults, path) and _get(cfg, path) != value:
            cfg = _with(cfg, path, value)
            applied[path] = value
    return cfg, applied


def describe(applied: dict[str, Any]) -> str:
    """The settings a recipe took, as command-line options."""
    options = []
    for path, value in applied.items():
        option = "--" + path.replace("_", "-")
        if isinstance(value, bool):
            head, _, last = option.rpartition(".")
            option = option if value else f"{head}.no-{last}" if head else f"--no-{last.lstrip('-')}"
            options.append(option)
        else:
            options.append(f"{option} {value}")
    return " ".join(options)
