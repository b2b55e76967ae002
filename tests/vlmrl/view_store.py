"""A small recorded store for the viewer's tests, made with the buffer API: a cube that an arm lifts in
successful episodes and drops in failed ones, two cameras, success/progress info and two scorers' clip
scores and aux rewards."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import zarr

from buffer import BufferConfig, make_buffer

TASK = "Lift the red cube."
CLIP_LENGTH, CLIP_STRIDE = 4, 2


def scene(progress: float, lifted: bool, side: int, wrist: bool, rng: np.random.Generator) -> np.ndarray:
    """One frame: a table, an arm reaching for a cube, the cube raised by ``progress`` when ``lifted``."""
    import cv2

    h = w = side
    frame = np.zeros((h, w, 3), np.uint8)
    sky = np.linspace(200, 150, h // 2)[:, None, None] * np.array([0.8, 0.9, 1.0])
    frame[: h // 2] = sky.astype(np.uint8)
    frame[h // 2 :] = (150, 120, 90)
    s = side / 64
    cube_y = int((44 - (24 * progress if lifted else 0)) * s)
    cube_x = int(40 * s)
    if wrist:  # closer: the cube fills more of the frame
        cube_x, cube_y, size = w // 2, int(h * (0.7 - 0.3 * progress * lifted)), int(14 * s)
    else:
        size = int(7 * s)
    cv2.rectangle(frame, (cube_x - size, cube_y - size), (cube_x + size, cube_y + size), (210, 40, 40), -1)
    base = (int(8 * s), int(56 * s))
    hand = (
        int(base[0] + (cube_x - base[0]) * min(1.0, progress * 1.6)),
        int(base[1] - 30 * s + (cube_y - size - base[1] + 30 * s) * min(1.0, progress * 1.6)),
    )
    if not wrist:
        elbow = (int((base[0] + hand[0]) / 2), int(12 * s))
        cv2.line(frame, base, elbow, (60, 60, 70), max(1, int(3 * s)))
        cv2.line(frame, elbow, hand, (60, 60, 70), max(1, int(3 * s)))
        cv2.circle(frame, hand, max(1, int(3 * s)), (240, 200, 40), -1)
    noise = rng.normal(0, 3, frame.shape)
    return np.clip(frame + noise, 0, 255).astype(np.uint8)


def make_view_store(
    path: Path,
    outcomes: tuple[bool, ...] = (True, False, True, False),
    steps: int = 16,
    side: int = 48,
    cameras: tuple[str, ...] = ("front", "wrist"),
    info: tuple[str, ...] = ("success", "progress"),
    scorers: tuple[str, ...] = ("oracle", "noisy"),
    frames_per_shard: int = 128,
    seed: int = 0,
) -> Path:
    """Episodes of ``steps`` steps (success per ``outcomes``) in a zarr store at ``path``; returns it."""
    rng = np.random.default_rng(seed)
    obs = {"state": ((6,), np.dtype(np.float32))}
    obs |= {f"pixels/{c}": ((side, side, 3), np.dtype(np.uint8)) for c in cameras}
    cfg = BufferConfig(
        storage="zarr",
        capacity_steps=max(64, len(outcomes) * (steps + 1) + 8),
        frames_per_shard=frames_per_shard,
        clip_length=CLIP_LENGTH,
        clip_stride=CLIP_STRIDE,
    )
    buf = make_buffer(cfg, obs, 6, info, path=str(path))
    progress_of: dict[int, np.ndarray] = {}
    for ok in outcomes:
        t = steps
        progress = np.linspace(0, 1 if ok else 0.45, t + 1).astype(np.float32)
        joints = np.stack([np.sin(np.linspace(0, 2, t + 1) * (j + 1)) for j in range(6)], 1).astype(
            np.float32
        )
        infos = {"success": (progress >= 1).astype(np.float32), "progress": progress}
        frames = {
            f"pixels/{c}": np.stack([scene(float(p), ok, side, c == "wrist", rng) for p in progress])
            for c in cameras
        }
        episode = buf.add_episode(
            obs={"state": joints, **frames},
            action=np.diff(joints, axis=0),
            reward=(progress[1:] >= 1).astype(np.float32),
            terminated=np.eye(1, t, t - 1, dtype=bool)[0] if ok else np.zeros(t, bool),
            truncated=np.zeros(t, bool) if ok else np.eye(1, t, t - 1, dtype=bool)[0],
            info={k: infos[k] for k in info},
        )
        progress_of[episode] = progress
    clips = buf.new_clips()
    for k, scorer in enumerate(scorers):
        scores = np.array(
            [
                np.clip(
                    progress_of[c.episode][c.start + (c.length - 1) * c.stride] + rng.normal(0, 0.2 * k), 0, 1
                )
                for c in clips
            ],
            np.float32,
        )
        buf.set_scores([c.clip_id for c in clips], scores, scorer)
        for e in progress_of:
            start, end = buf.episode_rows(e)
            rows = np.arange(start, end - 1)
            buf.set_aux_reward(rows, np.diff(progress_of[e]) * (1 + k), scorer)
    buf.close()
    zarr.open_group(str(path), mode="a").attrs["vlmrl_record"] = {
        "task_description": TASK,
        "control_hz": 10.0,
        "action_keys": [f"j{j}.pos" for j in range(6)],
    }
    return path
