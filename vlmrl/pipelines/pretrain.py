"""Pretrain the pixel encoder on the twin's own frames, randomised as training will be, to read the state.

    vlmrl pretrain --sim.task lift --sim.image-size 64 --sim.randomize.preset light --out runs/encoder.pt
    vlmrl train --sim.task lift --sim.image-size 64 --sim.randomize.preset light --policy-obs robot \\
        --agent.pixel.weights-path runs/encoder.pt [--agent.pixel.frozen] ...

The scripted expert drives most episodes, with per-episode action noise, so the frames cover the states a
learning policy passes through (approach, grasp, lift, misses); the rest act at random. The encoder
(``agents.pretrain``, the ``--pixel`` options must match the training run's) learns by regression to
read the twin's privileged state vector from each frame: under randomisation it has to find the cube
and the gripper whatever the light, colours, texture and camera pose. The privileged state is only a
target here; the encoder still reads pixels only and deploys on a real arm.

Writes ``--out`` (the encoders' weights, one per camera, for ``--agent.pixel.weights-path``) and beside it
``pretrain.json``: the regression's losses and, on held-out episodes (other seeds), the error of each
state field, in its own units (metres, radians), against the error of predicting the field's mean.
"""

from __future__ import annotations

import dataclasses
import json
import logging
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from agents.config import PixelEncoderConfig
from robot.contract import STATE_KEY
from sim.config import SimConfig
from sim.errors import SimError
from sim.factory import make_env
from sim.so101.scripted import ScriptedPolicy
from vlmrl.errors import ConfigError
from vlmrl.online.config import default_train_sim

logger = logging.getLogger("vlmrl.pretrain")

HELD_OUT_SEED_OFFSET = 1_000_003
"""Held-out episodes reset with seeds this far from the training ones."""


@dataclass(frozen=True, kw_only=True)
class Config:
    """vlmrl pretrain: fit the pixel encoder to the twin's privileged state on its own (randomised) frames."""

    sim: SimConfig = field(default_factory=default_train_sim)
    """The twin whose frames are used: the task, cameras, image size and randomisation of the training run
    (by default ``vlmrl train``'s)."""
    pixel: PixelEncoderConfig = field(default_factory=PixelEncoderConfig)
    """The encoder to pretrain: the same options as the training run's ``--agent.pixel``."""
    episodes: int = 100
    """Episodes of frames to fit on."""
    held_out_episodes: int = 20
    """Episodes (other seeds) on which the fit is measured."""
    random_share: float = 0.2
    """Share of the episodes that act uniformly at random; the scripted expert drives the others."""
    action_noise: float = 0.3
    """The expert's episodes add Gaussian noise to each action, its standard deviation drawn per episode
    uniformly in [0, x] times the action range's half-width."""
    steps: int = 3000
    """Gradient steps."""
    batch_size: int = 256
    """Frames per gradient step."""
    lr: float = 1e-3
    """Adam learning rate."""
    seed: int = 0
    """Episode seeds, action noise, initialisation and batches."""
    out: Path = Path("runs/pretrain/encoder.pt")
    """Where the weights go (``pretrain.json`` beside them)."""
    torch_threads: int = 1
    """Torch threads for the fit."""
    workspace_m: float = 0.25
    """An episode ends once the cube is this far (in the table's plane) from where it started: the noisy
    expert sometimes squeezes it out of the gripper and flings it off the table, and those frames would
    dominate the regression."""


def check(cfg: Config) -> None:
    """One-line errors for settings that cannot work."""
    if cfg.sim.suite != "so101":
        raise ConfigError(f"pretrain: the privileged state comes from the SO-101 twin, not {cfg.sim.suite!r}")
    if not cfg.sim.cameras:
        raise ConfigError("pretrain: --sim.cameras is empty; the encoder needs camera frames")
    for name in ("episodes", "held_out_episodes", "steps", "batch_size"):
        if getattr(cfg, name) < 1:
            raise ConfigError(f"pretrain: --{name.replace('_', '-')} must be >= 1, got {getattr(cfg, name)}")
    if not 0.0 <= cfg.random_share <= 1.0:
        raise ConfigError(f"pretrain: --random-share must be in [0, 1], got {cfg.random_share}")
    if cfg.action_noise < 0 or cfg.lr <= 0 or cfg.workspace_m <= 0:
        raise ConfigError("pretrain: --action-noise must be >= 0, --lr and --workspace-m > 0")
    if cfg.pixel.frozen or cfg.pixel.weights_path:
        raise ConfigError("pretrain: --pixel.frozen and --pixel.weights-path belong to the training run")


