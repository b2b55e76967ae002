"""`vlmrl train --demo-updates N`: gradient updates on the demonstrations alone before the first env step."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

from agents.config import SACConfig
from sim.config import SimConfig
from tests.agents.test_sac import params, same
from vlmrl.errors import ConfigError
from vlmrl.online.trainer import Trainer
from vlmrl.pipelines.train import main

from .test_train import tiny

PUSH = SimConfig(task="push", action_mode="delta", cameras=(), max_episode_steps=30)


def cloning_run(run_dir, **overrides):
    """Push from the state vector with three demonstrations that the actor clones (the recipe's way)."""
    return tiny(
        run_dir,
        sim=PUSH,
        replay="uniform",
        agent=SACConfig(hidden_dims=(64, 64), layer_norm=True, bc_weight=1.0, bc_q_filter=False),
        demo_episodes=3,
        learning_starts=0,
        **overrides,
    )


def clone_error(trainer: Trainer) -> float:
    """Mean squared gap between the actor's deterministic actions and the expert's, over demonstration rows."""
    batch = trainer.buffer.sample(256, keys=list(trainer.policy_keys))
    actions = trainer.agent.act(batch.obs, deterministic=True)
    return float(np.mean((actions - batch.action) ** 2))


def test_the_actor_clones_the_demonstrations_before_the_first_step(tmp_path) -> None:
    trainer = Trainer.create(cloning_run(tmp_path / "du", demo_updates=400))
    try:
        trainer._add_demonstrations()
        before = clone_error(trainer)
        trainer._update_on_demonstrations()
        assert trainer.agent.num_updates == 400
        assert trainer.state.step == 0 and trainer.state.episode == 0  # no env step spent
        after = clone_error(trainer)
        assert after < 0.5 * before, (before, after)
    finally:
        trainer.env.close()
        trainer.eval_env.close()


def test_a_run_updates_on_its_demonstrations_once_and_a_resume_does_not_again(tmp_path, capsys) -> None:
    run_dir = tmp_path / "run"
    main(cloning_run(run_dir, demo_updates=150, total_steps=60, stop_after_steps=30))
    first = capsys.readouterr().out
    assert (
        "150 updates on the demonstrations (" in first and "buffer rows) before the first env step" in first
    )
    resumed = Trainer.resume(run_dir)
    try:
        updates_at_resume = resumed.agent.num_updates
        assert updates_at_resume >= 150 + 30  # the demonstration updates, then one per step
        resumed.run()
    finally:
        resumed.env.close()
        resumed.eval_env.close()
    assert "updates on the demonstrations" not in capsys.readouterr().out
    assert resumed.agent.num_updates == updates_at_resume + (resumed.state.step - 30)


def test_demonstration_updates_need_demonstrations(tmp_path) -> None:
    with pytest.raises(ConfigError, match="demo_updates 50 needs data to update on: add --demo-episodes N"):
        main(dataclasses.replace(cloning_run(tmp_path / "none", demo_updates=50), demo_episodes=0))
    with pytest.raises(ConfigError, match="demo_updates"):
        main(cloning_run(tmp_path / "neg", demo_updates=-1))


def test_proposals_need_demonstration_updates_and_no_actors(tmp_path) -> None:
    run = cloning_run(tmp_path / "p")
    proposing = dataclasses.replace(run, agent=dataclasses.replace(run.agent, proposals=True))
    with pytest.raises(ConfigError, match=r"agent\.proposals needs --demo-updates N"):
        main(proposing)
    with pytest.raises(ConfigError, match=r"agent\.proposals is not supported with --actors"):
        main(dataclasses.replace(proposing, demo_updates=10, actors=2))


def test_a_proposing_run_freezes_the_clone_its_demonstration_updates_left(tmp_path) -> None:
    run = cloning_run(tmp_path / "ibrl", demo_updates=100)
    trainer = Trainer.create(dataclasses.replace(run, agent=dataclasses.replace(run.agent, proposals=True)))
    try:
        trainer._add_demonstrations()
        trainer._update_on_demonstrations()
        assert trainer.agent.proposer is not None
        assert same(params(trainer.agent.proposer[1]), params(trainer.agent.actor))
    finally:
        trainer.env.close()
        trainer.eval_env.close()
