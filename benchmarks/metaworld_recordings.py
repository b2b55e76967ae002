"""Labelled Meta-World recordings for `vlmrl scorer fit`: the task's scripted policy at several action-noise
levels, so the store holds successful episodes and failed ones (a student needs both).

Episode e runs Meta-World's own scripted policy (``sim.experts.make_expert``) with Gaussian noise of
standard deviation ``NOISE_LEVELS[e % 3]`` added to each action (then clipped to [-1, 1]). Episodes do
not end at success, so held successes give the student positive windows; every step stores the env's
``success`` and privileged ``progress``. The store is a vlmrl zarr recording (``vlmrl_record``: task
sentence, camera, sim settings), read by `vlmrl scorer fit` like `vlmrl record`'s:

    python benchmarks/metaworld_recordings.py drawer-open-v3 --out results/vlm-replay/recordings/drawer-open \\
        --episodes 60 --image-size 64
    vlmrl scorer fit results/vlm-replay/recordings/drawer-open/episodes.zarr \\
        --out results/vlm-replay/students/drawer-open.pt
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import sys
from pathlib import Path

import numpy as np

NOISE_LEVELS: tuple[float, ...] = (0.0, 0.5, 2.0)
"""Action-noise standard deviations, in turn per episode: the clean expert succeeds (tests/sim check it);
0.5 sometimes does; 2.0 mostly fails and wanders (measured counts are printed at the end)."""
DEFAULT_CAMERA = "corner"
"""The camera a scorer watches by default: Meta-World's oblique view of table and arm."""


def record(
    task: str,
    out: Path,
    episodes: int,
    image_size: int,
    camera: str = DEFAULT_CAMERA,
    seed: int = 0,
    max_episode_steps: int | None = None,
) -> dict[str, object]:
    """Record ``episodes`` episodes to ``out/episodes.zarr`` (a new store) and return their counts."""
    from buffer import BufferConfig
    from robot.contract import env_spec
    from sim import SimConfig, make_env
    from sim.errors import SimError
    from sim.experts import make_expert
    from vlmrl.loop.assembly import open_episode_store

    store = out / "episodes.zarr"
    if store.exists():
        raise SimError(f"{store} exists: record into a new folder (a recording is never overwritten)")
    if episodes < 1:
        raise SimError(f"episodes must be >= 1, got {episodes}")
    sim = SimConfig(
        suite="metaworld", task=task, cameras=(camera,), image_size=image_size, reward="sparse",
        terminate_on_success=False, max_episode_steps=max_episode_steps,
    )  # fmt: skip
    env = make_env(sim)
    try:
        spec = env_spec(env)
        expert = make_expert(env)
        steps = env.unwrapped.max_episode_steps
        out.mkdir(parents=True, exist_ok=True)
        buffer = open_episode_store(
            store,
            BufferConfig(storage="zarr", capacity_steps=episodes * steps + 2 * steps),
            spec.obs_spec(),
            spec.action_shape[0],
            ("success", "progress"),
            {
                "task_description": spec.task_description,
                "control_hz": float(env.metadata["render_fps"]),
                "action_mode": "ee_delta",
                "cameras": list(spec.cameras),
                "sim_config": dataclasses.asdict(sim),
            },
        )
        rng = np.random.default_rng(seed)
        successes = {noise: 0 for noise in NOISE_LEVELS}
        tried = {noise: 0 for noise in NOISE_LEVELS}
        for episode in range(episodes):
            noise = NOISE_LEVELS[episode % len(NOISE_LEVELS)]
            obs, info = env.reset(seed=seed * 100_000 + episode)
            expert.reset()
            succeeded, done = False, False
            while not done:
                action = expert.act(obs) + rng.normal(0.0, noise, spec.action_shape).astype(np.float32)
                action = np.clip(action, spec.action_low, spec.action_high)
                next_obs, reward, terminated, truncated, info = env.step(action)
                buffer.add_step(obs, action, reward, terminated, truncated, info, next_obs)
                succeeded = succeeded or bool(info["success"])
                done = terminated or truncated
                obs = next_obs
            successes[noise] += succeeded
            tried[noise] += 1
        buffer.close()
    finally:
        env.close()
    return {
        "store": str(store),
        "task": task,
        "episodes": episodes,
        "successes_by_noise": {f"{n:g}": f"{successes[n]}/{tried[n]}" for n in NOISE_LEVELS},
    }


def parser() -> argparse.ArgumentParser:
    """The command line (tests parse the replay grid's recording commands with it)."""
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("task", help="an MT1 name, e.g. drawer-open-v3")
    parser.add_argument("--out", type=Path, required=True, help="folder of the new episodes.zarr")
    parser.add_argument("--episodes", type=int, default=60)
    parser.add_argument("--image-size", type=int, default=64, help="frame side in pixels (the scorer's size)")
    parser.add_argument("--camera", default=DEFAULT_CAMERA)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--max-episode-steps", type=int, default=None)
    return parser


def main(argv: list[str] | None = None) -> int:
    args = parser().parse_args(argv)
    from sim.errors import SimError

    try:
        summary = record(
            args.task,
            args.out,
            args.episodes,
            args.image_size,
            args.camera,
            args.seed,
            args.max_episode_steps,
        )
    except SimError as exc:
        print(f"metaworld_recordings: {exc}", file=sys.stderr)
        return 2
    print(json.dumps(summary))
    return 0


if __name__ == "__main__":
    sys.exit(main())
