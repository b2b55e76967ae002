"""Writer process for the crash test: appends deterministic episodes to a zarr buffer until killed.

Usage: python crash_writer.py STORE_PATH. Prints "ready" once the store is open, then "committed E"
after each episode E, then scores E's clips. Episode E's content and scores are pure functions of E.
"""

from __future__ import annotations

import sys

import numpy as np

from buffer import BufferConfig, make_buffer

OBS_SPEC = {"state": ((3,), np.float32), "pixels/front": ((12, 10, 3), np.uint8)}
CONFIG = BufferConfig(storage="zarr", capacity_steps=160, frames_per_shard=16, frame_codec="zstd")


def episode_length(e: int) -> int:
    return 4 + (e * 7) % 11


def episode_score(e: int) -> float:
    """The score the writer gives every clip of episode e."""
    return (e % 10) / 10


def episode_arrays(e: int) -> dict[str, np.ndarray]:
    """Rows of episode e as stored (T transitions + final observation row)."""
    t = episode_length(e)
    rng = np.random.default_rng(e)
    return {
        "state": rng.normal(size=(t + 1, 3)).astype(np.float32),
        "pixels/front": rng.integers(0, 256, (t + 1, 12, 10, 3), dtype=np.uint8),
        "action": np.concatenate([rng.normal(size=(t, 2)), np.zeros((1, 2))]).astype(np.float32),
        "reward": np.concatenate([rng.normal(size=t), [0.0]]).astype(np.float32),
    }


def main(path: str) -> None:
    buf = make_buffer(CONFIG, OBS_SPEC, 2, info_keys=(), path=path)
    print("ready", flush=True)
    while True:
        e = buf.storage.episodes().first + buf.storage.episodes().count
        a = episode_arrays(e)
        t = episode_length(e)
        for i in range(t):
            obs = {"state": a["state"][i], "pixels/front": a["pixels/front"][i]}
            nxt = {"state": a["state"][i + 1], "pixels/front": a["pixels/front"][i + 1]}
            buf.add_step(obs, a["action"][i], a["reward"][i], i == t - 1, False, {}, nxt)
        print("committed", e, flush=True)
        clips = buf.new_clips()
        buf.set_scores([c.clip_id for c in clips], [episode_score(c.episode) for c in clips], "oracle")


if __name__ == "__main__":
    main(sys.argv[1])
