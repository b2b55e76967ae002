"""Scale-out on Ray: env actors vs the single-process loop, the learner beside them, Ray's own costs.

The env is `vlmrl train`'s default pixel env (SO-101 twin `lift`, one front camera, 64 px by default,
rendered every step; rendering dominates a step) acting with a SAC policy (state input, 128x128), as an
env actor does (``vlmrl.actors.env_actor.EnvActor``, the code `vlmrl train --actors N` runs).

- Collection only: env steps/s of one process running episodes vs 1 and 2 Ray env actors feeding a
  driver that only receives their episodes (timed in alternating blocks, so load from other processes
  hits all three alike). ``actor_speedup_2`` = 2 actors / one process (target >= 1.6 on 2 cores).
- The learner: SAC updates/s (batch 128 from a replay buffer) alone vs with actors collecting beside it
  while it ingests their episodes (``add_episode``) between blocks of updates, as `vlmrl train --actors`
  does; alternating blocks. On C cores the layout is C-1 actors beside the learner (``learner_slowdown``,
  target <= 0.15); the 2-actor figure is reported too (``learner_slowdown_2_actors``).
- Ray's overhead, measured: ``ray.put`` + ``ray.get`` of one episode's arrays, a no-op actor call, the
  learner's cost to receive and store one episode, and the CPU Ray's own processes (raylet, GCS, agents,
  idle actors) use while the learner runs alone (``ray_idle_cpu_share``, of one core).
- A projection (not a measurement) to 8/32/128 actors from the per-actor rate and the learner's ingest.

    .venv/bin/python benchmarks/scale_out.py --quick --json runs/bench/scale_out.json
"""

from __future__ import annotations

import argparse
import json
import os
import time
from pathlib import Path
from typing import Any

os.environ.setdefault("MUJOCO_GL", "egl")
os.environ.setdefault("PYOPENGL_PLATFORM", os.environ["MUJOCO_GL"])

import numpy as np
import ray
import torch

from agents.config import SACConfig
from agents.sac import SAC
from buffer import BufferConfig, make_buffer
from sim import SimConfig, make_env
from vlmrl.actors.env_actor import POLICY_VERSION_KEY, EnvActor, PolicySpec, policy_weights

PROJECTED_ACTORS = (1, 2, 8, 32, 128)
RAY_NICENESS = "RAY_worker_niceness"
"""Ray's own setting (lower case as Ray spells it) of its worker processes' niceness (Ray's default: 15)."""


def pixel_env(image_size: int, episode_steps: int) -> SimConfig:
    """`vlmrl train`'s default env (twin lift, front camera) with episodes of ``episode_steps``."""
    return SimConfig(
        task="lift", reward="sparse", action_mode="delta", image_size=image_size, cameras=("front",),
        terminate_on_success=False, max_episode_steps=episode_steps,
    )  # fmt: skip


def state_agent(sim: SimConfig) -> tuple[SAC, PolicySpec]:
    """The learner's SAC (train's default nets) over the state vector, and what an actor builds it from."""
    env = make_env(sim)
    spec = {"state": (env.observation_space["state"].shape, np.float32)}
    cfg = SACConfig(hidden_dims=(128, 128), init_alpha=0.1)
    agent = SAC(cfg, spec, env.action_space)
    env.close()
    return agent, PolicySpec(agent_cfg=cfg, obs_spec=spec, privileged_keys=(), policy_keys=("state",))


class Collection:
    """Env actors and the driver loop that receives their episodes (at most 2 requests queued per actor)."""

    def __init__(self, handles: list[Any], weights_ref: Any) -> None:
        self.handles, self.weights_ref = handles, weights_ref
        self.in_flight: dict[Any, int] = {}
        self.next_episode = 0

    def submit(self, actors: int) -> None:
        """Top the first ``actors`` actors up to 2 requests each."""
        for i in range(actors):
            while sum(1 for a in self.in_flight.values() if a == i) < 2:
                ref = self.handles[i].run_episode.remote(self.next_episode, False, [self.weights_ref], 0)
                self.in_flight[ref] = i
                self.next_episode += 1

    def drain(self) -> None:
        """Wait for every request in flight (their episodes are dropped)."""
        ray.get(list(self.in_flight))
        self.in_flight.clear()

    def poll(self, actors: int, timeout_s: float | None) -> list[dict[str, Any]]:
        """Episodes finished within ``timeout_s`` (None: wait for one), the actors topped up again."""
        self.submit(actors)
        ready, _ = ray.wait(list(self.in_flight), num_returns=1, timeout=timeout_s)
        episodes = []
        for ref in ready:
            del self.in_flight[ref]
            episodes.append(ray.get(ref))
        return episodes

    def steps_per_s(self, actors: int, block_s: float) -> float:
        """Env steps/s of ``actors`` actors over ``block_s`` (after a drained start)."""
        self.drain()
        self.submit(actors)
        steps, start = 0, time.perf_counter()
        while time.perf_counter() - start < block_s:
            steps += sum(int(e["stats"]["length"]) for e in self.poll(actors, None))
        return steps / (time.perf_counter() - start)


