"""A robot actor of `vlmrl finetune --actors N`: one arm (a real LeRobot arm or its twin) in its own process.

Plain Python (no Ray import at module level): ``vlmrl.actors.ray_source.ActorEpisodes`` runs it as a Ray actor, as
it runs ``vlmrl.actors.env_actor.EnvActor`` for `vlmrl train`. Each actor owns a ``LeRobotEnv`` (so its own safety
layer and watchdog), its own operator keys and teleop, and a CPU copy of the policy; it runs whole
episodes with ``vlmrl.loop.sources.RobotEpisodes`` (the loop of the single-arm finetune: takeovers, what the
arm was really sent is stored) and returns them as ``ReplayBuffer.add_episode`` arrays with
``info/policy_version``, so the learner stays the buffer's only writer.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np

from robot.contract import env_spec
from vlmrl.actors.env_actor import POLICY_VERSION_KEY, PolicySpec
from vlmrl.loop.arm_actions import ActionConverter
from vlmrl.loop.sources import ROBOT_INFO_KEYS, RobotEpisodes


@dataclass
class RobotKit:
    """What one actor drives: the env (``LeRobotEnv``), the operator's keys and the teleop of takeovers."""

    env: Any
    keys: Any
    teleop: Any


@dataclass(frozen=True)
class RobotSide:
    """What the learner needs to know of the arms' envs (read from the first actor's)."""

    obs_spec: dict[str, tuple[tuple[int, ...], Any]]
    action_dim: int
    action_keys: tuple[str, ...]
    cameras: tuple[str, ...]
    task_description: str


def describe_env(env: Any) -> RobotSide:
    """The ``RobotSide`` of a ``LeRobotEnv``."""
    spec = env_spec(env)
    return RobotSide(
        obs_spec=dict(spec.obs_spec()),
        action_dim=int(spec.action_shape[0]),
        action_keys=tuple(env.action_keys),
        cameras=tuple(spec.cameras),
        task_description=str(spec.task_description),
    )


class _EpisodeArrays:
    """Collects ``add_step`` calls (the buffer's interface, as ``RobotEpisodes`` makes them) into the arrays of
    ``ReplayBuffer.add_episode``: T + 1 observation and info rows (info row 0 borrows the first step's,
    as ``buffer.episode.EpisodeRecorder`` does), T step rows."""

    def __init__(self) -> None:
        self.obs: dict[str, list[np.ndarray]] = {}
        self.steps: dict[str, list[Any]] = {"action": [], "reward": [], "terminated": [], "truncated": []}
        self.info: dict[str, list[float]] = {}

    def add_step(self, obs, action, reward, terminated, truncated, info, next_obs) -> None:
        if not self.obs:
            self.obs = {k: [np.asarray(v)] for k, v in obs.items()}
            self.info = {k: [float(v)] for k, v in info.items()}
        for k in self.obs:
            self.obs[k].append(np.asarray(next_obs[k]))
        for name, value in zip(self.steps, (action, reward, terminated, truncated)):
            self.steps[name].append(value)
        for k in self.info:
            self.info[k].append(float(info[k]))

    def arrays(self, version: int) -> dict[str, Any]:
        length = len(self.steps["action"])
        info = {k: np.asarray(v, np.float32) for k, v in self.info.items()}
        return {
            "obs": {k: np.stack(v) for k, v in self.obs.items()},
            "action": np.stack(self.steps["action"]).astype(np.float32),
            "reward": np.asarray(self.steps["reward"], np.float32),
            "terminated": np.asarray(self.steps["terminated"], np.bool_),
            "truncated": np.asarray(self.steps["truncated"], np.bool_),
            "info": info | {POLICY_VERSION_KEY: np.full(length + 1, version, np.float32)},
        }


