"""The twin's task table: every task owns its description and scripted strategy, the CLI choices and the
prompts derive from it, and a task written in one new file joins through one table entry."""

from __future__ import annotations

import importlib.util
import sys
import textwrap
from pathlib import Path
from typing import get_args

import pytest

from sim import SimConfig, make_env
from sim.errors import SimError
from sim.so101.scripted import STRATEGIES, ScriptedPolicy
from sim.so101.tasks import TASKS, TaskName
from vlm.prompts import scorer_prompt

NEW_TASK_FILE = '''
"""A task written as a contributor would: one file, using the twin's public task helpers."""

import numpy as np

from sim.so101.kinematics import inverse_kinematics
from sim.so101.tasks import ReachTask


class HighReachTask(ReachTask):
    """Reach a marker high above the table."""

    description = "Raise the robot gripper to the small green ball high above the table."
    default_max_steps = 60
    scripted_strategy = "move_to_goal"

    def reset(self, sim, rng):
        super().reset(sim, rng)
        while True:
            target = rng.uniform([0.14, -0.08, 0.14], [0.2, 0.08, 0.18])
            if inverse_kinematics(target, pitch_deg=60.0) is not None:
                break
        self._target = target
        sim.set_marker("target", target)
'''


def _import_file(path: Path, name: str):
    spec = importlib.util.spec_from_file_location(name, path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


def test_every_task_owns_a_description_and_a_known_strategy_and_the_cli_choices_are_the_table():
    assert set(get_args(TaskName)) == set(TASKS)
    for name, make in TASKS.items():
        task = make()
        assert task.description.strip().endswith("."), name
        assert task.scripted_strategy in STRATEGIES, name
        assert task.default_max_steps > 0


def test_a_task_in_one_new_file_joins_through_the_table(tmp_path, monkeypatch):
    path = tmp_path / "high_reach_task.py"
    path.write_text(textwrap.dedent(NEW_TASK_FILE))
    module = _import_file(path, "high_reach_task")
    monkeypatch.delitem(sys.modules, "high_reach_task")
    monkeypatch.setitem(TASKS, "high_reach", module.HighReachTask)

    env = make_env(SimConfig(task="high_reach", cameras=(), reward="sparse"))
    try:
        assert env.unwrapped.max_episode_steps == 60
        description = env.unwrapped.task_description
        assert description == module.HighReachTask.description
        assert "raise the robot gripper to the small green ball high above the table" in scorer_prompt(
            description
        )
        policy = ScriptedPolicy(env)
        obs, info = env.reset(seed=1)
        policy.reset()
        for _ in range(env.unwrapped.max_episode_steps):
            obs, _, terminated, truncated, info = env.step(policy.act(obs))
            if terminated or truncated:
                break
        assert info["success"] and env.unwrapped.task.goal()[2] >= 0.14
    finally:
        env.close()


def test_a_task_naming_an_unknown_strategy_is_refused_in_one_line(monkeypatch):
    class Confused(TASKS["reach"]):  # type: ignore[misc,valid-type]
        scripted_strategy = "juggle"

    monkeypatch.setitem(TASKS, "confused", Confused)
    env = make_env(SimConfig(task="confused", cameras=()))
    try:
        with pytest.raises(SimError, match="scripted_strategy 'juggle' unknown"):
            ScriptedPolicy(env)
    finally:
        env.close()