def local_steps_per_s(actor: EnvActor, block_s: float, first_episode: int) -> float:
    """Env steps/s of the single-process loop (the same episode code, in this process)."""
    steps, start, e = 0, time.perf_counter(), first_episode
    while time.perf_counter() - start < block_s:
        steps += int(actor.run_episode(e, False, [], 0)["stats"]["length"])
        e += 1
    return steps / (time.perf_counter() - start)


def updates_per_s(
    agent: SAC, buffer: Any, block_s: float, collection: Collection | None, actors: int
) -> dict:
    """SAC updates/s over ``block_s``; with ``collection``, ingest its actors' episodes between blocks of
    10 updates (the learner's cost to receive and store each is timed)."""
    updates, ingested, ingest_s, start = 0, 0, 0.0, time.perf_counter()
    if collection is not None:
        collection.submit(actors)
    while time.perf_counter() - start < block_s:
        for _ in range(10):
            agent.update(buffer.sample(128, keys=["state"]))
        updates += 10
        if collection is not None:
            t = time.perf_counter()
            for e in collection.poll(actors, 0):
                store(buffer, e)
                ingested += 1
            ingest_s += time.perf_counter() - t
    elapsed = time.perf_counter() - start
    return {"updates_per_s": updates / elapsed, "episodes": ingested, "ingest_s": ingest_s}


def store(buffer: Any, episode: dict[str, Any]) -> None:
    """Commit an actor's episode as the learner does."""
    info = {k: v for k, v in episode["info"].items() if k != POLICY_VERSION_KEY}
    buffer.add_episode(
        episode["obs"],
        episode["action"],
        episode["reward"],
        episode["terminated"],
        episode["truncated"],
        info,
    )


def descendants_cpu_s(exclude: set[int]) -> float:
    """CPU seconds used so far by this process's descendants (Ray's raylet, GCS, agents and workers),
    leaving out the processes in ``exclude`` (the env actors), read from /proc."""
    parents: dict[int, int] = {}
    cpu: dict[int, float] = {}
    tick = os.sysconf("SC_CLK_TCK")
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            fields = Path(f"/proc/{entry}/stat").read_text().rsplit(")", 1)[1].split()
        except OSError:  # gone meanwhile
            continue
        parents[int(entry)] = int(fields[1])
        cpu[int(entry)] = (int(fields[11]) + int(fields[12])) / tick  # utime + stime
    me, total = os.getpid(), 0.0
    for pid in cpu:
        p = pid
        while p > 1 and p != me:
            p = parents.get(p, 1)
        if p == me and pid != me and pid not in exclude:
            total += cpu[pid]
    return total


def transfer_costs(handle: Any, episode: dict[str, Any], calls: int) -> dict[str, float]:
    """Ray's overhead, measured: put + get of one episode's arrays, and a no-op actor call (ms each)."""
    ray.get(ray.put(episode))  # warm-up
    start = time.perf_counter()
    for _ in range(calls):
        ray.get(ray.put(episode))
    put_get_ms = (time.perf_counter() - start) / calls * 1e3
    ray.get(handle.pid.remote())
    start = time.perf_counter()
    for _ in range(calls):
        ray.get(handle.pid.remote())
    noop_ms = (time.perf_counter() - start) / calls * 1e3
    return {"episode_put_get_ms": put_get_ms, "noop_actor_call_ms": noop_ms}


