"""`vlmrl train --reward-program FILE`: the CaR reward in training, the report's sub-task curve, refusals."""

import dataclasses
import json
from pathlib import Path

import pytest

from agents.config import SACConfig
from buffer.config import BufferConfig
from sim.config import SimConfig
from vlm.reward_program import load_program, save_program
from vlmrl.errors import ConfigError
from vlmrl.online.config import TrainConfig
from vlmrl.pipelines.train import main

LIFT = Path(__file__).resolve().parents[2] / "examples" / "reward_programs" / "lift.json"


def tiny_lift(run_dir: Path, program: Path, **overrides) -> TrainConfig:
    """A few hundred state-only lift steps with 2 demonstrations, small nets, uniform replay."""
    cfg = TrainConfig(
        sim=SimConfig(
            task="lift", action_mode="delta", cameras=(), terminate_on_success=False, max_episode_steps=50
        ),
        agent=SACConfig(hidden_dims=(16, 16)),
        buffer=BufferConfig(capacity_steps=2_000),
        replay="uniform",
        total_steps=200,
        learning_starts=100,
        batch_size=16,
        eval_every_steps=100,
        eval_episodes=1,
        video_episodes=0,
        checkpoint_every_steps=10_000,
        demo_episodes=2,
        run_dir=str(run_dir),
        progress=False,
        reward_program=program,
    )
    return dataclasses.replace(cfg, **overrides)


def test_training_with_a_reward_program_reports_the_subtask_curve(tmp_path):
    run = tmp_path / "run"
    assert main(tiny_lift(run, LIFT)) == 0
    report = (run / "report.md").read_text()
    assert "## Code-as-Reward sub-task completion" in report and "1. reach | 2. grasp | 3. lift" in report
    assert "hand-written by a person" in report
    assert (run / "car_subtasks.png").stat().st_size > 0
    assert load_program(run / "reward_program.json").subtasks == load_program(LIFT).subtasks
    config = json.loads((run / "config.json").read_text())
    assert config["reward_program"] == str(LIFT) and config["reward_program_mode"] == "add"


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"status": "failed verification"}, "reward-program verify"),
        ({"task": "reach"}, "is for task 'reach'"),
    ],
)
def test_unusable_programs_are_refused_before_anything_is_written(tmp_path, change, message):
    program = dataclasses.replace(load_program(LIFT), **change)
    path = save_program(program, tmp_path / "program.json")
    run = tmp_path / "run"
    with pytest.raises(ConfigError, match=message):
        main(tiny_lift(run, path))
    assert not run.exists()


def test_bad_mode_is_refused(tmp_path):
    with pytest.raises(ConfigError, match="reward_program_mode"):
        main(tiny_lift(tmp_path / "run", LIFT, reward_program_mode="double"))
