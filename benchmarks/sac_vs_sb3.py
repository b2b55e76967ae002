"""Our SAC update vs Stable-Baselines3's, same networks (256x256), batch (256) and state env, one thread.

Both learners get a replay buffer filled with the same random-action transitions of a gymnasium MuJoCo
state task, then run gradient updates (sampling included) in interleaved rounds; the figure per learner is
the median rate over rounds, timed in process CPU time (one thread, so it equals wall time on an idle
machine and does not count time the process waits for a core on a shared one; wall rates are reported
too), and so is each round's own ratio, whose spread shows the machine's noise. Prints the ratio and
writes ``{"ours_updates_per_s", "sb3_updates_per_s", "ratio"}`` (plus details) with ``--json PATH``.

It also accounts for where the time goes: each learner's matmul FLOPs per update (counted by
``torch.utils.flop_counter`` over one update), the rate a batched matmul of the critics' size reaches on
this core (timed in the same rounds), and from those the ratio our update would reach if everything but
its matmuls cost nothing (``ratio_if_ours_were_matmuls_only``): the ceiling of what trimming
elementwise ops and Python overhead can buy.

    .venv/bin/python benchmarks/sac_vs_sb3.py --quick --json runs/bench/sac_vs_sb3.json
"""

from __future__ import annotations

import argparse
import json
import statistics
import time
from pathlib import Path

import gymnasium as gym
import numpy as np
import torch

from agents.config import SACConfig
from agents.sac import SAC
from buffer.batch import Batch

GAMMA = 0.99


def collect(env_id: str, steps: int, seed: int) -> dict[str, np.ndarray]:
    """Random-action transitions of ``env_id``."""
    env = gym.make(env_id)
    env.action_space.seed(seed)
    obs, _ = env.reset(seed=seed)
    data: dict[str, list] = {
        k: [] for k in ("obs", "next_obs", "action", "reward", "terminated", "truncated")
    }
    for _ in range(steps):
        action = env.action_space.sample()
        next_obs, reward, terminated, truncated, _ = env.step(action)
        for key, value in zip(data, (obs, next_obs, action, reward, terminated, truncated)):
            data[key].append(value)
        obs = env.reset()[0] if terminated or truncated else next_obs
    env.close()
    return {k: np.asarray(v, dtype=np.float32) for k, v in data.items()}


def sample_batch(data: dict[str, np.ndarray], rng: np.random.Generator, batch_size: int) -> Batch:
    """A uniform one-step batch from ``data`` (what a uniform replay buffer hands the learner)."""
    idx = rng.integers(0, len(data["reward"]), batch_size)
    terminated = data["terminated"][idx]
    return Batch(
        obs={"state": data["obs"][idx]},
        action=data["action"][idx],
        reward=data["reward"][idx],
        next_obs={"state": data["next_obs"][idx]},
        terminated=terminated,
        discount=GAMMA * (1.0 - terminated),
        weights=np.ones(batch_size, np.float32),
        indices=idx.astype(np.int64),
    )


def rates(run, updates: int) -> tuple[float, float]:
    """(updates per CPU second, updates per wall second) of ``run()``."""
    cpu, wall = time.process_time(), time.perf_counter()
    run()
    return updates / (time.process_time() - cpu), updates / (time.perf_counter() - wall)


def time_ours(
    agent: SAC, data: dict[str, np.ndarray], rng: np.random.Generator, updates: int, batch: int
) -> tuple[float, float]:
    def run() -> None:
        for _ in range(updates):
            agent.update(sample_batch(data, rng, batch))

    return rates(run, updates)


def matmul_flops(run) -> int:
    """Matmul FLOPs (forward and backward) of one call of ``run()``."""
    from torch.utils.flop_counter import FlopCounterMode

    counter = FlopCounterMode(display=False)
    with counter:
        run()
    return counter.get_total_flops()


def time_matmul(hidden: int, batch: int, repeats: int) -> float:
    """GFLOP/s (CPU time) of the critics' hidden layer as one batched matmul: [2, batch, h] @ [2, h, h]."""
    x, w = torch.randn(2, batch, hidden), torch.randn(2, hidden, hidden)
    cpu = time.process_time()
    for _ in range(repeats):
        torch.bmm(x, w)
    return 2 * 2 * batch * hidden * hidden * repeats / (time.process_time() - cpu) / 1e9


def make_sb3(env_id: str, data: dict[str, np.ndarray], hidden: list[int], batch: int, seed: int):
    from stable_baselines3 import SAC as SB3SAC

    env = gym.make(env_id)
    model = SB3SAC(
        "MlpPolicy",
        env,
        batch_size=batch,
        buffer_size=len(data["reward"]) + 1,
        learning_starts=0,
        gamma=GAMMA,
        policy_kwargs={"net_arch": hidden},
        seed=seed,
        device="cpu",
    )
    for i in range(len(data["reward"])):
        model.replay_buffer.add(
            data["obs"][i : i + 1],
            data["next_obs"][i : i + 1],
            data["action"][i : i + 1],
            data["reward"][i : i + 1],
            data["terminated"][i : i + 1],
            [{"TimeLimit.truncated": bool(data["truncated"][i])}],
        )
    model._setup_learn(total_timesteps=1)  # creates the logger train() writes to
    return model


