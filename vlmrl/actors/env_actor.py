"""An env actor of `vlmrl train --actors N`: one env and a CPU copy of the policy, in its own process.

Plain Python (no Ray import): ``vlmrl.actors.ray_source`` runs it as a Ray actor. Each call runs one whole
episode with the policy version it was sent and returns the episode as arrays in ``ReplayBuffer.add_episode``
form, so the learner stays the buffer's only writer. Episode e resets with seed ``seed_base + e`` and
draws its stochastic actions from a generator seeded with e, as the single-process loop seeds its episodes.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

POLICY_VERSION_KEY = "policy_version"
"""Info key (``info/policy_version`` column) of the learner's update count the acting policy came from;
-1: random warm-up actions or a scripted demonstration."""


@dataclass(frozen=True)
class PolicySpec:
    """What an actor needs to build the same actor network as the learner's SAC (weights come later)."""

    agent_cfg: Any
    """The learner's ``SACConfig`` (its seed included)."""
    obs_spec: dict[str, Any]
    """Key -> (shape, dtype) the agent reads (privileged keys included, as the learner built it)."""
    privileged_keys: tuple[str, ...]
    """Keys only the critic reads."""
    policy_keys: tuple[str, ...]
    """Keys the actor reads from an observation."""
    estimate_dim: int | None = None
    """``SAC``'s ``estimate_dim``: a robot-side agent whose actor reads a state estimate."""


def policy_weights(agent: Any) -> dict[str, Any]:
    """The parts of a SAC that acting needs (encoder with its normalisers, actor), as CPU tensors."""
    return {
        "encoder": {k: v.detach().cpu() for k, v in agent.encoder.state_dict().items()},
        "actor": {k: v.detach().cpu() for k, v in agent.actor.state_dict().items()},
    }


class EnvActor:
    """One env and a policy copy (CPU, one torch thread).

    Args:
        make_env: builds the env (``sim.make_env`` of the run's SimConfig, or the Python API's factory).
        sim_cfg: what ``make_env`` is called with.
        policy: how to build the policy network.
        stored_keys: observation keys stored per step.
        seed_base: episode e resets with seed ``seed_base + e``.
    """

    def __init__(
        self,
        make_env: Callable[[Any], Any],
        sim_cfg: Any,
        policy: PolicySpec,
        stored_keys: Sequence[str],
        seed_base: int,
    ) -> None:
        import torch

        torch.set_num_threads(1)  # one core per actor: more threads per process is slower on shared cores
        os.environ.setdefault("MUJOCO_GL", "egl")
        os.environ.setdefault(
            "LP_NUM_THREADS", "1"
        )  # Mesa llvmpipe (no GPU): render on this actor's core only
        from agents.sac import SAC

        self.env = make_env(sim_cfg)
        self.agent = SAC(
            policy.agent_cfg,
            policy.obs_spec,
            self.env.action_space,
            policy.privileged_keys,
            policy.estimate_dim,
        )
        self.policy_keys, self.stored_keys = list(policy.policy_keys), list(stored_keys)
        self.seed_base = seed_base
        self.version = -1

    def pid(self) -> int:
        """This actor's process id (the fault tests kill it)."""
        return os.getpid()

    def load_weights(self, weights: dict[str, Any], version: int) -> None:
        """Take the learner's policy (``policy_weights``) at update count ``version``."""
        self.agent.encoder.load_state_dict(weights["encoder"])
        self.agent.actor.load_state_dict(weights["actor"])
        self.version = version

    def run_episode(
        self, episode: int, random_actions: bool, weights: list[Any], version: int
    ) -> dict[str, Any]:
        """Run episode ``episode`` and return it: ``obs`` (key -> T + 1 rows), ``action``, ``reward``,
        ``terminated``, ``truncated`` (T rows), ``info`` (key -> T + 1 rows, ``policy_version`` included),
        ``stats`` (return, length, success) and ``episode``.

        Args:
            episode: the episode's index (its reset seed and action generator follow from it).
            random_actions: act uniformly at random (the learner's warm-up) instead of with the policy.
            weights: ``[ObjectRef]`` of the current ``policy_weights`` (a list, so Ray does not fetch
                it on every call: it is read only when ``version`` is new to this actor).
            version: the learner's update count those weights come from.
        """
        if not random_actions and version != self.version:
            import ray

            self.load_weights(ray.get(weights[0]), version)
        acted_with = -1 if random_actions else self.version
        rng = np.random.default_rng([self.seed_base, episode])
        self.agent.generator.manual_seed(self.seed_base * 7919 + episode)
        space = self.env.action_space
        obs, info = self.env.reset(seed=self.seed_base + episode)
        frames: dict[str, list[np.ndarray]] = {k: [obs[k]] for k in self.stored_keys}
        actions, rewards, terminated, truncated = [], [], [], []
        success, progress = [float(info.get("success", 0.0))], [float(info.get("progress", 0.0))]
        while True:
            if random_actions:
                action = rng.uniform(space.low, space.high).astype(np.float32)
            else:
                action = self.agent.act({k: obs[k] for k in self.policy_keys})
            obs, reward, term, trunc, info = self.env.step(action)
            for k in self.stored_keys:
                frames[k].append(obs[k])
            actions.append(action)
            rewards.append(float(reward))
            terminated.append(bool(term))
            truncated.append(bool(trunc))
            success.append(float(info["success"]))
            progress.append(float(info.get("progress", 0.0)))
            if term or trunc:
                break
        # The buffer's info rows describe each observation; row 0 borrows the first step's (EpisodeRecorder).
        success[0], progress[0] = success[1], progress[1]
        length = len(actions)
        return {
            "episode": episode,
            "obs": {k: np.stack(v) for k, v in frames.items()},
            "action": np.stack(actions).astype(np.float32),
            "reward": np.asarray(rewards, np.float32),
            "terminated": np.asarray(terminated, np.bool_),
            "truncated": np.asarray(truncated, np.bool_),
            "info": {
                "success": np.asarray(success, np.float32),
                "progress": np.asarray(progress, np.float32),
                POLICY_VERSION_KEY: np.full(length + 1, acted_with, np.float32),
            },
            "stats": {
                "return": float(np.sum(rewards)),
                "length": float(length),
                "success": float(max(success)),
            },
        }
