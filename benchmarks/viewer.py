"""`vlmrl view` on a 1,000-episode store of 64 px frames: time to the first frame and frames served per
second while scrubbing, through real HTTP requests to `vlmrl view` running in a subprocess.

    python benchmarks/viewer.py --json runs/bench/viewer.json          # 1,000 episodes of 50 steps
    python benchmarks/viewer.py --quick                                # 1,000 episodes of 10 steps

- ``first_frame_ms``: from asking for the page to holding the first frame's bytes, as the page does it
  (page, script, /api/info, /api/episodes, the first episode's series, its first frame); cold: the server
  has just started. ``startup_ms`` is launch to listening (opening the store), reported beside it.
- ``scrub_fps``: frames served per second while dragging the scrubber over episodes never shown before
  (runs of consecutive steps forward and back, one request at a time, as a drag sends them), and
  ``random_fps`` for frames of random episodes and steps (the worst case: every one a miss).
- the reference: the same frames read with the buffer's reader and encoded in one process, no HTTP
  (``direct_fps``); the ratio says what serving costs.

Targets: first_frame_ms <= 1000 and scrub_fps >= 30. The store is built once under --work-dir and reused.
Wall-clock figures depend on what else runs on the cores (this machine kind is shared with training runs),
so the CPU seconds the server process and this client spent are recorded beside them (``*_cpu_ms``,
``server_cpu_ms_per_frame``): what the same work costs with a core to itself.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import shutil
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
from pixel_learning import git_commit

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

SIDE = 64
TARGET_FIRST_FRAME_MS, TARGET_SCRUB_FPS = 1000.0, 30.0


def cpu_model() -> str:
    try:
        lines = Path("/proc/cpuinfo").read_text().splitlines()
    except OSError:
        return platform.processor() or "unknown"
    return next((line.split(":", 1)[1].strip() for line in lines if line.startswith("model name")), "unknown")


def build_store(path: Path, episodes: int, steps: int) -> None:
    """A recording-like store: camera-like 64 px frames (a scene plus sensor noise, which PNG barely
    compresses), joints, actions, success info and one scorer's clip scores."""
    from buffer import BufferConfig, make_buffer

    rng = np.random.default_rng(0)
    yy, xx = np.mgrid[0:SIDE, 0:SIDE]
    scene = np.stack([yy * 2 + 40, xx * 2 + 40, np.full_like(yy, 90)], -1).astype(np.int16)
    noise = rng.normal(0, 3, (97, SIDE, SIDE, 3)).astype(np.int16)
    obs = {"state": ((6,), np.dtype(np.float32)), "pixels/front": ((SIDE, SIDE, 3), np.dtype(np.uint8))}
    cfg = BufferConfig(
        storage="zarr", capacity_steps=episodes * (steps + 1) + 16, clip_length=8, clip_stride=2
    )
    buf = make_buffer(cfg, obs, 6, ("success", "progress"), path=str(path))
    for e in range(episodes):
        t = np.arange(steps + 1)
        frames = scene[None] + noise[(e * 7 + t) % len(noise)]
        frames[:, 20:30, (t * 40 // steps)[:, None] + np.arange(10)] = (200, 30, 30)
        frames = np.clip(frames, 0, 255).astype(np.uint8)
        progress = (t / steps).astype(np.float32) * (e % 2)
        buf.add_episode(
            {"state": rng.normal(size=(steps + 1, 6)).astype(np.float32), "pixels/front": frames},
            rng.normal(size=(steps, 6)).astype(np.float32),
            np.zeros(steps, np.float32),
            np.eye(1, steps, steps - 1, dtype=bool)[0],
            np.zeros(steps, bool),
            {"success": (progress >= 1).astype(np.float32), "progress": progress},
        )
    clips = buf.new_clips()
    buf.set_scores([c.clip_id for c in clips], rng.uniform(size=len(clips)).astype(np.float32), "oracle")
    buf.close()
    (path / "bench.json").write_text(json.dumps({"episodes": episodes, "steps": steps, "side": SIDE}))


def cpu_ms(pid: int | None = None) -> float:
    """CPU time (user + system) of a process so far, in ms (this one when ``pid`` is None)."""
    if pid is None:
        t = os.times()
        return (t.user + t.system) * 1000
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) * 1000 / os.sysconf("SC_CLK_TCK")


def start_server(store: Path) -> tuple[subprocess.Popen, str, float]:
    """`vlmrl view STORE --port 0` in a subprocess: (process, its address, ms from launch to listening)."""
    env = os.environ | {"PYTHONPATH": f"{ROOT}{os.pathsep}{os.environ.get('PYTHONPATH', '')}"}
    t0 = time.perf_counter()
    proc = subprocess.Popen(
        [sys.executable, "-m", "vlmrl", "view", str(store), "--port", "0"],
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        env=env,
        cwd=ROOT,
    )
    assert proc.stdout is not None
    for line in proc.stdout:
        if "serving at " in line:
            url = line.split("serving at ", 1)[1].split()[0]
            return proc, url, (time.perf_counter() - t0) * 1000
    raise SystemExit(f"viewer: the server did not start (exit {proc.wait()})")


def first_frame(client, cold: bool = True) -> float:
    """ms from asking for the page to the first frame's bytes, with the page's own requests in order."""
    t0 = time.perf_counter()
    assert client.get("/").status_code == 200
    client.get("/static/viewer.js")
    info = client.get("/api/info").json()
    episodes = client.get("/api/episodes").json()["episodes"]
    first = episodes[0]["id"]
    client.get(f"/api/episodes/{first}")
    response = client.get(f"/api/frames/{info['cameras'][0]['name']}/{first}/0")
    assert response.status_code == 200 and len(response.content) > 100
    return (time.perf_counter() - t0) * 1000


def scrub_path(rng: np.random.Generator, episodes: list[int], steps: int, n: int) -> list[tuple[int, int]]:
    """(episode, step) as a drag over episodes: runs of consecutive steps forward, then back, then a jump."""
    out: list[tuple[int, int]] = []
    for episode in episodes:
        step = int(rng.integers(0, steps + 1))
        for _ in range(3):
            run = int(rng.integers(4, 12))
            direction = 1 if rng.random() < 0.6 else -1
            for _ in range(run):
                out.append((episode, step))
                step = min(steps, max(0, step + direction))
            step = int(rng.integers(0, steps + 1))
        if len(out) >= n:
            break
    return out[:n]


def rate(client, camera: str, path: list[tuple[int, int]]) -> float:
    t0 = time.perf_counter()
    for episode, step in path:
        response = client.get(f"/api/frames/{camera}/{episode}/{step}")
        assert response.status_code == 200
    return len(path) / (time.perf_counter() - t0)


def direct_rate(store: Path, path: list[tuple[int, int]]) -> float:
    """The reference: the same frames read with the buffer's reader and PNG-encoded, one at a time."""
    from vlmrl.view.frames import encode
    from vlmrl.view.source import EpisodeStore, locate

    source = EpisodeStore(locate(store), 8, 2)
    try:
        t0 = time.perf_counter()
        for episode, step in path:
            start, _ = source.rows(episode)
            encode(source.read_frames("front", np.array([start + step]))[0], "png")
        return len(path) / (time.perf_counter() - t0)
    finally:
        source.close()


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--json", type=Path, help="write the figures here")
    parser.add_argument(
        "--quick", action="store_true", help="episodes of 10 steps instead of 50, fewer frames"
    )
    parser.add_argument("--episodes", type=int, default=1000)
    parser.add_argument("--work-dir", type=Path, default=ROOT / "runs" / "bench" / "viewer")
    args = parser.parse_args()
    import httpx

    steps = 10 if args.quick else 50
    store = args.work_dir / f"episodes-{args.episodes}x{steps}.zarr"
    wanted = {"episodes": args.episodes, "steps": steps, "side": SIDE}
    if not (store / "bench.json").is_file() or json.loads((store / "bench.json").read_text()) != wanted:
        shutil.rmtree(store, ignore_errors=True)
        store.parent.mkdir(parents=True, exist_ok=True)
        t0 = time.perf_counter()
        build_store(store, args.episodes, steps)
        print(f"viewer: built {store} in {time.perf_counter() - t0:.0f} s")
    for stale in store.parent.glob(f"{store.name}.labels.json"):
        stale.unlink()
    rng = np.random.default_rng(1)
    order = rng.permutation(args.episodes).tolist()
    n_frames = 300 if args.quick else 1500
    scrub = scrub_path(rng, order[: len(order) // 2], steps, n_frames)
    random = [
        (int(e), int(rng.integers(0, steps + 1))) for e in rng.choice(order[len(order) // 2 :], n_frames)
    ]
    proc, url, startup_ms = start_server(store)
    try:
        with httpx.Client(base_url=url, timeout=60) as client:
            startup_cpu = cpu_ms(proc.pid)
            server0, client0 = startup_cpu, cpu_ms()
            first_ms = first_frame(client)
            first_cpu = cpu_ms(proc.pid) - server0 + cpu_ms() - client0
            launch_to_first_ms = startup_ms + first_ms
            server0 = cpu_ms(proc.pid)
            scrub_fps = rate(client, "front", scrub)
            server_per_frame = (cpu_ms(proc.pid) - server0) / len(scrub)
            random_fps = rate(client, "front", random)
    finally:
        proc.terminate()
        proc.wait(10)
    direct_fps = direct_rate(store, scrub)
    result = {
        "benchmark": "viewer",
        "episodes": args.episodes,
        "steps_per_episode": steps,
        "frame_px": SIDE,
        "first_frame_ms": round(first_ms, 1),
        "startup_ms": round(startup_ms, 1),
        "launch_to_first_frame_ms": round(launch_to_first_ms, 1),
        "startup_cpu_ms": round(startup_cpu, 1),
        "first_frame_cpu_ms": round(first_cpu, 1),
        "server_cpu_ms_per_frame": round(server_per_frame, 2),
        "load_average": os.getloadavg()[0],
        "scrub_fps": round(scrub_fps, 1),
        "random_fps": round(random_fps, 1),
        "direct_fps": round(direct_fps, 1),
        "scrub_over_direct": round(scrub_fps / direct_fps, 3),
        "frames_measured": n_frames,
        "targets": {"first_frame_ms": TARGET_FIRST_FRAME_MS, "scrub_fps": TARGET_SCRUB_FPS},
        "meets_targets": first_ms <= TARGET_FIRST_FRAME_MS and scrub_fps >= TARGET_SCRUB_FPS,
        "quick": args.quick,
        "cpu_model": cpu_model(),
        "git_commit": git_commit(),
    }
    print(
        f"viewer: {args.episodes} episodes x {steps} steps, {SIDE} px: first frame {first_ms:.0f} ms (target <= "
        f"{TARGET_FIRST_FRAME_MS:.0f}; server start {startup_ms:.0f} ms), scrub {scrub_fps:.0f} fps (target >= "
        f"{TARGET_SCRUB_FPS:.0f}), random {random_fps:.0f} fps; direct reads {direct_fps:.0f} fps, "
        f"served/direct {scrub_fps / direct_fps:.2f}; CPU: server start {startup_cpu:.0f} ms, first frame "
        f"{first_cpu:.0f} ms, {server_per_frame:.1f} ms a scrubbed frame (load average {os.getloadavg()[0]:.1f})"
    )
    if args.json:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(json.dumps(result, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
