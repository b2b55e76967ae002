"""`vlmrl train --recipe`: a named option set that replaces the defaults; options given beside it win."""

from __future__ import annotations

import dataclasses

import pytest
import tyro

from sim.config import SimConfig
from vlmrl.cli import main as cli_main
from vlmrl.errors import ConfigError
from vlmrl.online.config import TrainConfig
from vlmrl.online.recipes import RECIPES, describe, overridden, recipe_changes, recipe_config, recipe_settings
from vlmrl.online.report import recipe_lines
from vlmrl.pipelines.train import Config, cli_default


def parse(*args: str) -> TrainConfig:
    """What `vlmrl train ARGS` parses to (the CLI's two steps)."""
    return tyro.cli(Config, args=list(args), default=cli_default(list(args)))


def test_the_deployable_recipe_sets_a_robot_policy_with_per_task_budgets() -> None:
    cfg = parse("--recipe", "deployable", "--sim.task", "reach")
    assert cfg.recipe == "deployable" and cfg.sim.task == "reach"
    assert cfg.policy_obs == "robot" and cfg.sim.action_mode == "delta"
    assert cfg.sim.terminate_on_success and cfg.buffer.absorbing_terminal  # reach ends at success
    assert cfg.asymmetric_critic and cfg.agent.layer_norm and cfg.demo_episodes == 25
    assert cfg.total_steps == 10_000 and cfg.eval_every_steps == 1000  # reach's own budget
    lift = parse("--recipe", "deployable", "--sim.task", "lift")
    assert lift.total_steps == 30_000 and lift.eval_every_steps == 2500
    assert (
        not lift.sim.terminate_on_success and not lift.buffer.absorbing_terminal
    )  # a held lift keeps paying
    assert overridden(lift) == {} and lift.demo_episodes == 25
    assert lift.sim.action_mode == "ee_delta"  # lift and place move the tool (results/deployable, section 11)
    place = parse("--recipe", "deployable", "--sim.task", "place")
    assert lift.agent.pixel.standardize and not place.agent.pixel.standardize  # section 15: lift only, so far
    assert place.sim.action_mode == "ee_delta" and place.demo_episodes == 100  # section 13
    # Section 16: place decays its learning rates, lift does not.
    assert place.agent.lr_final_fraction == 0.1 and lift.agent.lr_final_fraction == 1.0
    push = parse("--recipe", "deployable", "--sim.task", "push")
    assert push.demo_episodes == 100 and overridden(push) == {}  # push's own demonstrations
    assert push.sim.action_mode == "delta"
    # Section 34: push reads its joint targets, starts from its demonstrations' clone, clones through the encoder.
    assert push.sim.observe_targets and not lift.sim.observe_targets
    assert push.demo_updates == 5000 and push.learning_starts == 0 and lift.demo_updates == 0
    assert push.agent.bc_weight == 1.0 and push.agent.actor_trains_encoder and lift.agent.bc_weight == 0.4
    # What it changes is what differs from the defaults, and nothing else.
    changes = recipe_changes(lift, TrainConfig())
    assert changes["policy_obs"] == "robot" and "sim.reward" not in changes  # sparse is the default already


def test_options_given_beside_the_recipe_win_even_the_plain_defaults() -> None:
    cfg = parse(
        "--recipe", "deployable", "--sim.task", "lift", "--total-steps", "500", "--agent.bc-weight", "0.1",
        "--sim.terminate-on-success", "--policy-obs", "state",
    )  # fmt: skip
    assert cfg.total_steps == 500 and cfg.agent.bc_weight == 0.1
    assert cfg.sim.terminate_on_success and cfg.policy_obs == "state"  # the plain defaults, given
    assert cfg.demo_episodes == 25  # the rest of the recipe still applies
    assert overridden(cfg) == {
        "total_steps": 500,
        "agent.bc_weight": 0.1,
        "sim.terminate_on_success": True,
        "policy_obs": "state",
    }


def test_the_printed_options_reproduce_the_recipe_without_it() -> None:
    for name in RECIPES:
        for task in ("reach", "lift", "push", "place"):
            cfg = parse("--recipe", name, "--sim.task", task)
            by_hand = parse("--sim.task", task, *describe(recipe_changes(cfg, TrainConfig())).split())
            assert dataclasses.replace(by_hand, recipe=name) == cfg, f"{name} {task}"
            assert recipe_config(name, task, TrainConfig()) == cfg  # the Python API's way


def test_no_recipe_changes_nothing_and_other_suites_are_refused() -> None:
    assert parse() == TrainConfig() and cli_default([]) is None
    assert recipe_changes(TrainConfig(), TrainConfig()) == {}
    metaworld = TrainConfig(sim=SimConfig(suite="metaworld", task="reach-v3"))
    with pytest.raises(ConfigError, match="SO-101 twin"):
        recipe_config("deployable", "reach-v3", metaworld)
    with pytest.raises(ConfigError, match="choose one of"):
        recipe_settings("fast", "lift")
    with pytest.raises(SystemExit):
        parse("--recipe", "fast")


def test_the_cli_refuses_a_recipe_on_another_suite_in_one_line(capsys) -> None:
    code = cli_main(["train", "--recipe", "deployable", "--sim.suite", "metaworld", "--sim.task", "reach-v3"])
    err = capsys.readouterr().err.strip().splitlines()
    assert code == 1 and err == [
        "vlmrl train: error: recipe 'deployable' is for the SO-101 twin (--sim.suite so101), not 'metaworld'"
    ]


def test_the_report_lists_each_setting_with_the_value_used() -> None:
    cfg = parse("--recipe", "deployable", "--sim.task", "push", "--eval-episodes", "5")
    (line,) = recipe_lines(cfg)
    assert line.startswith("- recipe: deployable: ")
    assert "`policy_obs=robot`" in line and "`eval_episodes=5` (recipe: 20)" in line
    assert recipe_lines(TrainConfig()) == []
