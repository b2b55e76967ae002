"""Replay throughput: ZarrStorage (on disk, fast shard reader) vs MemoryStorage (numpy in RAM).

Both storages get the same episodes: 84x84x3 frames of a smooth moving scene plus camera-like noise
(sigma 3, so lossless compression is not flattered) and a 50-float state. In one run it measures
random 256-transition batches of state only and of pixels (obs + next_obs frames + state), and
insertion. The zarr frame cache gets at most 10% of the raw frame bytes, so reads mostly hit the disk
path (through the OS page cache, which is warm right after filling: also printed cold). The two
storages are sampled in alternating rounds so load from other processes hits both alike.
The same episodes then go to a lossy JPEG store (`frame_codec="jpeg"`, default quality):
`lossy_bytes_per_frame` (target <= 1/5 of the 21,168 raw bytes) and `lossy_pixel_ratio` against the RAM
buffer, measured the same way; beside them the CPU time per pixel batch of both (all threads; the
wall-clock ratio depends on the cores other processes leave free) and of decoding one frame on one thread.
`lossy_pixel_ratio_bound` is the best ratio this machine's cores allow when decoding is spread perfectly
and nothing else costs anything. Then a pixel SAC learner (train's default agent, one torch thread) runs
on the RAM buffer, the JPEG store and the JPEG store with `prefetch` (the next batch read during the
update): `lossy_train_ratio` and `lossy_prefetch_train_ratio` are its updates/s against the RAM buffer's.
Targets: state_ratio >= 0.8, pixel_ratio >= 0.1 (stretch 0.25), rss bounded by the budget,
lossy_raw_fraction <= 0.2, lossy_pixel_ratio >= 0.1.

    .venv/bin/python benchmarks/buffer_throughput.py --quick --json runs/bench/buffer_throughput.json
    .venv/bin/python benchmarks/buffer_throughput.py --frames 1000000 --cache-mb 2048   # the full run
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import os
import shutil
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

import numpy as np
from rich.console import Console
from rich.progress import track
from rich.table import Table

from buffer import BufferConfig, ReplayBuffer, make_buffer

FRAME_SHAPE = (84, 84, 3)
STATE_DIM = 50
ACTION_DIM = 6
EPISODE_ROWS = 100
BATCH = 256
OBS_SPEC = {"state": ((STATE_DIM,), np.float32), "pixels/front": (FRAME_SHAPE, np.uint8)}


class EpisodeMaker:
    """Deterministic episodes: a gradient background with a moving square, plus sensor noise."""

    def __init__(self, seed: int = 0):
        rng = np.random.default_rng(seed)
        self.noise_bank = np.clip(rng.normal(0, 3, (64, *FRAME_SHAPE)), -12, 12).round().astype(np.int16)
        yy, xx = np.mgrid[0:84, 0:84]
        self.background = np.stack([yy * 2, xx * 2, (yy + xx)], axis=-1).astype(np.int16) + 40

    def make(self, episode: int) -> dict[str, np.ndarray]:
        rng = np.random.default_rng(episode)
        n = EPISODE_ROWS
        frames = np.empty((n, *FRAME_SHAPE), np.uint8)
        x0, y0, vx, vy = rng.integers(5, 60, 2).tolist() + rng.uniform(-0.4, 0.4, 2).tolist()
        for t in range(n):
            img = self.background.copy()
            x, y = int(x0 + vx * t) % 70, int(y0 + vy * t) % 70
            img[y : y + 14, x : x + 14] = (200, 60, 30)
            noise = np.roll(self.noise_bank[rng.integers(64)], rng.integers(84 * 84 * 3))
            frames[t] = np.clip(img + noise, 0, 255)
        return {
            "state": rng.normal(size=(n, STATE_DIM)).astype(np.float32),
            "pixels/front": frames,
            "action": rng.uniform(-1, 1, (n - 1, ACTION_DIM)).astype(np.float32),
            "reward": rng.normal(size=n - 1).astype(np.float32),
        }


def fill(buf: ReplayBuffer, maker: EpisodeMaker, episodes: int, label: str) -> float:
    """Add `episodes` episodes; frames inserted per second (episode generation not timed)."""
    spent = 0.0
    for e in track(range(episodes), description=label, transient=True):
        ep = maker.make(e)
        t = EPISODE_ROWS - 1
        start = time.perf_counter()
        buf.add_episode(
            {"state": ep["state"], "pixels/front": ep["pixels/front"]},
            ep["action"],
            ep["reward"],
            np.zeros(t, bool),
            np.arange(t) == t - 1,
        )
        spent += time.perf_counter() - start
    return episodes * EPISODE_ROWS / spent


def batches_per_s(fn: Callable[[], object], seconds: float, min_batches: int = 5) -> float:
    """Call `fn` repeatedly for about `seconds` (after two warm-up calls); calls per second."""
    fn()
    fn()
    n, start = 0, time.perf_counter()
    while n < min_batches or time.perf_counter() - start < seconds:
        fn()
        n += 1
    return n / (time.perf_counter() - start)


def interleaved(a: Callable[[], object], b: Callable[[], object], seconds: float, rounds: int = 6):
    """Batches/s of `a` and of `b`, measured in alternating rounds of seconds / (2 * rounds) each."""
    n_a = n_b = 0
    t_a = t_b = 0.0
    a()
    b()
    for _ in range(rounds):
        for fn, is_a in ((a, True), (b, False)):
            n, start = 0, time.perf_counter()
            while n < 2 or time.perf_counter() - start < seconds / (2 * rounds):
                fn()
                n += 1
            elapsed = time.perf_counter() - start
            if is_a:
                n_a, t_a = n_a + n, t_a + elapsed
            else:
                n_b, t_b = n_b + n, t_b + elapsed
    return n_a / t_a, n_b / t_b


def cpu_ms_per_call(fn: Callable[[], object], seconds: float = 2.0) -> float:
    """CPU time of this process (all its threads) per call of `fn`, in ms: what a call costs whatever the
    other processes on the machine do (wall-clock rates depend on the cores they leave free)."""
    fn()
    n, wall, cpu = 0, time.perf_counter(), time.process_time()
    while n < 5 or time.perf_counter() - wall < seconds:
        fn()
        n += 1
    return (time.process_time() - cpu) / n * 1e3


def decode_cpu_us_per_frame(maker: EpisodeMaker, quality: int) -> float:
    """CPU time of decoding one stored JPEG frame on one thread (the lossy store's codec, its frames), in us."""
    from buffer.storage.jpeg_codec import JpegFrames

    codec = JpegFrames(quality, FRAME_SHAPE)
    encoded = [codec.encode(f) for f in maker.make(0)["pixels/front"]]
    out = np.empty(int(np.prod(FRAME_SHAPE)), np.uint8)
    rounds, start = 20, time.process_time()
    for _ in range(rounds):
        for data in encoded:
            codec.decode_into(data, out)
    return (time.process_time() - start) / (rounds * len(encoded)) * 1e6


def rss_mb() -> float:
    """Resident set size of this process now, in MiB."""
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return float("nan")


def drop_page_cache(directory: Path) -> None:
    """Ask the kernel to forget the store's file pages (cold reads)."""
    for path in directory.rglob("*"):
        if path.is_file():
            fd = os.open(path, os.O_RDONLY)
            os.fdatasync(fd)  # dirty pages cannot be dropped
            os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
            os.close(fd)


def training_rates(buffers: dict[str, ReplayBuffer], seconds: float, rounds: int = 3) -> dict[str, float]:
    """SAC updates/s of a pixel learner (the benchmark's state + 84 px camera, train's default agent, one
    torch thread) sampling its batches from each buffer, in alternating rounds: what a slow read costs a
    learner, and what prefetching (reading the next batch during the update) wins back."""
    import gymnasium as gym
    import torch

    from agents.sac import SAC
    from vlmrl.online.config import TrainConfig

    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        spec = {k: (shape, np.dtype(dtype)) for k, (shape, dtype) in OBS_SPEC.items()}
        agent = SAC(TrainConfig().agent, spec, gym.spaces.Box(-1.0, 1.0, (ACTION_DIM,), np.float32))
        counts = dict.fromkeys(buffers, 0)
        spent = dict.fromkeys(buffers, 0.0)
        for buf in buffers.values():  # warm-up (and the first prefetch)
            agent.update(buf.sample(BATCH))
        for _ in range(rounds):
            for name, buf in buffers.items():
                start = time.perf_counter()
                while counts[name] < 3 or time.perf_counter() - start < seconds / (rounds * len(buffers)):
                    agent.update(buf.sample(BATCH))
                    counts[name] += 1
                spent[name] += time.perf_counter() - start
        return {name: counts[name] / spent[name] for name in buffers}
    finally:
        torch.set_num_threads(threads)


def measure_lossy(
    workdir: Path,
    lossless_cfg: BufferConfig,
    quality: int,
    maker: EpisodeMaker,
    episodes: int,
    mbuf: ReplayBuffer,
    seconds: float,
) -> dict[str, float]:
    """The same episodes in a JPEG store (`frame_codec="jpeg"`): disk bytes per frame, pixel batches/s
    against the RAM buffer (alternating rounds), insertion rate and the round-trip error of one episode."""
    cfg = dataclasses.replace(lossless_cfg, frame_codec="jpeg", frame_quality=quality)
    buf = make_buffer(cfg, OBS_SPEC, ACTION_DIM, info_keys=(), path=str(workdir / "lossy.zarr"))
    try:
        insert = fill(buf, maker, episodes, "fill zarr (jpeg)")
        pixel_dir = workdir / "lossy.zarr" / "pixels" / "front"
        disk = sum(p.stat().st_size for p in pixel_dir.rglob("*") if p.is_file())
        batches_per_s(lambda: buf.sample(BATCH), seconds / 2)  # fill the frame cache
        z_pixels, m_pixels = interleaved(lambda: buf.sample(BATCH), lambda: mbuf.sample(BATCH), seconds)
        z_cpu_ms, m_cpu_ms = (
            cpu_ms_per_call(lambda: buf.sample(BATCH)),
            cpu_ms_per_call(lambda: mbuf.sample(BATCH)),
        )
        # A learner on each buffer; `ahead` reads the same JPEG store with prefetch on.
        ahead = make_buffer(
            dataclasses.replace(cfg, prefetch=True),
            OBS_SPEC,
            ACTION_DIM,
            info_keys=(),
            path=str(workdir / "lossy.zarr"),
        )
        try:
            rates = training_rates({"memory": mbuf, "jpeg": buf, "jpeg_prefetch": ahead}, seconds * 3)
        finally:
            ahead.close()
        last = episodes - 1
        start, end = buf.episode_rows(last)
        stored = buf.storage.read("pixels/front", np.arange(start, end)).astype(np.int16)
        error = np.abs(stored - maker.make(last)["pixels/front"])
    finally:
        buf.close()
    frames = episodes * EPISODE_ROWS
    decode_us = decode_cpu_us_per_frame(maker, quality)
    return {
        "lossy_quality": quality,
        "lossy_bytes_per_frame": disk / frames,
        "lossy_raw_fraction": disk / frames / int(np.prod(FRAME_SHAPE)),
        "lossy_zarr_pixel_batches_per_s": z_pixels,
        "lossy_memory_pixel_batches_per_s": m_pixels,
        "lossy_pixel_ratio": z_pixels / m_pixels,
        "lossy_cpu_ms_per_pixel_batch": z_cpu_ms,
        "memory_cpu_ms_per_pixel_batch": m_cpu_ms,
        "lossy_decode_cpu_us_per_frame": decode_us,
        # The best lossy_pixel_ratio these cores allow: a batch's 2 x BATCH decodes spread perfectly over
        # every core and nothing else, against the RAM buffer's measured batch time.
        "lossy_pixel_ratio_bound": (2 * BATCH * decode_us * 1e-6 / (os.cpu_count() or 1)) ** -1 / m_pixels,
        "memory_pixel_updates_per_s": rates["memory"],
        "lossy_pixel_updates_per_s": rates["jpeg"],
        "lossy_prefetch_pixel_updates_per_s": rates["jpeg_prefetch"],
        "lossy_train_ratio": rates["jpeg"] / rates["memory"],
        "lossy_prefetch_train_ratio": rates["jpeg_prefetch"] / rates["memory"],
        "lossy_insert_frames_per_s": insert,
        "lossy_mean_abs_error": float(error.mean()),
        "lossy_p999_abs_error": float(np.percentile(error, 99.9)),
    }


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--quick", action="store_true", help="short run: 20k frames, 4 s per figure")
    parser.add_argument("--json", type=Path, default=None, help="write the figures to this JSON file")
    parser.add_argument("--frames", type=int, default=None, help="frames stored (default 200k, quick 20k)")
    parser.add_argument(
        "--cache-mb", type=float, default=None, help="zarr frame cache (default/max: 10%% of raw)"
    )
    parser.add_argument("--seconds", type=float, default=None, help="seconds per throughput figure")
    parser.add_argument(
        "--codec", default="none", choices=["none", "zstd", "blosc-lz4", "blosc-zstd-bitshuffle"]
    )
    parser.add_argument(
        "--lossy-quality",
        type=int,
        default=BufferConfig().frame_quality,
        help="JPEG quality of the lossy store (frame_codec=jpeg)",
    )
    parser.add_argument(
        "--read-threads", type=int, default=BufferConfig().read_threads, help="zarr read threads"
    )
    parser.add_argument(
        "--dir", type=Path, default=None, help="where the zarr store goes (default: a temp dir)"
    )
    args = parser.parse_args()
    load_at_start = os.getloadavg()[0]  # other processes' load: the figures are noisier above ~1
    frames = args.frames or (20_000 if args.quick else 200_000)
    seconds = args.seconds or (4.0 if args.quick else 10.0)
    episodes = frames // EPISODE_ROWS
    raw_bytes = episodes * EPISODE_ROWS * int(np.prod(FRAME_SHAPE))
    cache_bytes = int(
        0.1 * raw_bytes if args.cache_mb is None else min(args.cache_mb * 2**20, 0.1 * raw_bytes)
    )
    maker = EpisodeMaker()
    common = {"capacity_steps": episodes * EPISODE_ROWS, "seed": 0}
    console = Console()
    workdir = Path(tempfile.mkdtemp(prefix="vlmrl-bench-", dir=args.dir))
    try:
        zarr_cfg = BufferConfig(
            storage="zarr",
            frame_cache_bytes=cache_bytes,
            frame_codec=args.codec,
            read_threads=args.read_threads,
            **common,
        )
        zbuf = make_buffer(zarr_cfg, OBS_SPEC, ACTION_DIM, info_keys=(), path=str(workdir / "store.zarr"))
        insert = fill(zbuf, maker, episodes, "fill zarr")
        # Sample long enough to fill the frame cache, then take RSS before the RAM reference exists.
        batches_per_s(lambda: zbuf.sample(BATCH), seconds)
        rss = rss_mb()
        pixel_dir = workdir / "store.zarr" / "pixels" / "front"
        disk = sum(p.stat().st_size for p in pixel_dir.rglob("*") if p.is_file())

        mbuf = make_buffer(BufferConfig(storage="memory", **common), OBS_SPEC, ACTION_DIM, info_keys=())
        mem_insert = fill(mbuf, maker, episodes, "fill memory")
        # Alternate the two storages in short rounds so both see the same (shared, noisy) machine.
        z_state, m_state = interleaved(
            lambda: zbuf.sample(BATCH, keys=("state",)), lambda: mbuf.sample(BATCH, keys=("state",)), seconds
        )
        z_pixels, m_pixels = interleaved(lambda: zbuf.sample(BATCH), lambda: mbuf.sample(BATCH), seconds)
        lossy = measure_lossy(workdir, zarr_cfg, args.lossy_quality, maker, episodes, mbuf, seconds)
        mbuf.close()

        drop_page_cache(workdir / "store.zarr")
        zbuf.storage.close()  # also forgets shard indexes, so the cold figure re-reads them
        z_cold = batches_per_s(lambda: zbuf.sample(BATCH), min(seconds, 2.0))
        zbuf.close()
    finally:
        shutil.rmtree(workdir, ignore_errors=True)

    result = {
        "zarr_state_batches_per_s": z_state,
        "memory_state_batches_per_s": m_state,
        "state_ratio": z_state / m_state,
        "zarr_pixel_batches_per_s": z_pixels,
        "memory_pixel_batches_per_s": m_pixels,
        "pixel_ratio": z_pixels / m_pixels,
        "insert_frames_per_s": insert,
        "rss_mb": rss,
        "bytes_per_frame": disk / (episodes * EPISODE_ROWS),
        **lossy,
        "loadavg_1min_at_start": load_at_start,
        "loadavg_1min_at_end": os.getloadavg()[0],
        "cpu_count": os.cpu_count(),
    }
    table = Table(
        title=f"replay buffer, {frames} frames 84x84x3, cache {cache_bytes / 2**20:.0f} MiB, batch {BATCH}"
    )
    table.add_column("figure")
    table.add_column("value", justify="right")
    for key, value in result.items():
        table.add_row(key, f"{value:,.2f}")
    table.add_row("(zarr pixel batches/s, page cache dropped)", f"{z_cold:,.2f}")
    table.add_row("(memory insert frames/s)", f"{mem_insert:,.0f}")
    console.print(table)
    if args.json:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(json.dumps(result, indent=2))


if __name__ == "__main__":
    main()
