"""VLM clip scoring: hf-backend clips/s on a real-size architecture, and the async scoring overhead.

1. ``clips_per_s``: the ``hf`` backend on the SmolVLM-256M-Instruct architecture (Idefics3: SigLIP-B/16
   at 512 px + SmolLM2-135M) with random weights (latency does not depend on weight values), K frames of
   128 px per clip, fp32 on CPU, one torch thread. Reference in the same run: the same clips scored one
   at a time (batch 1), so the ratio shows what batching buys.
   ``learned_clips_per_s``: ``scorer:learned`` (the small conv clip scorer of `vlmrl scorer fit`, random
   weights, 4 frames) on the same clips' frames at 64 px, the size the twin trains with and a student is
   fitted at (the hf model resizes every frame to 512 px whatever it gets), one thread, batches of 64;
   ``learned_vs_hf`` is its ratio to ``clips_per_s`` (issue #14 asks for >= 1000).
2. ``async_overhead``: the fraction of env steps/s lost when a ``ScoringWorker`` scores every new clip of
   a running SO-101 twin rollout (lift, 128 px front camera, random actions), versus the same rollout
   without scoring, alternating the two in one run. The worker uses the ``openai`` backend (/v1/score,
   JPEG frames) against a `vlmrl serve` process whose backend is the oracle plus a fixed latency per
   request, a stand-in for a remote GPU: the figure is the training-side cost (frame encoding, HTTP,
   queueing, score write-back). Target <= 0.05 (VLM-RB reports 0.12). Each pair of neighbouring segments
   (one plain, one scored, in alternating order) gives one overhead; the figure is their median, with the
   quartiles and the per-pair values in the JSON (``async_overhead_q25``/``_q75``, ``async_overhead_pairs``).
   The same pairs measured in process CPU time give ``async_overhead_cpu`` (what scoring costs when
   nothing overlaps, e.g. on a loaded machine; much less disturbed by other processes), and
   ``worker_cpu_ms_per_clip`` is what the scoring threads spend per clip. The first 100 steps are scored
   unmeasured (imports, first connection); the server runs at the lowest CPU priority, as a remote GPU
   box's work does not run on the training machine.

    .venv/bin/python benchmarks/scoring.py --quick --json runs/bench/scoring.json

Figures measured on a shared 2-core machine under load are pessimistic.
"""

from __future__ import annotations

import argparse
import json
import os
import socket
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

os.environ.setdefault("MUJOCO_GL", "egl")
os.environ.setdefault("PYOPENGL_PLATFORM", os.environ["MUJOCO_GL"])
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")

import httpx
import numpy as np
import torch
import torch._dynamo  # loads triton before Mesa's EGL: the other order segfaults
from rich.progress import track

from vlm import Clip, ClipRequest, HFConfig, OpenAIConfig, ScoringWorker, WorkerConfig, make_scorer
from vlm.backends.hf import HFScorer
from vlm.random_models import build_random_vlm

PROMPT = "Did the robot arm pick up the cube and lift it above the table? Answer yes or no."


