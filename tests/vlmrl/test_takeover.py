"""`vlmrl train --takeover-stall-steps`: the scripted expert takes over training episodes whose policy stalls."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

from sim.config import SimConfig
from sim.experts import make_expert
from vlmrl.errors import ConfigError
from vlmrl.online.trainer import Trainer
from vlmrl.pipelines.train import main

from .test_train import tiny

PUSH = SimConfig(task="push", action_mode="delta", cameras=(), max_episode_steps=60)


def takeover_run(tmp_path, **overrides):
    base = tiny(tmp_path / "tk", sim=PUSH, replay="uniform", demo_episodes=2, takeover_stall_steps=5)
    cfg = dataclasses.replace(
        base,
        agent=dataclasses.replace(base.agent, bc_weight=0.4),
        buffer=dataclasses.replace(base.buffer, prior_info_key="intervention"),
        **overrides,
    )
    return Trainer.create(cfg)


def test_a_stalled_policy_is_taken_over_and_its_takeover_joins_the_demonstrations(tmp_path) -> None:
    trainer = takeover_run(tmp_path)
    try:
        trainer._add_demonstrations()
        source, sampler = trainer.episode_source(), trainer.buffer.sampler
        prior_before, _ = sampler.counts
        still = source.collect(0, lambda obs: np.zeros(6, np.float32), lambda: None)
        # Five still steps, then the expert drives to the end and pushes the cube in.
        assert still["takeovers"] == 1 and still["interventions"] == still["length"] - 5
        assert still["success"] == 1
        prior_after, online = sampler.counts
        assert prior_after - prior_before == still["interventions"]  # its steps are prior rows, cloned
        assert online == 5  # the policy's own steps stay online

        rng = np.random.default_rng(0)
        moving = source.collect(1, lambda obs: rng.uniform(-1, 1, 6).astype(np.float32), lambda: None)
        assert moving["takeovers"] == 0 and moving["interventions"] == 0  # a moving arm is not taken over
    finally:
        trainer.env.close()
        trainer.eval_env.close()


def test_no_takeover_once_the_task_holds(tmp_path) -> None:
    """A policy that stops in success is left alone (the expert would push the cube on)."""
    trainer = takeover_run(tmp_path, sim=dataclasses.replace(PUSH, terminate_on_success=False))
    try:
        trainer._add_demonstrations()
        source = trainer.episode_source()
        expert = make_expert(trainer.env)  # the policy here: it pushes the cube in, then stands still

        def expert_policy(obs):
            if source.takeover.tool and len(source.takeover.tool) == 1:
                expert.reset()  # a new episode
            return expert.act(obs)

        stats = source.collect(0, expert_policy, lambda: None)
        assert stats["success"] == 1 and stats["takeovers"] == 0  # it stood still in the zone, not stalled
    finally:
        trainer.env.close()
        trainer.eval_env.close()


def test_takeovers_are_refused_off_the_twin_with_actors_and_with_a_one_step_window(tmp_path) -> None:
    with pytest.raises(ConfigError, match="takeover_stall_steps watches the SO-101 twin's tool"):
        main(
            tiny(
                tmp_path / "rs",
                sim=dataclasses.replace(PUSH, suite="robosuite", task="Lift"),
                takeover_stall_steps=5,
            )
        )
    with pytest.raises(ConfigError, match="takeover_stall_steps is not supported with --actors"):
        main(tiny(tmp_path / "actors", sim=PUSH, takeover_stall_steps=5, actors=2))
    with pytest.raises(ConfigError, match=r"takeover_stall_steps must be 0 \(off\) or >= 2"):
        main(tiny(tmp_path / "one", sim=PUSH, takeover_stall_steps=1))
    with pytest.raises(ConfigError, match="takeover_stall_m must be > 0"):
        main(tiny(tmp_path / "m0", sim=PUSH, takeover_stall_steps=5, takeover_stall_m=0.0))
