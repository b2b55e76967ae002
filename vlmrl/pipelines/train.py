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
from pathlib import Path
from typing import Annotated, Any

import tyro

from vlm.backends.learned import load_learned
from vlm.config import LearnedConfig
from vlmrl.config_ranges import check_ranges
from vlmrl.errors import ConfigError
from vlmrl.evaluation.perturbation_grid import add_to_train_report
from vlmrl.online.config import RayConfig, ReplayMode, ScorerChoice, TrainConfig, resolved_dict
from vlmrl.online.recipes import describe, overridden, recipe_changes, recipe_config
from vlmrl.online.resume_check import RESUME_OPTIONS, check_args, resume_or_finished
from vlmrl.results import RunResult

__all__ = [
    "Config",
    "ReplayMode",
    "ScorerChoice",
    "TrainConfig",
    "check_args",
    "demo_config",
    "main",
    "resolved_dict",
    "run",
]
# TrainConfig lives in vlmrl.online.config (the trainer imports it too); checkpoints pickled before the
# move name it vlmrl.pipelines.train.TrainConfig, which this import keeps resolvable.


Config = Annotated[TrainConfig, tyro.conf.CascadeSubcommandArgs]


def cli_default(args: list[str]) -> TrainConfig | None:
    """The defaults `vlmrl train ARGS` parses against: with ``--recipe NAME``, the recipe's settings for the
    task (``vlmrl.online.recipes.recipe_config``), so every option given beside it wins; else None (the plain
    defaults). A resume keeps its stored config."""
    first = tyro.cli(Config, args=args, prog="vlmrl train")
    if first.recipe == "none" or first.resume:
        return None
    return recipe_config(
        first.recipe,
        first.sim.task,
        TrainConfig(sim=dataclasses.replace(TrainConfig().sim, suite=first.sim.suite)),
    )


"""What tyro parses for `vlmrl train` (options may follow the scorer subcommand)."""


def main(cfg: TrainConfig) -> int:
    """Train (or resume) a run; writes checkpoint, report, curves, video and policy.pt into the run dir."""
    import torch

    check_ranges(cfg)  # before anything uses a value (torch threads, a resume's options)
    torch.set_num_threads(cfg.torch_threads)
    os.environ.setdefault("MUJOCO_GL", "egl")
    from vlmrl.offline import run as offline

    if cfg.offline is not None or (cfg.resume and offline.is_offline_run(Path(cfg.resume))):
        return offline_then_online(cfg)
    if cfg.then_online:
        raise ConfigError("--then-online continues an offline run: give --offline DATA too")
    run(cfg)
    return 0


def offline_then_online(cfg: TrainConfig) -> int:
    """The offline run (new or resumed), then, with ``--then-online`` (given now or when the run started),
    the online run in its ``online`` directory (resumed when it has a checkpoint already)."""
    from vlmrl.loop.checkpoint import checkpoint_dir
    from vlmrl.offline import run as offline
    from vlmrl.online.offline_handover import ONLINE_DIR, online_config, twin_sim_config

    if cfg.then_online < 0:
        raise ConfigError(f"--then-online {cfg.then_online}: expected a number of env steps >= 0")
    if cfg.then_online and cfg.offline is not None:
        twin_sim_config(cfg.offline)  # refuses data from elsewhere before the offline run, not after it
    done = offline.run_offline(offline.from_train_config(cfg))
    steps = cfg.then_online or done.cfg.then_online_steps
    if not steps:
        return 0
    if done.step < done.cfg.gradient_steps:
        print(
            f"vlmrl train: the online part follows when the offline run is complete: --resume {done.run_dir}"
        )
        return 0
    online_dir = done.run_dir / ONLINE_DIR
    if checkpoint_dir(online_dir).exists():
        run(resume_config(cfg, online_dir))
    else:
        print(f"vlmrl train: offline run done; {steps:,} online steps from its agent in {online_dir}")
        run(online_config(cfg, done.run_dir, steps))
    return 0


def sim_size_for_learned_scorer(cfg: TrainConfig) -> TrainConfig:
    """``cfg`` rendering at the frame size a ``scorer:learned`` file was fitted on, where ``--sim.image-size``
    is left at its default (``vlmrl record`` stores 128 px twin frames, train renders 64 px): the scorer
    then scores the frames it learned from. The policy's own image size (``--agent.pixel.image-size``)
    is separate and unchanged. A size given on the command line is kept (the scorer refuses it in one
    line unless ``--scorer.resize``)."""
    if not isinstance(cfg.scorer, LearnedConfig) or cfg.sim.image_size != TrainConfig().sim.image_size:
        return cfg
    if not Path(cfg.scorer.path).is_file():
        return cfg  # the scorer's own one-line error follows

    height, width = (int(v) for v in load_learned(cfg.scorer.path)[0]["image_hw"])
    if height != width or height == cfg.sim.image_size:
        return cfg
    print(
        f"vlmrl train: rendering {height} px frames, the size {cfg.scorer.path} was fitted on (--sim.image-size)"
    )
    return dataclasses.replace(cfg, sim=dataclasses.replace(cfg.sim, image_size=height))


