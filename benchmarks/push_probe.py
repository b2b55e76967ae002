"""Where do a push policy's pushes stop? Each episode's closest approach and end, and what kind of failure.

Runs exported push policies (and, with ``--expert``, the twin's scripted expert) on fresh seeds (those of
``benchmarks/reevaluate.py``), each episode to the time limit even after a success, and records per episode how far the cube started from the zone's centre, how
close it came, where it ended and how high it rose (the fingers riding onto it tip it). Failures are sorted
into kinds: ``untouched`` (the cube moved less than 5 mm), ``stopped_short`` (it ended within 1 cm of its
closest approach, outside the zone) and ``pushed_away`` (it ended more than 1 cm beyond its closest approach:
pushed on past the zone or flung).

    python benchmarks/push_probe.py runs/push-s1/policy.pt --expert --episodes 30 --json probe.json
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import statistics
from pathlib import Path
from typing import Any

import numpy as np
from reevaluate import REEVAL_SEED_BASE
from replay_experiment import provenance

UNTOUCHED_M = 0.005
"""A cube that moved less than this from where it started was never pushed."""
STOPPED_WITHIN_M = 0.01
"""A failed push that ended within this of its closest approach stopped short; beyond it, it was pushed away."""
KINDS = ("success", "stopped_short", "pushed_away", "untouched")


def failure_kind(success: bool, moved_m: float, closest_m: float, end_m: float) -> str:
    """One episode's kind (``KINDS``)."""
    if success:
        return "success"
    if moved_m < UNTOUCHED_M:
        return "untouched"
    return "stopped_short" if end_m - closest_m <= STOPPED_WITHIN_M else "pushed_away"


def probe_episode(env: Any, act: Any, seed: int, reset: Any = None) -> dict[str, Any]:
    """One push episode of ``act`` on ``env`` (a twin push env) from ``seed``; distances in cm."""
    obs, _ = env.reset(seed=seed)
    if reset is not None:
        reset()
    twin = env.unwrapped
    goal = np.asarray(twin.task.goal())[:2]
    start = twin.sim.cube_position().copy()
    start_m = closest = float(np.linalg.norm(start[:2] - goal))
    rest_z = top_z = float(start[2])
    success, steps, done = False, 0, False
    while not done:
        obs, _, terminated, truncated, info = env.step(act(obs))
        cube = twin.sim.cube_position()  # after the last step: where the cube ended
        closest = min(closest, float(np.linalg.norm(cube[:2] - goal)))
        top_z = max(top_z, float(cube[2]))
        success = success or bool(info["success"])
        steps += 1
        done = terminated or truncated
    end_m = float(np.linalg.norm(cube[:2] - goal))
    moved_m = float(np.linalg.norm(cube[:2] - start[:2]))
    return {
        "seed": seed,
        "success": success,
        "kind": failure_kind(success, moved_m, closest, end_m),
        "start_cm": round(100 * start_m, 2),
        "closest_cm": round(100 * closest, 2),
        "end_cm": round(100 * end_m, 2),
        "rise_cm": round(100 * (top_z - rest_z), 2),
        "steps": steps,
    }


def summarise(episodes: list[dict[str, Any]]) -> dict[str, Any]:
    """Counts per kind and the closest approaches of the successes and of the pushes that stopped short."""
    closest = {k: [e["closest_cm"] for e in episodes if e["kind"] == k] for k in ("success", "stopped_short")}

    def spread(values: list[float]) -> list[float] | None:
        return [min(values), max(values)] if values else None

    return {
        "episodes": len(episodes),
        "kinds": {k: sum(e["kind"] == k for e in episodes) for k in KINDS},
        "success_closest_cm_median": statistics.median(closest["success"]) if closest["success"] else None,
        "success_closest_cm_range": spread(closest["success"]),
        "stopped_short_closest_cm_range": spread(closest["stopped_short"]),
    }


def probe_policy(
    path: Path, episodes: int, expert: bool = False
) -> tuple[dict[str, Any], dict[str, Any] | None]:
    """``path``'s exported policy on ``episodes`` fresh seeds, and (``expert``) the scripted expert on the same."""
    from agents.export import load_policy
    from sim.experts import make_expert
    from sim.factory import make_env
    from vlmrl.pipelines.evaluate import Config, sim_config_for

    policy = load_policy(path)
    # Episodes run to the time limit (an evaluation ends at the first success): where a push stops is the question.
    sim = dataclasses.replace(sim_config_for(policy.run, Config(policy=path)), terminate_on_success=False)
    if sim.task != "push":
        raise SystemExit(f"push_probe: {path} was trained on {sim.task!r}, not push")
    env = make_env(sim)
    seeds = [REEVAL_SEED_BASE + i for i in range(episodes)]
    try:
        rows = [probe_episode(env, policy, seed) for seed in seeds]
        result = {"policy": str(path), "summary": summarise(rows), "episodes": rows}
        expert_result = None
        if expert:
            scripted = make_expert(env)
            expert_rows = [probe_episode(env, scripted.act, seed, reset=scripted.reset) for seed in seeds]
            expert_result = {
                "policy": "scripted expert",
                "summary": summarise(expert_rows),
                "episodes": expert_rows,
            }
    finally:
        env.close()
    return result, expert_result


def describe(result: dict[str, Any]) -> str:
    s = result["summary"]
    kinds = ", ".join(f"{k.replace('_', ' ')} {n}" for k, n in s["kinds"].items())
    line = f"{result['policy']}: {s['episodes']} episodes: {kinds}"
    if s["success_closest_cm_range"]:
        low, high = s["success_closest_cm_range"]
        line += (
            f"; successes came within {low:.1f}-{high:.1f} cm (median {s['success_closest_cm_median']:.1f})"
        )
    if s["stopped_short_closest_cm_range"]:
        low, high = s["stopped_short_closest_cm_range"]
        line += f"; stopped short at {low:.1f}-{high:.1f} cm"
    return line


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("policies", nargs="+", type=Path, help="exported push policies (policy.pt)")
    parser.add_argument("--episodes", type=int, default=30, help="fresh-seed episodes per policy")
    parser.add_argument(
        "--expert", action="store_true", help="also probe the scripted expert on the same seeds"
    )
    parser.add_argument("--json", type=Path, help="write every episode and the summaries here")
    args = parser.parse_args()
    if args.episodes < 1:
        parser.error(f"--episodes must be >= 1, got {args.episodes}")
    import torch

    torch.set_num_threads(1)
    results = []
    for i, path in enumerate(args.policies):
        result, expert_result = probe_policy(path, args.episodes, expert=args.expert and i == 0)
        for row in (result, expert_result):
            if row is not None:
                results.append(row)
                print(describe(row))
    if args.json:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(json.dumps({"probes": results, **provenance()}, indent=2) + "\n")


if __name__ == "__main__":
    main()
