"""`vlmrl train --recipe`: named option sets, applied only where the command line kept the default."""

from __future__ import annotations

import dataclasses

import pytest
import tyro

from sim.config import SimConfig
from vlmrl.errors import ConfigError
from vlmrl.recipes import RECIPES, apply_recipe, describe, recipe_settings
from vlmrl.report import recipe_lines
from vlmrl.train_config import TrainConfig


def parse(*args: str) -> TrainConfig:
    return tyro.cli(TrainConfig, args=list(args))


def test_the_deployable_recipe_sets_a_robot_policy_with_per_task_budgets() -> None:
    cfg, applied = apply_recipe(parse("--recipe", "deployable", "--sim.task", "reach"), TrainConfig())
    assert cfg.policy_obs == "robot" and cfg.sim.action_mode == "delta"
    assert cfg.sim.terminate_on_success and cfg.buffer.absorbing_terminal
    assert cfg.asymmetric_critic and cfg.agent.layer_norm and cfg.demo_episodes == 25
    assert cfg.total_steps == 10_000 and cfg.eval_every_steps == 1000  # reach's own budget
    lift, _ = apply_recipe(parse("--recipe", "deployable", "--sim.task", "lift"), TrainConfig())
    assert lift.total_steps == 30_000 and lift.eval_every_steps == 2500
    # What it set is what differs from the defaults, and nothing else.
    assert applied["policy_obs"] == "robot" and "sim.reward" not in applied  # sparse is the default already


def test_options_given_beside_the_recipe_win() -> None:
    given = parse(
        "--recipe", "deployable", "--sim.task", "lift", "--total-steps", "500", "--agent.bc-weight", "0.1"
    )
    cfg, applied = apply_recipe(given, TrainConfig())
    assert cfg.total_steps == 500 and cfg.agent.bc_weight == 0.1
    assert "total_steps" not in applied and "agent.bc_weight" not in applied
    assert cfg.demo_episodes == 25  # the rest of the recipe still applies


def test_the_printed_options_reproduce_the_recipe_on_the_command_line() -> None:
    for name in RECIPES:
        for task in ("reach", "lift", "push", "place"):
            cfg, applied = apply_recipe(parse("--recipe", name, "--sim.task", task), TrainConfig())
            by_hand = parse("--recipe", name, "--sim.task", task, *describe(applied).split())
            assert by_hand == cfg, f"{name} {task}: {describe(applied)}"


def test_no_recipe_changes_nothing_and_unknown_suites_are_refused() -> None:
    cfg = TrainConfig()
    assert apply_recipe(cfg, TrainConfig()) == (cfg, {})
    metaworld = dataclasses.replace(
        cfg, recipe="deployable", sim=SimConfig(suite="metaworld", task="reach-v3")
    )
    with pytest.raises(ConfigError, match="SO-101 twin"):
        apply_recipe(metaworld, TrainConfig())
    with pytest.raises(ConfigError, match="choose one of"):
        recipe_settings("fast", "lift")
    with pytest.raises(SystemExit):
        parse("--recipe", "fast")


def test_the_report_lists_each_setting_with_the_value_used() -> None:
    cfg, _ = apply_recipe(
        parse("--recipe", "deployable", "--sim.task", "push", "--eval-episodes", "5"), TrainConfig()
    )
    (line,) = recipe_lines(cfg)
    assert line.startswith("- recipe: deployable: ")
    assert "`policy_obs=robot`" in line and "`eval_episodes=5` (recipe: 20)" in line
    assert recipe_lines(TrainConfig()) == []