def collect(env: Any, episodes: int, seed_base: int, cfg: Config) -> tuple[dict[str, np.ndarray], np.ndarray]:
    """Frames (camera key -> uint8[N, H, W, 3]) and privileged states (float32[N, S]) of ``episodes``
    episodes, episode e reset with seed ``seed_base + e``."""
    from sim.so101.env import STATE_NAMES

    cube_xy = slice(STATE_NAMES.index("cube_x_m"), STATE_NAMES.index("cube_y_m") + 1)

    expert = ScriptedPolicy(env)
    space = env.action_space
    half = (space.high - space.low) / 2.0
    frames: dict[str, list[np.ndarray]] = {}
    states: list[np.ndarray] = []
    for e in range(episodes):
        rng = np.random.default_rng([cfg.seed, seed_base + e])
        obs, _ = env.reset(seed=seed_base + e)
        expert.reset()
        random_episode = rng.random() < cfg.random_share
        noise = rng.uniform(0.0, cfg.action_noise)
        start = obs[STATE_KEY][cube_xy].copy()
        while np.linalg.norm(obs[STATE_KEY][cube_xy] - start) <= cfg.workspace_m:
            for key, value in obs.items():
                if key.startswith("pixels/"):
                    frames.setdefault(key, []).append(value)
            states.append(obs[STATE_KEY])
            if not random_episode:
                try:
                    planned = expert.act(obs)
                except SimError:  # the noise took the arm where the expert cannot plan: act at random
                    random_episode = True
            if random_episode:
                action = rng.uniform(space.low, space.high)
            else:
                action = planned + rng.normal(0.0, 1.0, size=half.shape) * noise * half
            obs, _, term, trunc, _ = env.step(np.clip(action, space.low, space.high).astype(np.float32))
            if term or trunc:
                break
    return {k: np.stack(v) for k, v in frames.items()}, np.stack(states).astype(np.float32)


def main(cfg: Config) -> int:
    import torch

    from agents.encoders import PixelEncoder
    from agents.pretrain import pretrain_pixel_encoder
    from sim.so101.env import STATE_NAMES

    check(cfg)
    torch.set_num_threads(cfg.torch_threads)
    env = make_env(cfg.sim)
    try:
        print(f"vlmrl pretrain: collecting {cfg.episodes} + {cfg.held_out_episodes} held-out episodes")
        frames, states = collect(env, cfg.episodes, cfg.seed * 10_000, cfg)
        held_frames, held_states = collect(
            env, cfg.held_out_episodes, cfg.seed * 10_000 + HELD_OUT_SEED_OFFSET, cfg
        )
    finally:
        env.close()
    weights: dict[str, torch.Tensor] = {}
    report: dict[str, Any] = {
        "config": json.loads(json.dumps(dataclasses.asdict(cfg), default=str)),
        "frames": len(states),
        "held_out_frames": len(held_states),
        "cameras": {},
    }
    mean = states.mean(axis=0)
    baseline = np.sqrt(((held_states - mean) ** 2).mean(axis=0))
    for key, images in frames.items():
        print(f"vlmrl pretrain: fitting the {key} encoder on {len(images)} frames ({cfg.steps} steps)")
        result = pretrain_pixel_encoder(
            images, states, cfg.pixel, steps=cfg.steps, batch_size=cfg.batch_size, lr=cfg.lr, seed=cfg.seed
        )
        encoder = PixelEncoder(images.shape[1:], cfg.pixel)  # type: ignore[arg-type]
        encoder.load_state_dict(result.weights)
        rmse = held_out_rmse(encoder, images, states, held_frames[key], held_states)
        name = key.replace("/", "__")  # the ObservationEncoder's module names
        weights.update({f"{name}.{k}": v for k, v in result.weights.items()})
        report["cameras"][key] = {
            "first_loss": result.first_loss,
            "last_loss": result.last_loss,
            "held_out_rmse": dict(zip(STATE_NAMES, map(float, rmse))),
            "mean_predictor_rmse": dict(zip(STATE_NAMES, map(float, baseline))),
        }
        cube = STATE_NAMES.index("cube_minus_tcp_x_m")
        print(
            f"  loss {result.first_loss:.3f} -> {result.last_loss:.3f}; held-out error of cube - tcp (cm): "
            + ", ".join(f"{100 * rmse[cube + i]:.1f}" for i in range(3))
            + " (the mean's: "
            + ", ".join(f"{100 * baseline[cube + i]:.1f}" for i in range(3))
            + ")"
        )
    cfg.out.parent.mkdir(parents=True, exist_ok=True)
    torch.save(weights, cfg.out)
    (cfg.out.parent / "pretrain.json").write_text(json.dumps(report, indent=2) + "\n")
    print(f"vlmrl pretrain: wrote {cfg.out}; use it with --agent.pixel.weights-path {cfg.out}")
    return 0


def held_out_rmse(
    encoder: Any, images: np.ndarray, states: np.ndarray, held_images: np.ndarray, held_states: np.ndarray
) -> np.ndarray:
    """Per-field RMSE on held-out frames of a least-squares linear read-out of the encoder's features
    (fitted on the training frames), in the state's own units."""
    import torch

    def features(x: np.ndarray) -> np.ndarray:
        with torch.no_grad():
            out = [encoder(encoder.prepare(torch.from_numpy(x[i : i + 512]))) for i in range(0, len(x), 512)]
        f = torch.cat(out).numpy().astype(np.float64)
        return np.concatenate([f, np.ones((len(f), 1))], axis=1)

    w, *_ = np.linalg.lstsq(features(images), states.astype(np.float64), rcond=None)
    error = features(held_images) @ w - held_states
    return np.sqrt((error**2).mean(axis=0))