def hf_clips_per_s(n_clips: int, num_frames: int, batch_size: int, warmup: bool) -> tuple[float, float]:
    """(batched clips/s, one-at-a-time clips/s) of the hf backend on the SmolVLM-256M architecture."""
    model, processor = build_random_vlm("idefics3", "smolvlm-256m")
    scorer = HFScorer(
        HFConfig(model="random-smolvlm-256m", num_frames=num_frames, batch_size=batch_size),
        model=model,
        processor=processor,
    )
    rng = np.random.default_rng(0)
    clips = [rng.integers(0, 256, (32, 128, 128, 3), dtype=np.uint8) for _ in range(n_clips)]
    if warmup:
        scorer.score(clips[:1], PROMPT)
    start = time.perf_counter()
    scorer.score(clips, PROMPT)
    batched = n_clips / (time.perf_counter() - start)
    single_n = max(1, n_clips // 2)
    start = time.perf_counter()
    for clip in track(clips[:single_n], description="hf batch 1", transient=True):
        scorer.score([clip], PROMPT)
    single = single_n / (time.perf_counter() - start)
    scorer.close()
    return batched, single


def learned_clips_per_s(n_clips: int, side: int = 64, repeats: int = 3) -> float:
    """Clips/s of ``scorer:learned`` (random weights, default width and frames) on 32-frame clips of
    ``side`` px, one thread, batches of 64; the best of ``repeats`` timed passes."""
    from vlm.config import LearnedConfig
    from vlm.random_models import save_random_student

    with tempfile.TemporaryDirectory() as tmp:
        path = save_random_student(Path(tmp) / "student.pt", PROMPT, side)
        scorer = make_scorer(LearnedConfig(path=str(path)))
        rng = np.random.default_rng(0)
        clips = [rng.integers(0, 256, (32, side, side, 3), dtype=np.uint8) for _ in range(n_clips)]
        scorer.score(clips[:64], PROMPT)  # warm-up
        best = 0.0
        for _ in range(repeats):
            start = time.perf_counter()
            scorer.score(clips, PROMPT)
            best = max(best, n_clips / (time.perf_counter() - start))
        scorer.close()
    return best


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def start_oracle_server(latency_s: float, run_dir: Path) -> tuple[subprocess.Popen, str]:
    port = _free_port()
    cmd = [sys.executable, "-m", "vlmrl", "serve", "--server.port", str(port), "--run-dir", str(run_dir)]
    cmd += ["scorer:oracle", "--scorer.latency-s", str(latency_s)]
    proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    # The server stands in for a remote GPU box: at the lowest priority its own CPU (HTTP, JSON, image
    # decoding) takes only what the rollout leaves, instead of counting as training-side cost.
    os.setpriority(os.PRIO_PROCESS, proc.pid, 19)
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        try:
            if httpx.get(f"http://127.0.0.1:{port}/health", timeout=1).status_code == 200:
                return proc, f"http://127.0.0.1:{port}/v1"
        except httpx.HTTPError:
            time.sleep(0.2)
    proc.kill()
    raise RuntimeError("vlmrl serve did not come up")


class Rollout:
    """A SO-101 lift rollout that stores frames and progress per step like a replay buffer would."""

    def __init__(self, clip_length: int, clip_hop: int) -> None:
        from sim import SimConfig, make_env

        self.env = make_env(SimConfig(suite="so101", task="lift", cameras=("front",), image_size=128))
        self.env.action_space.seed(0)
        self.clip_length, self.clip_hop = clip_length, clip_hop
        self.frames: list[np.ndarray] = []
        self.progress: list[float] = []
        self.priorities = np.zeros(1 << 16, np.float32)
        self.lock = threading.Lock()
        self.next_clip = 0

    def load_clip(self, request: ClipRequest) -> Clip:
        idx = request.start + np.arange(request.length) * request.stride
        with self.lock:
            frames = np.stack([self.frames[i] for i in idx])
            progress = np.array([self.progress[i] for i in idx], np.float32)
        return Clip(frames, {"progress": progress})

    def on_scored(self, requests, scores) -> None:
        with self.lock:  # the priority write-back the buffer would do
            self.priorities[[r.clip_id for r in requests]] = scores

    def run(self, n_steps: int, worker: ScoringWorker | None) -> None:
        """``n_steps`` random steps; submits each new clip to ``worker`` if given."""
        self.env.reset()
        for _ in range(n_steps):
            obs, _, terminated, truncated, info = self.env.step(self.env.action_space.sample())
            with self.lock:
                self.frames.append(obs["pixels/front"])
                self.progress.append(float(info["progress"]))
            if len(self.frames) - self.next_clip >= self.clip_length:
                clip_id = len(self.frames) % len(self.priorities)
                request = ClipRequest(
                    clip_id=clip_id, episode=0, start=self.next_clip, length=self.clip_length
                )
                self.next_clip += self.clip_hop
                if worker is not None:
                    worker.submit([request])
            if terminated or truncated:
                self.env.reset()


def _scoring_cpu(worker: ScoringWorker, scorer: object) -> dict[int, float]:
    """CPU seconds so far of the worker thread and the HTTP client's threads, by thread id."""
    threads = [worker._thread, *getattr(getattr(scorer, "_pool", None), "_threads", ())]
    out = {}
    for thread in threads:
        if thread.ident is not None and thread.is_alive():
            out[thread.ident] = time.clock_gettime(time.pthread_getcpuclockid(thread.ident))
    return out


def async_overhead(n_steps: int, repeats: int, latency_s: float, batch_wait_s: float) -> dict[str, float]:
    """Alternates plain and scored rollout segments; pairs of neighbours cancel slow drifts in machine load.

    Wall clock gives the steps/s lost (``async_overhead``: the median over pairs). CPU time gives what
    the scoring costs this process, which other processes' load disturbs much less: per pair,
    1 - (process CPU of the plain segments) / (process CPU of the scored ones, their drains included),
    summed over all pairs (``async_overhead_cpu``; per-pair quartiles beside it), which is the steps/s lost when no scoring overlaps with stepping
    and rendering (a loaded machine); and the CPU of the scoring threads alone (worker: clip loading,
    frame encoding, HTTP, write-back) per clip and as a share of the total (``async_overhead_cpu_bound``).
    """
    with tempfile.TemporaryDirectory() as tmp:
        proc, url = start_oracle_server(latency_s, Path(tmp))
        try:
            scorer = make_scorer(
                OpenAIConfig(base_url=url, endpoint="score", num_frames=8, max_concurrency=2)
            )
            rollout = Rollout(clip_length=32, clip_hop=16)
            worker_cfg = WorkerConfig(batch_wait_s=batch_wait_s)
            worker = ScoringWorker(scorer, PROMPT, rollout.load_clip, rollout.on_scored, worker_cfg)
            # Warm-up with scoring: imports, the first connection and first-call costs are paid once
            # per run, not per clip, so they stay out of the steady-state figures.
            rollout.run(100, worker)
            worker.drain(60)
            warm = worker.metrics()["scored"]
            wall_ratio, cpu_pairs, scoring_cpu, rollout_cpu = [], [], 0.0, 0.0
            for i in track(range(repeats), description="rollout segments", transient=True):
                walls, cpus = {}, {}
                for scored in (i % 2 == 1, i % 2 == 0):  # alternate which goes first
                    w0, p0, s0 = time.perf_counter(), time.process_time(), _scoring_cpu(worker, scorer)
                    rollout.run(n_steps, worker if scored else None)
                    walls[scored] = time.perf_counter() - w0
                    if scored:
                        worker.drain(60)
                        spent = _scoring_cpu(worker, scorer)
                        scoring = sum(v - s0.get(k, 0.0) for k, v in spent.items())
                        scoring_cpu += scoring
                        rollout_cpu += time.process_time() - p0 - scoring
                    cpus[scored] = time.process_time() - p0
                wall_ratio.append(walls[False] / walls[True])
                cpu_pairs.append((cpus[False], cpus[True]))
            metrics = worker.metrics()
            worker.close()
            scorer.close()
        finally:
            proc.terminate()
            proc.wait(10)
    pairs = 1.0 - np.asarray(wall_ratio)  # below 0: within the run-to-run noise
    plain_cpu, scored_cpu = np.asarray(cpu_pairs).T
    cpu_overheads = 1.0 - plain_cpu / scored_cpu  # per pair: noisy, segments differ in what they render
    clips = metrics["scored"] - warm
    return {
        "async_overhead": float(np.median(pairs)),
        "async_overhead_q25": float(np.quantile(pairs, 0.25)),
        "async_overhead_q75": float(np.quantile(pairs, 0.75)),
        "async_overhead_pairs": [round(float(p), 4) for p in pairs],
        "async_overhead_cpu": float(1.0 - plain_cpu.sum() / scored_cpu.sum()),
        "async_overhead_cpu_q25": float(np.quantile(cpu_overheads, 0.25)),
        "async_overhead_cpu_q75": float(np.quantile(cpu_overheads, 0.75)),
        "async_overhead_cpu_bound": scoring_cpu / (rollout_cpu + scoring_cpu),
        "worker_cpu_ms_per_clip": 1e3 * scoring_cpu / max(clips, 1),
        "rollout_cpu_ms_per_step": 1e3 * rollout_cpu / (repeats * n_steps),
        "segments": repeats,
        "steps_per_segment": n_steps,
        "clips_scored": clips,
        "clips_dropped": metrics["dropped"],
        "clip_latency_ms_p50": metrics["clip_latency_ms_p50"],
        "server_latency_s": latency_s,
        "worker_batch_wait_s": batch_wait_s,
    }


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--quick", action="store_true", help="short run (fewer clips, steps and repeats)")
    parser.add_argument("--json", type=Path, default=None, help="write the figures to this JSON file")
    parser.add_argument(
        "--batch-wait-s", type=float, default=WorkerConfig().batch_wait_s, help="worker batch_wait_s"
    )
    parser.add_argument("--skip-hf", action="store_true", help="only measure the async overhead")
    args = parser.parse_args()
    torch.set_num_threads(1)

    result: dict[str, object] = {
        "arch": "SmolVLM-256M-Instruct (Idefics3), random weights, fp32 CPU, 1 thread",
        "loadavg_1min_at_start": os.getloadavg()[
            0
        ],  # other processes' load: the figures are noisier above ~1
        "cpu_count": os.cpu_count(),
    }
    overhead = async_overhead(
        n_steps=80 if args.quick else 160,
        repeats=120,  # pairs; quiet runs: 40 pairs gave medians 0.012-0.062, 120 pairs -0.002-0.014
        latency_s=0.05,
        batch_wait_s=args.batch_wait_s,
    )
    result.update(overhead)
    if not args.skip_hf:
        n_clips, frames = (2, 2) if args.quick else (8, 4)
        batched, single = hf_clips_per_s(
            n_clips, frames, batch_size=n_clips if args.quick else 4, warmup=not args.quick
        )
        result.update(
            clips_per_s=batched,
            clips_per_s_batch1=single,
            frames_per_clip=frames,
            batching_ratio=batched / single,
        )
        print(
            f"hf SmolVLM-256M-like: {batched:.3f} clips/s ({frames} frames of 128 px), batch 1: {single:.3f} clips/s, ratio {batched / single:.2f}x"
        )
        learned = learned_clips_per_s(256 if args.quick else 1024)
        result.update(learned_clips_per_s=learned, learned_frame_px=64, learned_vs_hf=learned / batched)
        print(
            f"scorer:learned: {learned:.0f} clips/s (64 px), {learned / batched:.0f}x the hf scorer (target >= 1000x)"
        )
    print(
        f"SO-101 lift rollout with async scoring of every clip vs without: async_overhead "
        f"{overhead['async_overhead']:.3f} (wall clock; target <= 0.05; VLM-RB reports 0.12, ratio to it "
        f"{overhead['async_overhead'] / 0.12:.2f}); quartiles {overhead['async_overhead_q25']:.3f}.."
        f"{overhead['async_overhead_q75']:.3f} over {overhead['segments']} pairs; by CPU time "
        f"{overhead['async_overhead_cpu']:.3f} (per-pair quartiles {overhead['async_overhead_cpu_q25']:.3f}.."
        f"{overhead['async_overhead_cpu_q75']:.3f}); scoring threads {overhead['worker_cpu_ms_per_clip']:.2f} "
        f"ms CPU per clip, rollout {overhead['rollout_cpu_ms_per_step']:.2f} ms per step"
    )
    result["loadavg_1min_at_end"] = os.getloadavg()[0]
    if args.json is not None:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(json.dumps(result, indent=2) + "\n")


if __name__ == "__main__":
    main()
