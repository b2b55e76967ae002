"""`vlmrl train`: SAC on a simulated arm with VLM-guided replay and an optional VLM auxiliary reward.

With no arguments: the SO-101 twin `lift` task, sparse reward, the oracle scorer (privileged sim
progress, not a VLM) over the front camera, VLM-mix replay, 30,000 steps. `--demo` (what `make demo`
runs) adds 25 scripted demonstrations and a LayerNorm critic over 20,000 steps. Real VLMs: `scorer:hf --scorer.model <hub id or path>` or
`scorer:openai --scorer.base-url http://host:port/v1` (options after the subcommand).
"""

from __future__ import annotations

import dataclasses
import os
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Annotated, Any, Literal

import tyro

from agents.config import SACConfig
from buffer.config import BufferConfig, PERSamplerConfig, VLMMixSamplerConfig, VLMTDSamplerConfig
from sim.config import SimConfig
from vlm.config import AuxRewardConfig, CLIPConfig, HFConfig, OpenAIConfig, OracleConfig, WorkerConfig

ReplayMode = Literal["uniform", "per", "vlm", "vlm_td"]
ScorerChoice = (
    Annotated[OracleConfig, tyro.conf.subcommand("oracle")]
    | Annotated[HFConfig, tyro.conf.subcommand("hf")]
    | Annotated[OpenAIConfig, tyro.conf.subcommand("openai")]
    | Annotated[CLIPConfig, tyro.conf.subcommand("clip")]
)


@dataclass(frozen=True, kw_only=True)
class TrainConfig:
    """One training run; every field has a default (`--demo` adds demonstrations, see ``demo``)."""

    sim: SimConfig = field(
        default_factory=lambda: SimConfig(
            task="lift", reward="sparse", action_mode="delta", image_size=64, terminate_on_success=False
        )
    )
    """The simulated env (training and evaluation use separate instances and seeds). Episodes do not end
    at success by default: with a sparse reward, ending the episode at the reward lets SAC's entropy bonus
    pay more for staying alive, and SAC learns to avoid success (measured on twin reach, sparse: 60%
    success at 2k steps, then 0% up to 8k; without termination 100% by 5k)."""
    agent: SACConfig = field(default_factory=lambda: SACConfig(hidden_dims=(128, 128), init_alpha=0.1))
    """SAC hyper-parameters (128x128 suits the 23-d state and keeps the demo within ~10 CPU minutes)."""
    buffer: Annotated[BufferConfig, tyro.conf.AvoidSubcommands] = field(
        default_factory=lambda: BufferConfig(capacity_steps=40_000, storage="zarr", frame_codec="blosc-lz4")
    )
    """Replay storage; ``replay`` picks the sampler (a sampler config of that kind keeps its settings)."""
    replay: ReplayMode = "vlm"
    """Replay: uniform, per (TD-error priorities), vlm (VLM-score / uniform mix), vlm_td (score x TD)."""
    # Plain (frozen, shared) defaults rather than default_factory: a class-level default lets checkpoints
    # pickled before these fields existed load and resume.
    vlm_sampler: VLMMixSamplerConfig = VLMMixSamplerConfig()  # noqa: RUF009
    """Settings of ``--replay vlm``: mixing weight and its warm-up, score exponent, importance weights."""
    per_sampler: PERSamplerConfig = PERSamplerConfig()  # noqa: RUF009
    """Settings of ``--replay per``."""
    vlm_td_sampler: VLMTDSamplerConfig = VLMTDSamplerConfig()  # noqa: RUF009
    """Settings of ``--replay vlm_td``."""
    scorer: ScorerChoice = field(default_factory=OracleConfig)
    """Clip scorer; oracle (privileged sim progress) needs no model. Unreachable VLMs fail at start."""
    prompt: str = ""
    """Question asked about each clip; empty: the task's goal prompt (vlm.prompts.task_prompt)."""
    score_calibration: Path | None = None
    """Score calibration JSON (``vlmrl score --fit-score-calibration``) that maps the scorer's scores
    before they set priorities and aux rewards; it must have been fitted for this scorer and prompt. The
    run keeps a copy (score_calibration.json), which a resume uses."""
    aux_reward_weight: float = 0.0
    """Weight of the VLM auxiliary reward added to sampled rewards (0: scores steer replay only)."""
    aux_reward: AuxRewardConfig = field(default_factory=lambda: AuxRewardConfig(kind="shaping"))
    """How clip scores become per-step auxiliary rewards (its weight multiplies aux_reward_weight)."""
    worker: WorkerConfig = field(default_factory=WorkerConfig)
    """The asynchronous scoring worker."""
    sync_scoring: bool = False
    """Wait for each episode's clips to be scored before going on (exactly reproducible VLM modes)."""
    policy_obs: Literal["state", "pixels", "robot"] = "state"
    """What the policy sees: the sim's state vector (privileged: object poses); the state plus the cameras'
    pixels (DrQ encoder); or robot: only what a real arm provides, the LeRobot joint keys plus the
    cameras' pixels, so `vlmrl deploy` / `vlmrl finetune` can run the policy on an arm."""
    total_steps: int = 30_000
    """Environment steps of the whole run (the last episode is finished, so it may run a little over)."""
    demo_episodes: int = 0
    """Episodes of the SO-101 twin's scripted expert put in the replay buffer before training
    (demonstrations, as in RLPD or SAC from demonstrations). They are scored like any other clip and do not
    count in total_steps. Use with ``--agent.layer-norm``: with a plain critic, Q diverged on demonstrations.
    0: none."""
    learning_starts: int = 1_000
    """Uniform-random actions for this many steps before the policy acts and updates start."""
    batch_size: int = 128
    """Transitions per gradient update."""
    eval_every_steps: int = 5_000
    """Evaluate after the episode in which the step count crosses a multiple of this."""
    eval_episodes: int = 10
    """Episodes per evaluation (deterministic policy, evaluation-only seeds)."""
    video_episodes: int = 2
    """Evaluation episodes of the final evaluation written to the report video (0: no video)."""
    checkpoint_every_steps: int = 5_000
    """Checkpoint after the episode in which the step count crosses a multiple of this."""
    stop_after_steps: int = 0
    """Stop this invocation (checkpoint and report, like Ctrl-C) after this many steps; 0: run to the end."""
    seed: int = 0
    """Seed of everything: env episodes, agent, buffer sampling, random warm-up actions."""
    run_dir: str = ""
    """Output directory; empty: runs/train-<task>-<time>."""
    resume: str = ""
    """Continue the run in this directory from its checkpoint (its saved config is used)."""
    torch_threads: int = 1
    """Torch threads for the learner (keep 1 per core in use; 2x2 threads on 2 cores is >10x slower)."""
    export_onnx: bool = False
    """Also write policy.onnx next to policy.pt."""
    progress: bool = True
    """Show the rich progress bar."""
    demo: bool = False
    """The embedded demo (`make demo`): the defaults plus 25 scripted demonstrations in the buffer, a LayerNorm
    critic and 20,000 steps (each only where you left that option at its default)."""


