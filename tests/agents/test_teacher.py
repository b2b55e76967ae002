"""SAC's distillation of a teacher policy (``SAC.set_teacher``, ``--agent.teacher-weight``): the teacher reads a
key only the critics read (a privileged one), and the actor learns to act as it does from its own keys."""

from __future__ import annotations

import dataclasses

import gymnasium as gym
import numpy as np
import pytest
import torch

from agents.config import SACConfig
from agents.errors import AgentError
from agents.sac import SAC
from buffer.batch import Batch

SPEC = {"state": ((3,), np.dtype(np.float32)), "priv": ((3,), np.dtype(np.float32))}
BOX = gym.spaces.Box(-2.0, 2.0, (2,), np.float32)
SMALL = SACConfig(hidden_dims=(32, 32), layer_norm=True, init_alpha=0.01)
BEST_ACTION = np.array([-1.2, 1.0], np.float32)
"""What the bandit's reward pays most for (env units), whatever the observation."""


def teacher(obs: dict[str, torch.Tensor]) -> torch.Tensor:
    """Acts from the privileged key alone, in env units: a different action for every observation."""
    return 1.6 * torch.tanh(obs["priv"][:, :2] * torch.tensor([1.0, -1.0]))


def batch(rng: np.random.Generator, size: int = 64) -> Batch:
    """One-step episodes; ``priv`` carries what ``state`` does (as the sim's state carries what a camera sees)."""
    state = rng.normal(size=(size, 3)).astype(np.float32)
    obs = {"state": state, "priv": state.copy()}
    action = rng.uniform(-2.0, 2.0, (size, 2)).astype(np.float32)
    reward = 1.0 - ((action - BEST_ACTION) ** 2).sum(axis=1).astype(np.float32) / 8
    ones = np.ones(size, np.float32)
    return Batch(obs, action, reward, obs, ones, 0 * ones, ones, np.arange(size, dtype=np.int64))


def train(weight: float, updates: int = 500) -> tuple[float, float, float]:
    """(distance of the actor's actions to the teacher's on fresh observations, to BEST_ACTION, last
    teacher_loss)."""
    sac = SAC(dataclasses.replace(SMALL, teacher_weight=weight), SPEC, BOX, privileged_keys=("priv",))
    sac.set_teacher(teacher, ["priv"])
    rng = np.random.default_rng(0)
    metrics: dict = {}
    for _ in range(updates):
        metrics = sac.update(batch(rng))
    state = rng.normal(size=(256, 3)).astype(np.float32)
    acted = sac.act({"state": state}, deterministic=True)
    taught = teacher({"priv": torch.as_tensor(state)}).numpy()
    to_teacher = float(np.abs(acted - taught).mean())
    to_best = float(np.abs(acted - BEST_ACTION).mean())
    return to_teacher, to_best, float(metrics["teacher_loss"])


def test_the_actor_learns_the_teachers_actions_from_its_own_keys() -> None:
    torch.set_num_threads(1)
    taught_to_teacher, taught_to_best, loss = train(weight=4.0)
    free_to_teacher, free_to_best, free_loss = train(weight=0.0)
    assert (
        taught_to_teacher < 0.25 < free_to_teacher
    )  # the teacher's varying action, not the reward's constant one
    assert free_to_best < taught_to_best
    assert free_loss == 0.0 and 0.0 < loss < 0.1


def test_a_teacher_reading_a_key_the_agent_does_not_read_is_refused() -> None:
    sac = SAC(dataclasses.replace(SMALL, teacher_weight=1.0), {"state": SPEC["state"]}, BOX)
    with pytest.raises(AgentError, match=r"the teacher reads \['priv'\], which the agent does not"):
        sac.set_teacher(teacher, ["priv"])


def test_a_negative_teacher_weight_is_refused() -> None:
    with pytest.raises(AgentError, match="teacher_weight >= 0"):
        SAC(dataclasses.replace(SMALL, teacher_weight=-1.0), SPEC, BOX, privileged_keys=("priv",))
