"""Named training recipes: `vlmrl train --recipe NAME` sets a measured combination of options at once.

A recipe is a table of ``TrainConfig`` fields (dotted paths such as ``agent.layer_norm``) and their values,
with per-task budgets. On the command line it replaces ``vlmrl train``'s defaults (``vlmrl.pipelines.train.cli_default``), so
any option given beside ``--recipe`` wins, even one that names the plain default. What the recipe set and
what was given instead are printed when the run starts and listed in the run's report; ``config.json`` holds
the resolved config as always. From Python: ``recipe_config("deployable", "lift", TrainConfig())``.

Each recipe's measured results are in docs/deployable.md and ``results/deployable/``.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal

from vlmrl.errors import ConfigError

TrainConfig = Any
"""``vlmrl.online.config.TrainConfig`` (not imported: it imports ``RecipeName`` from here)."""


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
        "a policy a real SO-101 runs (joints + front camera, push also its last joint targets; joint-delta actions, "
        "end-effector ones for lift and place), learned with scripted demonstrations (25; push and place 100) and a "
        "sparse reward"
    ),
    settings={
        "policy_obs": "robot",
        "sim.action_mode": "delta",
        "sim.reward": "sparse",
        # Lift, push and place: episodes run on after success, so a held success keeps paying; ending them at
        # the first success step let lift policies snatch the cube (70% and 50% at 30k steps against 75%
        # and 75% on the same seeds; docs/ARCHITECTURE.md, "Episodes that end at success").
        "sim.terminate_on_success": False,
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
        # Reach ends at success, valued as held for ever (the absorbing terminal): without it a sparse success
        # that ends the episode is worth less than the entropy bonus of staying alive (50% against 80% at 10k).
        "reach": {
            "total_steps": 10_000,
            "eval_every_steps": 1000,
            "sim.terminate_on_success": True,
            "buffer.absorbing_terminal": True,
        },
        # Lift and place move the tool, not the joints: end-effector actions (the twin's IK turns them into joint
        # targets; deploy and finetune the same on the host) took lift from 55% to 84% and place from 17% to 70%
        # over seeds 0-4 (p = 0.009 and 5e-5; 85% and 61% on 100 fresh seeds); reach and push did not gain
        # (92% and 61% against 97% and 70%; results/deployable, section 11).
        # Lift also standardises its policy images (per channel centred, divided by their deviation): the same 89%
        # on the twin over seeds 0-4 (90% against 86% on 100 fresh seeds, p = 0.15), and 53% against 17% on the
        # twin's units a-e (p = 0.0003): the units' light (x0.92 on unit a) alone took the policy from 95% to 5%
        # (results/deployable, section 15). Not yet measured on place.
        "lift": {"total_steps": 30_000, "sim.action_mode": "ee_delta", "agent.pixel.standardize": True},
        # Push from 25 demonstrations ended at 30% and 25% (23% and 21% on 100 fresh seeds); from 100, at 45,
        # 60 and 70% (seeds 0-2; 60% and 44% on fresh seeds), and the state learner rose from 40% to 60-70% the
        # same way (results/deployable, section 6); 200 did not add more (section 13), nor an expert that pushes
        # on to the zone's centre, nor demonstrations cut after the success (section 14), nor a learning-rate
        # decay, ending at success, 64 px policy images or ten critics (section 16), nor the levers of sections
        # 17-25 and 28-32 (potential shaping, finer steps, a 2 cm reward, the wrist camera, three-step returns,
        # harder cloning, noisy demonstrations, wider networks, larger batches, fewer demonstrations per batch, a
        # curriculum from short pushes, jump starts and takeovers by the expert, harder cloning through the
        # encoder, IBRL's proposals after updates on the demonstrations): push stayed at about 60% on fresh seeds
        # (67% at best, section 29); from the state vector the same learner ended at 59.5-77% (sections 26-31).
        # Lift keeps 25 (seeds 0-4 at 69% against 67% with 100, p = 0.78; section 7).
        # Push reads its joint targets (the expert's deltas depend on them, and in a push they run ahead of the joints
        # the cube holds back), starts from 5,000 updates on its demonstrations and clones them at weight 1.0 through
        # the encoder: 80, 80% on seeds 0-1 and 79% on 200 fresh episodes against the recipe's 63% (p = 0.0004);
        # over seeds 0-4, 80% +- 6% final (70% +- 14% before), 7.3 points from the best, 78.6% on 500 fresh
        # episodes against 60.4% (p = 4e-10; results/deployable, sections 31-34).
        "push": {
            "total_steps": 30_000,
            "demo_episodes": 100,
            "sim.observe_targets": True,
            "demo_updates": 5_000,
            "learning_starts": 0,
            "agent.bc_weight": 1.0,
            "agent.actor_trains_encoder": True,
        },
        # Place with end-effector actions and 100 demonstrations: 85% against 70% with 25 over seeds 0-4
        # (p = 0.043; 79% against 61% on 100 fresh seeds, p = 0.049; section 13). With joint deltas 100 had
        # not helped (section 7): the grasp was the limit then. Place also lowers its actor's and critics' learning
        # rates linearly to 0.1 of their start over the run: the same final success (86% against 85%, seeds 0-4),
        # best minus the last three evaluations 9 points against 15 (p = 0.29), 85% against 79% on 100 fresh
        # seeds each (500 episodes pooled, p = 0.009; section 16). On push it did not help (section 16).
        "place": {
            "total_steps": 30_000,
            "sim.action_mode": "ee_delta",
            "demo_episodes": 100,
            "agent.lr_final_fraction": 0.1,
        },
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


def with_setting(obj: Any, path: str, value: Any) -> Any:
    """``obj`` (nested dataclasses) with its dotted field ``path`` set to ``value``."""
    head, _, rest = path.partition(".")
    if not rest:
        return dataclasses.replace(obj, **{head: value})
    return dataclasses.replace(obj, **{head: with_setting(getattr(obj, head), rest, value)})


def recipe_settings(name: str, task: str) -> dict[str, Any]:
    """The settings recipe ``name`` makes for twin task ``task`` (its per-task values win)."""
    if name not in RECIPES:
        raise ConfigError(f"recipe {name!r}: choose one of none, {', '.join(RECIPES)}")
    recipe = RECIPES[name]
    return {**recipe.settings, **recipe.task_settings.get(task, {})}


def recipe_config(name: str, task: str, base: TrainConfig) -> TrainConfig:
    """``base`` with twin task ``task`` and recipe ``name``'s settings for it (what `vlmrl train --recipe NAME
    --sim.task TASK` starts from before the other options apply; the Python API's way to use a recipe)."""
    if base.sim.suite != "so101":
        raise ConfigError(
            f"recipe {name!r} is for the SO-101 twin (--sim.suite so101), not {base.sim.suite!r}"
        )
    cfg = dataclasses.replace(base, recipe=name, sim=dataclasses.replace(base.sim, task=task))
    for path, value in recipe_settings(name, task).items():
        cfg = with_setting(cfg, path, value)
    return cfg


def recipe_changes(cfg: TrainConfig, defaults: TrainConfig) -> dict[str, Any]:
    """The settings of ``cfg``'s recipe that differ from ``defaults`` (what the recipe changes)."""
    if cfg.recipe == "none":
        return {}
    return {
        path: value
        for path, value in recipe_settings(cfg.recipe, cfg.sim.task).items()
        if _get(defaults, path) != value
    }


def overridden(cfg: TrainConfig) -> dict[str, Any]:
    """The settings of ``cfg``'s recipe that ``cfg`` does not follow (options given beside ``--recipe``):
    path -> the value used."""
    if cfg.recipe == "none":
        return {}
    return {
        path: _get(cfg, path)
        for path, value in recipe_settings(cfg.recipe, cfg.sim.task).items()
        if _get(cfg, path) != value
    }


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