Config = Annotated[TrainConfig, tyro.conf.CascadeSubcommandArgs]
"""What tyro parses for `vlmrl train` (options may follow the scorer subcommand)."""


def main(cfg: TrainConfig) -> int:
    """Train (or resume) a run; writes checkpoint, report, curves, video and policy.pt into the run dir."""
    import torch

    from vlmrl.trainer import Trainer

    torch.set_num_threads(cfg.torch_threads)
    os.environ.setdefault("MUJOCO_GL", "egl")
    if cfg.demo and not cfg.resume:
        cfg = demo_config(cfg)
    trainer = Trainer.resume(Path(cfg.resume)) if cfg.resume else Trainer.create(cfg)
    if cfg.resume:
        trainer.cfg = dataclasses.replace(
            trainer.cfg, progress=cfg.progress, stop_after_steps=cfg.stop_after_steps
        )
    if trainer.cfg.demo_episodes and not trainer.cfg.agent.layer_norm:
        print(
            "vlmrl train: warning: demonstrations with a plain critic: in the replay experiment's lift runs its Q "
            "diverged in 26 of 27 runs (results/replay/notes.md); add --agent.layer-norm"
        )
    if cfg.demo:
        print(
            f"vlmrl train --demo: SO-101 twin {cfg.sim.task}, sparse reward, {cfg.demo_episodes} scripted demonstrations, "
            f"{cfg.total_steps:,} steps, oracle scorer (privileged sim progress, not a VLM); about 3 min on 2 cores"
        )
    print(
        f"vlmrl train: run directory {trainer.run_dir} (live curves: tensorboard --logdir {trainer.run_dir / 'tb'})"
    )
    started = time.monotonic()
    outputs = trainer.run()
    print(f"vlmrl train: {trainer.summary_line()} in {time.monotonic() - started:.0f} s")
    for name, path in outputs.items():
        print(f"  {name:<10} {path}")
    return 0


DEMO_EPISODES, DEMO_STEPS = 25, 20_000
"""`--demo`: demonstrations and budget (lift with a sparse reward is not learned without demonstrations)."""


def demo_config(cfg: TrainConfig) -> TrainConfig:
    """The embedded demo's settings on top of ``cfg``, each only where ``cfg`` left it at the default."""
    defaults = TrainConfig()
    changes: dict[str, Any] = {}
    if cfg.demo_episodes == defaults.demo_episodes:
        changes["demo_episodes"] = DEMO_EPISODES
    if cfg.total_steps == defaults.total_steps:
        changes["total_steps"] = DEMO_STEPS
    if cfg.agent.layer_norm == defaults.agent.layer_norm:
        changes["agent"] = dataclasses.replace(cfg.agent, layer_norm=True)
    return dataclasses.replace(cfg, **changes)


def resolved_dict(cfg: TrainConfig) -> dict[str, Any]:
    """The config as plain data (written to config.json), with the scorer's backend named."""
    data = dataclasses.asdict(cfg)
    data["scorer"]["kind"] = cfg.scorer.kind
    return data
