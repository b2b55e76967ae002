"""benchmarks/gpu_paths.py builds the deployable lift learner without the twin: its spec and config must be
what `vlmrl train --recipe deployable --sim.task lift` hands the agent, or its GPU figures describe another
learner."""

import dataclasses
import sys

import gpu_paths
import numpy as np
import pytest
import torch

from robot.contract import PIXELS_PREFIX, STATE_KEY, env_spec
from sim import make_env
from vlmrl.online.config import TrainConfig
from vlmrl.online.recipes import recipe_config
from vlmrl.online.trainer import policy_keys


def test_the_spec_is_what_the_trainer_hands_the_deployable_lift_agent():
    cfg = recipe_config("deployable", "lift", TrainConfig())
    env = make_env(cfg.sim)
    try:
        full = env_spec(env).obs_spec()
        keys = [*policy_keys(cfg.policy_obs, [PIXELS_PREFIX + c for c in cfg.sim.cameras]), STATE_KEY]
        assert {k: (tuple(full[k][0]), str(np.dtype(full[k][1]))) for k in keys} == gpu_paths.LIFT_SPEC
        assert env.action_space.shape == (gpu_paths.ACTION_DIM,)
    finally:
        env.close()


def test_the_agent_config_is_the_recipes():
    recipe = recipe_config("deployable", "lift", TrainConfig()).agent
    assert gpu_paths.deployable_agent_config("cpu") == dataclasses.replace(recipe, device="cpu")


def test_an_update_runs_on_the_batch_it_builds():
    torch.set_num_threads(1)
    batch = gpu_paths.random_batch(16, 0)
    assert batch.obs["pixels/front"].shape == (16, 64, 64, 3) and batch.prior.sum() == 8
    metrics = gpu_paths.deployable_agent("cpu").update(batch)
    assert np.isfinite(metrics["critic_loss"]) and metrics["bc_loss"] > 0  # the prior half is cloned
    assert metrics["privileged_aux_loss"] > 0  # the critics' privileged state reached the auxiliary head


def test_flat_names_nested_figures_by_their_path():
    assert gpu_paths.flat({"gpu": "x", "sac": {"batch_256": {"gpu_updates_per_s": 1.0}}}) == {
        "gpu": "x",
        "sac_batch_256_gpu_updates_per_s": 1.0,
    }


def test_without_a_gpu_it_refuses_in_one_line(monkeypatch, tmp_path):
    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    monkeypatch.setattr(sys, "argv", ["gpu_paths.py", "--json", str(tmp_path / "g.json")])
    with pytest.raises(SystemExit, match="no CUDA GPU is visible"):
        gpu_paths.main()
    assert not (tmp_path / "g.json").exists()