class RobotActor:
    """One arm's env, operator and policy copy (CPU, one torch thread); the Ray actor of `finetune --actors`.

    ``close`` runs in its own Ray concurrency group (``CLOSE_GROUP``) beside the episode in progress: it
    ends that episode at its next step (a truncation, as the operator's reset key does), then releases
    the arm, so stopping a run never leaves an arm mid-episode or waits for the episodes queued after it.

    Args:
        make_kit: builds the arm's ``RobotKit`` from ``arm_cfg`` (in this process: the arm's serial port
            and cameras belong to it); a ConfigError it raises stops the run with one line.
        arm_cfg: what ``make_kit`` is called with (this arm's config).
        policy: how to build the policy network (``policy.agent_cfg``, ``obs_spec``, ``policy_keys``).
        stored_keys: unused (every observation key of a robot episode is stored); kept for the call of
            ``ActorEpisodes``, which builds every actor kind alike.
        seed_base: episode e resets with seed ``seed_base + e`` (the twin places its objects from it).
        action_space: the action space the policy was trained in (its bounds scale the actor's output);
            None: the env's.
        convert: a joint-delta or end-effector policy's converter (``vlmrl.loop.arm_actions``,
            ``vlmrl.loop.sources.RobotEpisodes``): its actions go to the arm as targets and are stored back as
            the moves applied; None: joint targets.
        store_action: ``RobotEpisodes``' (``vlmrl finetune --store-action``).
    """

    CLOSE_GROUP = "control"
    """Ray concurrency group of ``close`` (``ActorEpisodes`` creates the actor with it)."""

    def __init__(
        self,
        make_kit: Callable[[Any], RobotKit],
        arm_cfg: Any,
        policy: PolicySpec,
        stored_keys: Any,
        seed_base: int,
        action_space: Any = None,
        convert: ActionConverter | None = None,
        store_action: str = "sent",
    ) -> None:
        import torch

        torch.set_num_threads(1)  # one core per actor: the control loop must not wait for a busy core
        os.environ.setdefault("MUJOCO_GL", "egl")
        os.environ.setdefault("LP_NUM_THREADS", "1")
        from agents.sac import SAC

        self.kit = make_kit(arm_cfg)
        space = action_space if action_space is not None else self.kit.env.action_space
        self.agent = SAC(
            policy.agent_cfg, policy.obs_spec, space, policy.privileged_keys, policy.estimate_dim
        )
        self.policy_keys = list(policy.policy_keys)
        self.seed_base = seed_base
        self.convert = convert
        self.store_action = store_action
        self.version = -1
        self._episode = threading.Lock()  # held while an episode runs; close waits for it
        self._closing = False

    def pid(self) -> int:
        """This actor's process id."""
        return os.getpid()

    def describe(self) -> RobotSide:
        """This arm's observation keys, action keys, cameras and task description."""
        return describe_env(self.kit.env)

    def run_episode(
        self, episode: int, random_actions: bool, weights: list[Any], version: int
    ) -> dict[str, Any]:
        """Run episode ``episode`` on this arm and return it in ``EnvActor.run_episode``'s form (``obs``,
        ``action`` (what the arm was sent), ``reward``, ``terminated``, ``truncated``, ``info`` with
        ``success``, ``progress``, ``intervention`` and ``policy_version``, ``stats``, ``episode``).
        ``random_actions`` is not supported on an arm (finetune never asks for it)."""
        if random_actions:
            raise ValueError("a robot actor does not act at random")
        with self._episode:
            if self._closing:
                raise RuntimeError("this robot actor is closing")
            return self._run_episode(episode, weights, version)

    def _run_episode(self, episode: int, weights: list[Any], version: int) -> dict[str, Any]:
        if version != self.version:
            import ray

            new = ray.get(weights[0])
            self.agent.encoder.load_state_dict(new["encoder"])
            self.agent.actor.load_state_dict(new["actor"])
            self.version = version
        self.agent.generator.manual_seed(self.seed_base * 7919 + episode)
        record = _EpisodeArrays()
        episodes = RobotEpisodes(
            self.kit.env, record, self.kit.keys, self.kit.teleop, self.seed_base, convert=self.convert,
            store_action=self.store_action,
        )  # fmt: skip
        keys = self.policy_keys

        def act(obs: Mapping[str, np.ndarray]) -> np.ndarray:
            if self._closing:
                self.kit.env.truncate_now()  # again each step: a reset clears it
            return self.agent.act({k: obs[k] for k in keys})

        stats = episodes.collect(episode, act, after_step=lambda: None)
        missing = [k for k in ROBOT_INFO_KEYS if k not in record.info]
        assert not missing, missing  # RobotEpisodes stores every robot info key
        return {"episode": episode, **record.arrays(self.version), "stats": stats}

    def close(self) -> None:
        """End the episode in progress at its next step, then release the arm (motors, cameras), the keys and
        the teleop; episodes asked for later are refused."""
        self._closing = True
        self.kit.env.truncate_now()
        with self._episode:
            self._release()

    def _release(self) -> None:
        self.kit.keys.close()
        self.kit.teleop.close()
        self.kit.env.close()