def run(cfg: TrainConfig, scorer: Any = None, env_factory: Any = None) -> RunResult:
    """Train (or resume) a run (what `vlmrl train` and the Python API's ``vlmrl.train`` do); returns its run
    directory, final evaluation and outputs.

    Args:
        cfg: the run (``cfg.resume``: continue that run directory with its saved config).
        scorer: any ``vlm.Scorer`` instead of the one ``cfg.scorer`` builds (pass it again to resume).
        env_factory: builds the envs from ``cfg.sim`` instead of ``sim.make_env`` (pass it again to resume).
    """
    import torch

    from vlmrl.online.trainer import Trainer

    check_ranges(cfg)
    torch.set_num_threads(cfg.torch_threads)
    os.environ.setdefault("MUJOCO_GL", "egl")
    if cfg.demo and not cfg.resume:
        cfg = demo_config(cfg)
    if not cfg.resume and cfg.recipe != "none":
        given = overridden(cfg)
        print(
            f"vlmrl train --recipe {cfg.recipe} ({cfg.sim.task}): {describe(recipe_changes(cfg, TrainConfig()))}"
            + (f"; given instead: {describe(given)}" if given else "")
        )
    if not cfg.resume and scorer is None:
        cfg = sim_size_for_learned_scorer(cfg)
    if cfg.resume:  # conflicting options refused, a finished run left as it is (issue #36)
        finished = resume_or_finished(cfg)
        if finished is not None:
            return finished
    trainer = (
        Trainer.resume(Path(cfg.resume), scorer=scorer, env_factory=env_factory)
        if cfg.resume
        else Trainer.create(cfg, scorer=scorer, env_factory=env_factory)
    )
    if cfg.resume:
        trainer.cfg = dataclasses.replace(
            trainer.cfg,
            progress=cfg.progress,
            stop_after_steps=cfg.stop_after_steps,
            **actors_on_resume(cfg, trainer.cfg),
        )
    if trainer.cfg.demo_episodes and not trainer.cfg.agent.layer_norm:
        print(
            "vlmrl train: warning: demonstrations with a plain critic: in the replay experiment's lift runs its Q "
            "diverged in 26 of 27 runs (results/replay/README.md); add --agent.layer-norm"
        )
    if cfg.demo:
        print(
            f"vlmrl train --demo: SO-101 twin {cfg.sim.task}, sparse reward, {cfg.demo_episodes} scripted demonstrations "
            f"(cloned with weight {cfg.agent.bc_weight:g}), discount {cfg.buffer.gamma:g}, {cfg.total_steps:,} steps, "
            "oracle scorer (privileged sim progress, not a VLM); about 3-6 min on 2 cores"
        )
    print(
        f"vlmrl train: run directory {trainer.run_dir} (live curves: tensorboard --logdir {trainer.run_dir / 'tb'})"
    )
    started = time.monotonic()
    outputs = trainer.run()
    if trainer.cfg.evaluate_perturb and trainer.state.step >= trainer.cfg.total_steps:
        outputs.update(
            add_to_train_report(
                trainer.run_dir,
                trainer.cfg.sim,
                outputs["policy"],
                trainer.cfg.evaluate_perturb,
                trainer.cfg.eval_episodes,
            )
        )
    print(f"vlmrl train: {trainer.summary_line()} in {time.monotonic() - started:.0f} s")
    for name, path in outputs.items():
        print(f"  {name:<11} {path}")
    final = trainer.final.as_dict() if getattr(trainer, "final", None) is not None else {}
    metrics = {"steps": trainer.state.step, "episodes": trainer.state.episode, **final}
    return RunResult(trainer.run_dir, metrics, outputs.get("policy"), outputs)


def resume_config(cfg: TrainConfig, run_dir: Path) -> TrainConfig:
    """A resume of ``run_dir`` with what ``cfg`` says about this invocation only (``RESUME_OPTIONS``)."""
    return TrainConfig(
        resume=str(run_dir), **{name: getattr(cfg, name) for name in RESUME_OPTIONS - {"resume"}}
    )


def actors_on_resume(given: TrainConfig, saved: TrainConfig) -> dict[str, Any]:
    """What a resume may change of the env actors: their cluster and settings (``--ray.*``) and, for a run
    that started with actors, their number; not whether there are actors (the buffer's layout follows)."""
    if given.actors and not saved.actors:
        raise ConfigError("--actors: this run started without env actors; resume it without --actors")
    changes: dict[str, Any] = {"actors": given.actors} if given.actors else {}
    if given.ray != RayConfig():
        changes["ray"] = given.ray
    return changes


DEMO_EPISODES, DEMO_STEPS = 25, 20_000
DEMO_BC_WEIGHT, DEMO_GAMMA = 0.4, 0.95
"""`--demo`: demonstrations and budget (lift with a sparse reward is not learned without demonstrations)."""


def demo_config(cfg: TrainConfig) -> TrainConfig:
    """The embedded demo's settings on top of ``cfg``, each only where ``cfg`` left it at the default."""
    defaults = TrainConfig()
    changes: dict[str, Any] = {}
    if cfg.demo_episodes == defaults.demo_episodes:
        changes["demo_episodes"] = DEMO_EPISODES
    if cfg.total_steps == defaults.total_steps:
        changes["total_steps"] = DEMO_STEPS
    agent: dict[str, Any] = {}
    if cfg.agent.layer_norm == defaults.agent.layer_norm:
        agent["layer_norm"] = True
    # The lift learner's recipe (results/lift-learner: setting D): clone the demonstrations, shorter horizon.
    if (
        cfg.agent.bc_weight == defaults.agent.bc_weight
        and cfg.agent.bc_q_filter == defaults.agent.bc_q_filter
    ):
        agent.update(bc_weight=DEMO_BC_WEIGHT, bc_q_filter=False)
    if agent:
        changes["agent"] = dataclasses.replace(cfg.agent, **agent)
    if cfg.buffer.gamma == defaults.buffer.gamma:
        changes["buffer"] = dataclasses.replace(cfg.buffer, gamma=DEMO_GAMMA)
    return dataclasses.replace(cfg, **changes)