def projection(per_actor: float, episode_steps: float, ingest_s: float, learner_updates: float) -> list[dict]:
    """Projected env steps/s for ``PROJECTED_ACTORS`` actors (a projection, not a measurement).

    Args:
        per_actor: measured env steps/s of one actor (each projected actor has its own core).
        episode_steps: transitions per episode.
        ingest_s: measured learner seconds to receive and store one episode.
        learner_updates: measured learner updates/s alone (UTD 1: one update per env step).
    """
    ingest_limit = episode_steps / ingest_s
    rows = []
    for n in PROJECTED_ACTORS:
        actors = n * per_actor
        collect = min(actors, ingest_limit)
        # UTD 1: each env step costs the learner one update plus its share of ingesting the episode.
        training_limit = 1.0 / (1.0 / learner_updates + ingest_s / episode_steps)
        train = min(actors, training_limit)
        rows.append(
            {
                "actors": n,
                "actors_steps_per_s": actors,
                "collect_only_steps_per_s": collect,
                "collect_bound": "actors" if actors <= ingest_limit else "learner ingest",
                "utd1_training_steps_per_s": train,
                "utd1_bound": "actors" if actors <= training_limit else "learner updates",
            }
        )
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--quick", action="store_true", help="3 rounds of 6 s blocks (about 2-3 min in all)")
    parser.add_argument("--json", type=Path, default=None, help="write the figures to this JSON file")
    parser.add_argument("--image-size", type=int, default=64)
    parser.add_argument("--episode-steps", type=int, default=100)
    parser.add_argument("--ray-address", default="", help="join this cluster (default: a local one)")
    args = parser.parse_args()
    torch.set_num_threads(1)
    load_before = os.getloadavg()[0]
    cores = os.cpu_count() or 1
    block_s, rounds = (6.0, 3) if args.quick else (20.0, 4)
    sim = pixel_env(args.image_size, args.episode_steps)
    agent, spec = state_agent(sim)
    weights = policy_weights(agent)

    # Ray starts its workers at niceness 15 (so `vlmrl train`'s learner wins a shared core); here the actors
    # are compared with the single-process loop, so a local cluster gives them the same priority as it.
    os.environ.setdefault(RAY_NICENESS, "0")
    t = time.perf_counter()
    ray.init(
        address=args.ray_address or None,
        include_dashboard=False,
        log_to_driver=False,
        configure_logging=False,
    )
    ray_start_s = time.perf_counter() - t
    remote = ray.remote(EnvActor).options(num_cpus=1)  # type: ignore[attr-defined]
    n_actors = max(2, cores - 1)
    t = time.perf_counter()
    handles = [
        remote.remote(make_env, sim, spec, ["state", "pixels/front"], 1000 * (i + 1)) for i in range(n_actors)
    ]
    ray.get([h.pid.remote() for h in handles])
    actor_start_s = time.perf_counter() - t
    collection = Collection(handles, ray.put(weights))
    local = EnvActor(make_env, sim, spec, ["state", "pixels/front"], 0)
    local.load_weights(weights, 0)
    first = local.run_episode(0, False, [], 0)  # warm-up, and the episode the transfer costs move
    collection.steps_per_s(2, 1.0)  # warm-up: every actor has run an episode

    print(f"collection: {rounds} rounds of {block_s:.0f} s blocks (one process, 1 actor, 2 actors)")
    rates: dict[str, list[float]] = {"local": [], "actors_1": [], "actors_2": []}
    for r in range(rounds):
        rates["local"].append(local_steps_per_s(local, block_s, 1 + 1000 * r))
        rates["actors_1"].append(collection.steps_per_s(1, block_s))
        rates["actors_2"].append(collection.steps_per_s(2, block_s))
    collection.drain()
    local_rate, one, two = (float(np.mean(v)) for v in rates.values())

    buffer = make_buffer(
        BufferConfig(capacity_steps=10_000, storage="memory"),  # a full ring: ingest evicts, as in a long run
        {"state": spec.obs_spec["state"], "pixels/front": ((args.image_size, args.image_size, 3), np.uint8)},
        int(first["action"].shape[1]),
    )
    for _ in range(4):
        store(buffer, first)
    for _ in range(20):  # warm-up
        agent.update(buffer.sample(128, keys=["state"]))
    beside = cores - 1 if cores > 1 else 1
    print(
        f"learner: {rounds} rounds of {block_s:.0f} s blocks (alone, {beside} actor(s) beside it, 2 actors)"
    )
    learner: dict[str, list[dict]] = {"alone": [], "beside": [], "actors_2": []}
    actor_pids = set(ray.get([h.pid.remote() for h in handles]))
    system_cpu_s = system_wall_s = 0.0
    for _ in range(rounds):
        cpu0, t0 = descendants_cpu_s(actor_pids), time.perf_counter()
        learner["alone"].append(updates_per_s(agent, buffer, block_s, None, 0))
        system_cpu_s += descendants_cpu_s(actor_pids) - cpu0
        system_wall_s += time.perf_counter() - t0
        learner["beside"].append(updates_per_s(agent, buffer, block_s, collection, beside))
        collection.drain()
        learner["actors_2"].append(updates_per_s(agent, buffer, block_s, collection, 2))
        collection.drain()
    alone = float(np.mean([b["updates_per_s"] for b in learner["alone"]]))
    with_beside = float(np.mean([b["updates_per_s"] for b in learner["beside"]]))
    with_two = float(np.mean([b["updates_per_s"] for b in learner["actors_2"]]))
    ingested = sum(b["episodes"] for k in ("beside", "actors_2") for b in learner[k])
    ingest_s = sum(b["ingest_s"] for k in ("beside", "actors_2") for b in learner[k]) / max(1, ingested)
    costs = transfer_costs(handles[0], first, 20 if args.quick else 100)
    episode_mb = sum(v.nbytes for v in first["obs"].values()) / 2**20
    rows = projection(one, args.episode_steps, ingest_s, alone)
    for h in handles:
        ray.kill(h)

    result = {
        "env": f"so101 lift, front camera {args.image_size} px, {args.episode_steps}-step episodes, SAC state policy",
        "cpu_count": cores,
        "single_process_steps_per_s": local_rate,
        "actors_1_steps_per_s": one,
        "actors_2_steps_per_s": two,
        "actor_speedup_1": one / local_rate,
        "actor_speedup_2": two / local_rate,
        "learner_updates_per_s_alone": alone,
        "learner_layout": f"{beside} actor(s) beside the learner on {cores} cores",
        "learner_updates_per_s_with_actors": with_beside,
        "learner_slowdown": 1.0 - with_beside / alone,
        "learner_updates_per_s_with_2_actors": with_two,
        "learner_slowdown_2_actors": 1.0 - with_two / alone,
        "learner_ingest_ms_per_episode": ingest_s * 1e3,
        "ray_idle_cpu_share": system_cpu_s / system_wall_s,
        "episode_mb": episode_mb,
        **costs,
        "ray_worker_niceness": int(os.environ[RAY_NICENESS]) if not args.ray_address else None,
        "ray_start_s": ray_start_s,
        "actors_start_s": actor_start_s,
        "projection_note": "projected from the measured per-actor rate and learner ingest, not measured",
        "projection": rows,
        "rates_per_round": rates,
        "load_avg_1m_start": load_before,
        "load_avg_1m_end": os.getloadavg()[0],
    }
    print(
        f"collection: one process {local_rate:.0f} steps/s, 1 actor {one:.0f}, 2 actors {two:.0f}: "
        f"actor_speedup_2 {result['actor_speedup_2']:.2f} (target >= 1.6)\n"
        f"learner: {alone:.0f} updates/s alone, {with_beside:.0f} with {beside} actor(s) beside it "
        f"(learner_slowdown {result['learner_slowdown']:.2f}, target <= 0.15), {with_two:.0f} with 2 actors "
        f"({result['learner_slowdown_2_actors']:.2f})\n"
        f"ray: episode ({episode_mb:.1f} MB) put+get {costs['episode_put_get_ms']:.2f} ms, no-op actor call "
        f"{costs['noop_actor_call_ms']:.2f} ms, learner receive+store {ingest_s * 1e3:.2f} ms per episode, "
        f"Ray's processes with idle actors: {result['ray_idle_cpu_share']:.1%} of a core\n"
        "projection (not measured): actors | env steps/s collect-only (bound) | with UTD-1 training (bound)"
    )
    for row in rows:
        print(
            f"  {row['actors']:>4} | {row['collect_only_steps_per_s']:>9,.0f} ({row['collect_bound']}) | "
            f"{row['utd1_training_steps_per_s']:>7,.0f} ({row['utd1_bound']})"
        )
    print(f"load average {load_before:.1f} -> {result['load_avg_1m_end']:.1f} on {cores} cores")
    if args.json is not None:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(json.dumps(result, indent=2) + "\n")
    ray.shutdown()


if __name__ == "__main__":
    main()
