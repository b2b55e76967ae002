"""Ray's loss count (issue #36, item 4): an env actor killed with SIGKILL loses at most the episodes it had in
flight, a restarting actor gets no requests until it is back, and every requested episode is accounted for
(committed, lost or still in flight)."""

from __future__ import annotations

import os
import signal
import time
from types import SimpleNamespace
from typing import Any

import numpy as np
import pytest

from vlmrl.online.config import RayConfig


@pytest.mark.slow
def test_a_killed_actor_loses_at_most_its_requests_in_flight(ray_address):
    import ray
    import torch

    from vlmrl.actors.env_actor import POLICY_VERSION_KEY
    from vlmrl.actors.ray_source import ActorEpisodes

    class QuickActor:  # defined here, so Ray ships it by value (its workers cannot import tests.*)
        """An env actor without an env: 3-step episodes of 0.1 s each, its episode index in ``info``."""

        def __init__(self, make_env, cfg, policy, stored_keys, seed_base) -> None:
            time.sleep(2.0)  # a real actor builds its env (seconds): the restart window requests can fall in

        def pid(self) -> int:
            return os.getpid()

        def run_episode(self, episode, random_actions, weights, version) -> dict[str, Any]:
            time.sleep(0.1)
            steps = 3
            return {
                "obs": {"state": np.zeros((steps + 1, 2), np.float32)},
                "action": np.zeros((steps, 1), np.float32),
                "reward": np.zeros(steps, np.float32),
                "terminated": np.zeros(steps, bool),
                "truncated": np.eye(1, steps, steps - 1, dtype=bool)[0],
                "info": {POLICY_VERSION_KEY: np.full(steps + 1, -1), "episode": np.full(steps + 1, episode)},
                "stats": {"return": 0.0, "length": float(steps), "success": 0.0},
            }

    committed: list[int] = []
    buffer = SimpleNamespace(
        add_episode=lambda obs, act, rew, term, trunc, info: committed.append(int(info["episode"][0]))
    )
    agent = SimpleNamespace(num_updates=0, encoder=torch.nn.Linear(1, 1), actor=torch.nn.Linear(1, 1))
    max_in_flight = 2
    cfg = RayConfig(max_in_flight=max_in_flight, actor_cpus=0.5)
    source = ActorEpisodes(
        2, "loss-count", None, None, None, [], 0, buffer, agent, lambda: True, cfg, actor_class=QuickActor
    )
    try:
        for episode in range(4):
            source.collect(episode, act=None, after_step=lambda: None)
        os.kill(ray.get(source.slots[0].handle.pid.remote()), signal.SIGKILL)
        deadline = time.monotonic() + 90
        while not (source.slots[0].restarts >= 1 and source.slots[0].episodes_since_start >= 2):
            assert time.monotonic() < deadline, f"actor 0 did not come back: {source.counters}"
            source.collect(len(committed), act=None, after_step=lambda: None)
        counters = source.counters
        in_flight = [i for slot in source.slots for i in slot.in_flight.values()]
        assert 1 <= counters.lost_episodes <= max_in_flight, counters
        assert counters.episodes == len(committed) and len(set(committed)) == len(committed)
        requested = source.next_episode
        assert counters.requested == requested
        assert set(committed).isdisjoint(in_flight) and set(committed) | set(in_flight) <= set(
            range(requested)
        )
        assert requested == len(committed) + counters.lost_episodes + len(in_flight), (requested, counters)
    finally:
        source.close()
