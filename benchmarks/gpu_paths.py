"""The learner's update and the VLM scorers on one GPU, against the same machine's CPU in the same run.

Run this on a machine with a CUDA GPU (it refuses without one); the CPU figures are that machine's cores,
measured in the same process, so the ratios compare like with like.

1. SAC update (``sac``): the ``--recipe deployable`` lift learner as ``vlmrl train`` builds it (robot
   observations: six joints and a 64 px front camera, the asymmetric critic's 23-value privileged state,
   LayerNorm critics, behaviour cloning on the prior half of the batch), one update on a random batch,
   updates/s on the GPU (``--agent.device cuda``) and on the CPU with one torch thread (what a training run
   uses) and with every core; at batch 256 (the recipe's) and 1024.
2. hf scorer (``hf``): the ``hf`` backend on the SmolVLM-256M-Instruct architecture (Idefics3: SigLIP-B/16
   at 512 px + SmolLM2-135M) with random weights (latency does not depend on weight values), 4 frames of
   128 px per clip; clips/s in bf16 on the GPU at batch 1, 8 and 32, and in fp32 on every CPU core at
   batch 4 (the reference).
3. learned scorer (``learned``): ``scorer:learned`` (the conv clip scorer of ``vlmrl scorer fit``, random
   weights, 4 frames of 64 px) on the GPU and on one CPU thread, batches of 64.
4. where the time goes (``profile``): the hf scorer's input preparation (its processor on the CPU) against
   its forward pass at batch 32, and one SAC update's kernel launches, device time and host-to-device copies
   (torch.profiler, 5 updates after 10).

    python benchmarks/gpu_paths.py --json results/bench/gpu_paths.json

JSON keys (one level, as the results page shows them): ``gpu``, ``cpu_count``, ``cpu_model``, ``torch``,
``python``, ``transformers``; ``sac_batch_{256,1024}_{gpu_updates_per_s, cpu_1_thread_updates_per_s,
cpu_N_threads_updates_per_s, gpu_vs_cpu_1_thread, gpu_vs_cpu_all_threads}``;
``hf_gpu_bf16_batch_{1,8,32}_clips_per_s``, ``hf_cpu_fp32_batch_4_clips_per_s``, ``hf_gpu_best_vs_cpu``;
``learned_gpu_clips_per_s``, ``learned_cpu_1_thread_clips_per_s``, ``learned_gpu_vs_cpu_1_thread``;
``profile_hf_batch_32_{inputs,forward}_ms``, ``profile_sac_batch_256_{kernel_launches,device_ms,
host_to_device_copy_ms}_per_update``; ``git_commit``. A part
that failed has ``PART_error`` instead.

Each figure is the best of ``--repeats`` timed passes after a warm-up, timed with the wall clock after
``torch.cuda.synchronize()``.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import numpy as np
import torch
from scoring import PROMPT  # the scoring benchmark's prompt, so the two measure the same request

if TYPE_CHECKING:
    from vlm.config import Device

IMAGE_PX = 64
# What `vlmrl train --recipe deployable --sim.task lift` hands the agent (policy keys, then the privileged
# state); tests/test_gpu_paths.py checks it against the twin, which this script does not import.
JOINTS = ("shoulder_pan", "shoulder_lift", "elbow_flex", "wrist_flex", "wrist_roll", "gripper")
LIFT_SPEC: dict[str, tuple[tuple[int, ...], str]] = {
    **{f"{j}.pos": ((1,), "float32") for j in JOINTS},
    "pixels/front": ((IMAGE_PX, IMAGE_PX, 3), "uint8"),
    "state": ((23,), "float32"),
}
ACTION_DIM = 5
"""The recipe's lift action: 5 end-effector values since issue #32's recipe change (the figures in
results/bench/gpu_paths.json were measured with its 6 joint deltas before; one action value fewer in the actor's
and critics' first and last layers)."""


def best_rate(fn: Callable[[], object], items: int, repeats: int, cuda: bool) -> float:
    """Items/s of ``fn`` (which handles ``items`` items): the best of ``repeats`` passes after one warm-up."""
    fn()
    best = 0.0
    for _ in range(repeats):
        if cuda:
            torch.cuda.synchronize()
        start = time.perf_counter()
        fn()
        if cuda:
            torch.cuda.synchronize()
        best = max(best, items / (time.perf_counter() - start))
    return best


def deployable_agent_config(device: str) -> Any:
    """The deployable lift recipe's SACConfig on ``device`` (the recipe table applied without the twin)."""
    from agents.config import SACConfig
    from vlmrl.online.recipes import DEPLOYABLE, with_setting

    # TrainConfig's agent defaults, written out: vlmrl.online.config imports tyro and zarr's codecs, which a GPU
    # machine need not have (tests/benchmarks/test_gpu_paths.py checks this is TrainConfig().agent's recipe)
    cfg = SACConfig(hidden_dims=(128, 128), init_alpha=0.1, device=device)
    for path, value in {**DEPLOYABLE.settings, **DEPLOYABLE.task_settings["lift"]}.items():
        if path.startswith("agent."):
            cfg = with_setting(cfg, path.removeprefix("agent."), value)
    return cfg


def random_batch(batch_size: int, seed: int) -> Any:
    from buffer.batch import Batch

    rng = np.random.default_rng(seed)

    def obs() -> dict[str, np.ndarray]:
        return {
            k: rng.integers(0, 256, (batch_size, *shape), dtype=np.uint8)
            if dtype == "uint8"
            else rng.normal(size=(batch_size, *shape)).astype(np.float32)
            for k, (shape, dtype) in LIFT_SPEC.items()
        }

    ones = np.ones(batch_size, np.float32)
    return Batch(
        obs(),
        rng.uniform(-1, 1, (batch_size, ACTION_DIM)).astype(np.float32),
        rng.normal(size=batch_size).astype(np.float32),
        obs(),
        0 * ones,
        0.95 * ones,
        ones,
        np.arange(batch_size),
        prior=np.arange(batch_size) < batch_size // 2,  # the demonstrations' half of an RLPD batch
    )


def deployable_agent(device: Device) -> Any:
    """The deployable lift learner on ``device``, as `vlmrl train` builds it (the privileged state for the critics)."""
    import gymnasium as gym

    from agents.sac import SAC

    spec = {k: (shape, np.dtype(dtype)) for k, (shape, dtype) in LIFT_SPEC.items()}
    box = gym.spaces.Box(-1.0, 1.0, (ACTION_DIM,), np.float32)
    return SAC(deployable_agent_config(device), spec, box, privileged_keys=("state",))


def sac_updates_per_s(device: Device, batch_size: int, updates: int, repeats: int) -> float:
    agent = deployable_agent(device)
    batch = random_batch(batch_size, 0)

    def run() -> None:
        for _ in range(updates):
            agent.update(batch)

    return best_rate(run, updates, repeats, cuda=device == "cuda")


def sac_figures(device: Device, repeats: int) -> dict[str, Any]:
    cores = os.cpu_count() or 1
    out: dict[str, Any] = {}
    for batch_size in (256, 1024):
        torch.set_num_threads(cores)
        gpu = sac_updates_per_s(device, batch_size, 50, repeats)
        many = sac_updates_per_s("cpu", batch_size, 5, repeats)
        torch.set_num_threads(1)
        one = sac_updates_per_s("cpu", batch_size, 5, repeats)
        out[f"batch_{batch_size}"] = {
            "gpu_updates_per_s": gpu,
            "cpu_1_thread_updates_per_s": one,
            f"cpu_{cores}_threads_updates_per_s": many,
            "gpu_vs_cpu_1_thread": gpu / one,
            "gpu_vs_cpu_all_threads": gpu / many,
        }
        print(
            f"SAC update, batch {batch_size}: GPU {gpu:.1f}/s, CPU 1 thread {one:.2f}/s "
            f"({gpu / one:.1f}x), CPU {cores} threads {many:.2f}/s ({gpu / many:.1f}x)",
            flush=True,
        )
    torch.set_num_threads(cores)
    return out


def hf_figures(device: Device, repeats: int, size: str = "smolvlm-256m") -> dict[str, Any]:
    from vlm import HFConfig
    from vlm.backends.hf import HFScorer
    from vlm.random_models import build_random_vlm

    rng = np.random.default_rng(0)
    clips = [rng.integers(0, 256, (32, 128, 128, 3), dtype=np.uint8) for _ in range(64)]
    frames = 4
    out: dict[str, Any] = {"frames_per_clip": frames, "frame_px": 128}
    model, processor = build_random_vlm("idefics3", size)  # type: ignore[arg-type]
    gpu_model = model.to(device, dtype=torch.bfloat16)
    for batch_size in (1, 8, 32):
        scorer = HFScorer(
            HFConfig(
                model="random-smolvlm-256m",
                num_frames=frames,
                batch_size=batch_size,
                device=device,
                dtype="bfloat16",
            ),
            model=gpu_model,
            processor=processor,
        )
        n = 4 * batch_size if batch_size > 1 else 8
        rate = best_rate(lambda: scorer.score(clips[:n], PROMPT), n, repeats, cuda=device == "cuda")  # noqa: B023
        out[f"gpu_bf16_batch_{batch_size}_clips_per_s"] = rate
        print(f"hf SmolVLM-256M-like, GPU bf16, batch {batch_size}: {rate:.1f} clips/s", flush=True)
    del gpu_model, scorer
    if device == "cuda":
        torch.cuda.empty_cache()
    model, processor = build_random_vlm("idefics3", size)  # type: ignore[arg-type]
    scorer = HFScorer(
        HFConfig(model="random-smolvlm-256m", num_frames=frames, batch_size=4, device="cpu", dtype="float32"),
        model=model,
        processor=processor,
    )
    cpu = best_rate(lambda: scorer.score(clips[:8], PROMPT), 8, 1, cuda=False)
    out["cpu_fp32_batch_4_clips_per_s"] = cpu
    out["gpu_best_vs_cpu"] = max(v for k, v in out.items() if k.startswith("gpu_")) / cpu
    print(
        f"hf SmolVLM-256M-like, CPU fp32 ({os.cpu_count()} threads), batch 4: {cpu:.2f} clips/s", flush=True
    )
    return out


def learned_figures(device: Device, repeats: int) -> dict[str, Any]:
    from vlm import make_scorer
    from vlm.config import LearnedConfig
    from vlm.random_models import save_random_student

    rng = np.random.default_rng(0)
    clips = [rng.integers(0, 256, (32, IMAGE_PX, IMAGE_PX, 3), dtype=np.uint8) for _ in range(1024)]
    out: dict[str, Any] = {"frame_px": IMAGE_PX, "frames_per_clip": 4}
    with tempfile.TemporaryDirectory() as tmp:
        path = save_random_student(Path(tmp) / "student.pt", PROMPT, IMAGE_PX)
        for name, on in (("gpu", device), ("cpu_1_thread", "cpu")):
            torch.set_num_threads(1 if name == "cpu_1_thread" else os.cpu_count() or 1)
            scorer = make_scorer(LearnedConfig(path=str(path), device=on))
            rate = best_rate(lambda: scorer.score(clips, PROMPT), len(clips), repeats, cuda=on == "cuda")  # noqa: B023
            scorer.close()
            out[f"{name}_clips_per_s"] = rate
            print(f"scorer:learned, {name} ({on}): {rate:.0f} clips/s", flush=True)
    out["gpu_vs_cpu_1_thread"] = out["gpu_clips_per_s"] / out["cpu_1_thread_clips_per_s"]
    return out


def profile_figures(device: Device, repeats: int) -> dict[str, Any]:
    """Where the time goes: the hf scorer's input preparation (the processor on the CPU and the copy to the
    device) against its forward pass, and one SAC update's kernel launches and device time."""
    from torch.profiler import ProfilerActivity, profile

    from vlm import HFConfig
    from vlm.backends.hf import HFScorer
    from vlm.clip import as_clips
    from vlm.random_models import build_random_vlm

    def sync() -> None:
        if device == "cuda":
            torch.cuda.synchronize()

    out: dict[str, Any] = {}
    rng = np.random.default_rng(0)
    clips = as_clips([rng.integers(0, 256, (32, 128, 128, 3), dtype=np.uint8) for _ in range(32)])
    model, processor = build_random_vlm("idefics3", "smolvlm-256m")
    model = model.to(device, dtype=torch.bfloat16)
    cfg = HFConfig(model="random-smolvlm-256m", num_frames=4, batch_size=32, device=device, dtype="bfloat16")
    scorer = HFScorer(cfg, model=model, processor=processor)
    inputs_s, forward_s = [], []
    for _ in range(repeats + 1):  # the first pass warms up
        sync()
        start = time.perf_counter()
        inputs = scorer._inputs(clips, PROMPT)
        sync()
        middle = time.perf_counter()
        with torch.inference_mode():
            scorer.model(**inputs, **scorer._forward_kwargs)
        sync()
        inputs_s.append(middle - start)
        forward_s.append(time.perf_counter() - middle)
    out["hf_batch_32_inputs_ms"] = 1e3 * min(inputs_s[1:])
    out["hf_batch_32_forward_ms"] = 1e3 * min(forward_s[1:])
    print(
        f"hf batch 32: inputs {out['hf_batch_32_inputs_ms']:.0f} ms, forward {out['hf_batch_32_forward_ms']:.0f} ms"
    )
    del model, scorer
    agent = deployable_agent(device)
    batch = random_batch(256, 0)
    for _ in range(10):
        agent.update(batch)
    sync()
    activities = [ProfilerActivity.CPU] + ([ProfilerActivity.CUDA] if device == "cuda" else [])
    updates = 5
    with profile(activities=activities) as prof:
        for _ in range(updates):
            agent.update(batch)
        sync()
    events = prof.key_averages()
    launches = sum(e.count for e in events if e.key in ("cudaLaunchKernel", "cudaLaunchKernelExC"))
    device_us = sum(getattr(e, "self_device_time_total", 0.0) for e in events)
    copy_us = sum(
        getattr(e, "self_device_time_total", 0.0) for e in events if e.key.startswith("Memcpy HtoD")
    )
    out["sac_batch_256_kernel_launches_per_update"] = launches / updates
    out["sac_batch_256_device_ms_per_update"] = device_us / 1e3 / updates
    out["sac_batch_256_host_to_device_copy_ms_per_update"] = copy_us / 1e3 / updates
    print(
        f"SAC update, batch 256: {launches / updates:.0f} kernel launches, {device_us / 1e3 / updates:.2f} ms "
        f"of device time ({copy_us / 1e3 / updates:.2f} ms host-to-device copies)",
        flush=True,
    )
    return out


def flat(figures: dict[str, Any], prefix: str = "") -> dict[str, Any]:
    """One level of ``name=value`` figures (``sac.batch_256.gpu_updates_per_s`` -> ``sac_batch_256_gpu_...``),
    as the results page shows a benchmark's scalars."""
    out: dict[str, Any] = {}
    for key, value in figures.items():
        if isinstance(value, dict):
            out.update(flat(value, f"{prefix}{key}_"))
        else:
            out[f"{prefix}{key}"] = value
    return out


def cpu_model() -> str:
    for line in Path("/proc/cpuinfo").read_text().splitlines():
        if line.startswith("model name"):
            return line.split(":", 1)[1].strip()
    return platform.machine()


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--json", type=Path, default=None, help="write the figures to this JSON file")
    parser.add_argument("--repeats", type=int, default=3, help="timed passes per figure (the best counts)")
    parser.add_argument(
        "--device",
        default="cuda",
        choices=["cuda", "cpu"],
        help="the accelerator's torch device; cpu only checks that the script runs (its figures mean nothing)",
    )
    parser.add_argument(
        "--parts",
        nargs="+",
        default=["sac", "hf", "learned", "profile"],
        choices=["sac", "hf", "learned", "profile"],
    )
    args = parser.parse_args()
    if args.device == "cuda" and not torch.cuda.is_available():
        sys.exit("gpu_paths: no CUDA GPU is visible; this benchmark measures the GPU against the CPU")
    result: dict[str, Any] = {
        "gpu": torch.cuda.get_device_name(0) if args.device == "cuda" else args.device,
        "cpu_count": os.cpu_count(),
        "cpu_model": cpu_model(),
        "torch": torch.__version__,
        "python": platform.python_version(),
    }
    try:
        commit = subprocess.run(["git", "rev-parse", "HEAD"], capture_output=True, text=True, check=True)
        dirty = subprocess.run(["git", "status", "--porcelain"], capture_output=True, text=True, check=True)
        result["git_commit"] = commit.stdout.strip() + (
            " (uncommitted changes)" if dirty.stdout.strip() else ""
        )
    except (OSError, subprocess.CalledProcessError):
        pass  # a copy of the tree without its git folder
    try:
        import transformers

        result["transformers"] = transformers.__version__
    except ImportError:
        pass
    parts = {"sac": sac_figures, "hf": hf_figures, "learned": learned_figures, "profile": profile_figures}
    for name in args.parts:
        try:
            result[name] = parts[name](args.device, args.repeats)
        except Exception as exc:  # one part's failure must not cost the others' figures on a leased GPU
            result[name] = {"error": f"{type(exc).__name__}: {exc}"}
            print(f"{name}: {type(exc).__name__}: {exc}", flush=True)
        if args.json is not None:  # written after every part: a run cut short keeps what it measured
            args.json.parent.mkdir(parents=True, exist_ok=True)
            args.json.write_text(json.dumps(flat(result), indent=2) + "\n")


if __name__ == "__main__":
    main()
