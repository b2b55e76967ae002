"""The cost of the replay diagnostics (``BufferConfig.replay_stats_every``, issue #35) on ``sample()``.

Two RAM buffers hold the same 100,000 transitions (39-float state, 200-step episodes, every clip scored):
one collects the diagnostics (a window of 1,000 batches, summarised when full, as the learner does), one
does not (``replay_stats_every=0``). Both draw 256-transition state batches in alternating rounds, so
load from other processes hits both alike; per sampler (uniform, VLM mix) it prints the microseconds per
``sample()`` (the summary's cost spread over its window included), the ratio with / without, and the
milliseconds of one window's summary on its own.
A RAM buffer of small states is the worst case: its batches are the cheapest to read.

    python benchmarks/replay_stats_overhead.py --json runs/bench/replay_stats_overhead.json
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

import numpy as np

from buffer import BufferConfig, ReplayBuffer, make_buffer
from buffer.config import UniformSamplerConfig, VLMMixSamplerConfig

STATE_DIM, EPISODE_STEPS, BATCH = 39, 200, 256


def filled(sampler, transitions: int, every: int) -> ReplayBuffer:
    """A buffer of ``transitions`` transitions in 200-step episodes, each clip scored with its progress."""
    cfg = BufferConfig(capacity_steps=transitions + transitions // EPISODE_STEPS, sampler=sampler,
                       replay_stats_every=every)  # fmt: skip
    buffer = make_buffer(cfg, {"state": ((STATE_DIM,), np.float32)}, 4)
    rng = np.random.default_rng(0)
    span = cfg.clip_length * cfg.clip_stride
    for _ in range(transitions // EPISODE_STEPS):
        progress = np.clip(np.cumsum(rng.normal(0.005, 0.01, EPISODE_STEPS + 1)), 0, 1).astype(np.float32)
        e = buffer.add_episode(
            {"state": rng.normal(size=(EPISODE_STEPS + 1, STATE_DIM)).astype(np.float32)},
            rng.normal(size=(EPISODE_STEPS, 4)).astype(np.float32),
            np.zeros(EPISODE_STEPS, np.float32), np.zeros(EPISODE_STEPS, bool),
            np.arange(EPISODE_STEPS) == EPISODE_STEPS - 1,
            {"success": (progress > 0.9).astype(np.float32), "progress": progress},
        )  # fmt: skip
        start, _ = buffer.episode_rows(e)
        starts = np.arange(0, EPISODE_STEPS, span)
        buffer.set_scores(start + starts, progress[np.minimum(starts + span - cfg.clip_stride, EPISODE_STEPS)],
                          "oracle")  # fmt: skip
    return buffer


def time_round(buffer: ReplayBuffer, batches: int) -> float:
    """Seconds for ``batches`` samples, each followed by the learner's ``replay_stats`` call."""
    start = time.perf_counter()
    for _ in range(batches):
        buffer.sample(BATCH, keys=("state",))
        buffer.replay_stats()
    return time.perf_counter() - start


def time_summary(buffer: ReplayBuffer) -> float:
    """Seconds of one window's summary (the window's batches drawn first, untimed)."""
    for _ in range(buffer.cfg.replay_stats_every):
        buffer.sample(BATCH, keys=("state",))
    start = time.perf_counter()
    buffer.replay_stats()
    return time.perf_counter() - start


def measure(sampler, transitions: int, rounds: int, batches: int) -> dict[str, float]:
    on, off = filled(sampler, transitions, 1_000), filled(sampler, transitions, 0)
    time_round(on, 1_000), time_round(off, 200)  # warm-up (and scipy's import, once per process)
    t_on, t_off = [], []
    for _ in range(rounds):
        t_on.append(time_round(on, batches))
        t_off.append(time_round(off, batches))
    us_on, us_off = 1e6 * np.median(t_on) / batches, 1e6 * np.median(t_off) / batches
    summary_ms = 1e3 * float(np.median([time_summary(on) for _ in range(5)]))
    return {
        "us_per_sample_with": us_on, "us_per_sample_without": us_off, "ratio": us_on / us_off,
        "summary_ms_per_window": summary_ms,
    }  # fmt: skip


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--transitions", type=int, default=100_000)
    parser.add_argument("--rounds", type=int, default=7, help="alternating rounds (the median is reported)")
    parser.add_argument("--batches", type=int, default=2_000, help="samples per round (2 windows)")
    parser.add_argument("--json", type=Path, default=None, help="write the figures to this JSON file")
    args = parser.parse_args()
    samplers = {"uniform": UniformSamplerConfig(), "vlm_mix": VLMMixSamplerConfig(lambda_start=0.5)}
    figures = {name: measure(s, args.transitions, args.rounds, args.batches) for name, s in samplers.items()}
    for name, f in figures.items():
        print(f"{name:8s} sample(): {f['us_per_sample_with']:.1f} us with diagnostics, "
              f"{f['us_per_sample_without']:.1f} us without: ratio {f['ratio']:.3f}; one window's summary "
              f"{f['summary_ms_per_window']:.1f} ms")  # fmt: skip
    if args.json:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(
            json.dumps({"transitions": args.transitions, "batch": BATCH, **figures}, indent=2)
        )


if __name__ == "__main__":
    main()