def time_sb3(model, updates: int, batch: int) -> tuple[float, float]:
    return rates(lambda: model.train(gradient_steps=updates, batch_size=batch), updates)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="short run (fewer updates and rounds)")
    parser.add_argument("--json", type=Path, default=None, help="write the figures to this JSON file")
    parser.add_argument("--env", default="HalfCheetah-v5", help="gymnasium state env id")
    parser.add_argument("--batch-size", type=int, default=256)
    parser.add_argument("--hidden", type=int, nargs="+", default=[256, 256])
    args = parser.parse_args()
    torch.set_num_threads(1)
    updates, rounds = (25, 8) if args.quick else (100, 20)
    data = collect(args.env, 5000 if args.quick else 20000, seed=0)
    obs_dim = data["obs"].shape[1]
    env = gym.make(args.env)
    ours = SAC(
        SACConfig(hidden_dims=tuple(args.hidden), normalize_obs=False),
        {"state": ((obs_dim,), np.dtype(np.float32))},
        env.action_space,
    )
    sb3 = make_sb3(args.env, data, args.hidden, args.batch_size, seed=0)
    rng = np.random.default_rng(0)
    time_ours(ours, data, rng, 10, args.batch_size)  # warm-up both
    time_sb3(sb3, 10, args.batch_size)
    ours_flops = matmul_flops(lambda: time_ours(ours, data, rng, 1, args.batch_size))
    sb3_flops = matmul_flops(lambda: time_sb3(sb3, 1, args.batch_size))
    ours_rates, sb3_rates, matmul_gflops = [], [], []
    for _ in range(rounds):
        ours_rates.append(time_ours(ours, data, rng, updates, args.batch_size))
        sb3_rates.append(time_sb3(sb3, updates, args.batch_size))
        matmul_gflops.append(time_matmul(max(args.hidden), args.batch_size, updates))
    result = {
        "ours_updates_per_s": statistics.median(r[0] for r in ours_rates),
        "sb3_updates_per_s": statistics.median(r[0] for r in sb3_rates),
    }
    result["ratio"] = result["ours_updates_per_s"] / result["sb3_updates_per_s"]
    from foreign_envs import cpu_model
    from pixel_learning import git_commit

    details = {
        "cpu_model": cpu_model(),
        "git_commit": git_commit(),
        "env": args.env,
        "batch_size": args.batch_size,
        "hidden": args.hidden,
        "updates_per_round": updates,
        "rounds": rounds,
        "torch_threads": torch.get_num_threads(),
        "clock": "process CPU time",
        "ours_rounds_cpu": [r[0] for r in ours_rates],
        "sb3_rounds_cpu": [r[0] for r in sb3_rates],
        "ours_wall_updates_per_s": statistics.median(r[1] for r in ours_rates),
        "sb3_wall_updates_per_s": statistics.median(r[1] for r in sb3_rates),
        # each round's own ratio (its two learners ran back to back): their spread is the machine's noise
        "ratio_per_round": [o[0] / s[0] for o, s in zip(ours_rates, sb3_rates, strict=True)],
        "ours_matmul_mflop_per_update": ours_flops / 1e6,
        "sb3_matmul_mflop_per_update": sb3_flops / 1e6,
        "ours_matmul_gflops": ours_flops * result["ours_updates_per_s"] / 1e9,
        "sb3_matmul_gflops": sb3_flops * result["sb3_updates_per_s"] / 1e9,
        "bmm_gflops": statistics.median(matmul_gflops),
    }
    # SB3's update time over ours with only our matmuls left, run at the batched matmul's rate
    details["ratio_if_ours_were_matmuls_only"] = (
        details["bmm_gflops"] * 1e9 / ours_flops / result["sb3_updates_per_s"]
    )
    quartiles = statistics.quantiles(details["ratio_per_round"], n=4)
    print(
        f"SAC updates/s ({args.env}, batch {args.batch_size}, hidden {args.hidden}, 1 thread): "
        f"ours {result['ours_updates_per_s']:.1f}  sb3 {result['sb3_updates_per_s']:.1f}  ratio {result['ratio']:.2f} "
        f"(CPU time; wall: ours {details['ours_wall_updates_per_s']:.1f}, sb3 {details['sb3_wall_updates_per_s']:.1f}); "
        f"per-round ratios: quartiles {quartiles[0]:.2f} / {quartiles[1]:.2f} / {quartiles[2]:.2f}"
    )
    print(
        f"matmul MFLOP per update: ours {details['ours_matmul_mflop_per_update']:.0f}, "
        f"sb3 {details['sb3_matmul_mflop_per_update']:.0f}; effective GFLOP/s: ours {details['ours_matmul_gflops']:.1f}, "
        f"sb3 {details['sb3_matmul_gflops']:.1f}, a [2, {args.batch_size}, {max(args.hidden)}] bmm {details['bmm_gflops']:.1f}; "
        f"ratio if our update were only its matmuls at that rate: {details['ratio_if_ours_were_matmuls_only']:.2f}"
    )
    if args.json is not None:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(json.dumps({**result, "details": details}, indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
