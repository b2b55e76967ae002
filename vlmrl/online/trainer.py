"""`vlmrl train`'s run: builds the sim envs, agent, buffer and scoring link of a run directory and drives
them with the one learner loop (``vlmrl.loop.learner``: collect -> store -> score -> update ->
evaluate/checkpoint), the simulated env being the experience source.

Everything that decides what happens next (agent, buffer sampler and RNG, the loop's own RNG and
counters) is saved at episode boundaries, and episodes are reset with seeds derived from their index,
so a resumed run repeats an uninterrupted one exactly (with uniform/PER replay, or VLM modes scored
synchronously; asynchronous scores arrive at times the scheduler decides).
"""

from __future__ import annotations

import dataclasses
import json
import shutil
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import gymnasium as gym
import numpy as np
from rich.console import Console
from rich.progress import track

from agents.config import SACConfig
from agents.errors import AgentError
from agents.export import export_onnx, export_policy, load_policy
from agents.handover import load_iql_into_sac, sac_config_for
from agents.sac import SAC
from buffer.samplers.prior_mix import PriorMixSampler
from buffer.storage.chunk_file import atomic_write
from buffer.storage.integrity import describe_skipped
from robot.contract import JOINT_KEYS, PIXELS_PREFIX, STATE_KEY, TARGETS_KEY, env_spec
from sim import make_env
from sim.experts import make_expert
from sim.wrappers import PotentialShaping
from vlm import Scorer, check_reachable
from vlmrl.actors.env_actor import POLICY_VERSION_KEY, PolicySpec
from vlmrl.deployment.policy_episodes import policy_run_info
from vlmrl.errors import ConfigError
from vlmrl.evaluation.episodes import EvalResult, eval_seeds, evaluate
from vlmrl.loop.assembly import ScoringSpec, StoreSpec, build_agent, build_learner, learner_checkpoint
from vlmrl.loop.checkpoint import load_checkpoint, memory_buffer_path, save_checkpoint
from vlmrl.loop.learner import LoopState, UpdatePlan
from vlmrl.loop.prior_data import add_prior_data, check_prior_data
from vlmrl.loop.sources import INTERVENTION_KEY, EnvEpisodes, StagedSteps
from vlmrl.online.config import TrainConfig, check_config, resolve_buffer_config, resolved_dict
from vlmrl.online.offline_handover import load_offline_agent
from vlmrl.online.progress import TrainProgress
from vlmrl.online.report import write_report
from vlmrl.online.takeover import StallTakeover
from vlmrl.scorers.car_reward import wrap_with_program
from vlmrl.scorers.choice import ready_scorer

__all__ = ["LoopState", "Trainer", "check_config", "default_run_dir", "policy_keys", "resolve_buffer_config"]
# LoopState is pickled in checkpoints as vlmrl.online.trainer.LoopState by runs from before vlmrl.loop.learner existed.

TRAIN_SEED_STRIDE = 100_000
"""Training episode e of a run with seed s resets with seed s * TRAIN_SEED_STRIDE + e."""
CAMERAS_FILE = "cameras.json"
"""Run-directory file with the calibrated twin cameras the run renders (SimCamera summaries)."""
SCORE_CALIBRATION_FILE = "score_calibration.json"
"""Run-directory copy of ``--score-calibration``: a resume reads it, so an edited file cannot change it."""
DEMO_SEED_OFFSET = 90_000
"""Demonstration episode d of a run with seed s resets with seed s * TRAIN_SEED_STRIDE + DEMO_SEED_OFFSET + d."""
JUMP_START_SEED_OFFSET = 91_000
"""``--jump-start-steps``: training episode e of a run with seed s draws its guided steps from the generator seeded
[s, JUMP_START_SEED_OFFSET, e] (a resumed run draws what the uninterrupted one did)."""
_DEMO_UPDATE_CHUNK = 100
"""``--demo-updates`` run in chunks of this many (the progress bar moves per chunk)."""


def noisy_actions(
    act: Callable[[Any], np.ndarray], space: gym.spaces.Box, std: float, seed: int
) -> Callable[[Any], np.ndarray]:
    """``act`` with Gaussian noise of ``std`` half-ranges of ``space`` added to each action, clipped to the space
    (``TrainConfig.demo_action_noise``); the noise draws are seeded by the run's seed."""
    rng = np.random.default_rng([seed, DEMO_SEED_OFFSET])
    low, high = np.asarray(space.low, np.float32), np.asarray(space.high, np.float32)
    scale = std * (high - low) / 2

    def noisy(obs: Any) -> np.ndarray:
        action = np.asarray(act(obs), np.float32)
        return np.clip(action + scale * rng.standard_normal(action.shape), low, high).astype(np.float32)

    return noisy


def run_agent_config(cfg: TrainConfig) -> SACConfig:
    """The agent's config for this run: its seed, and a learning-rate decay without its own length
    (``lr_final_fraction`` < 1, ``lr_decay_updates`` 0) spread over the run's updates."""
    agent = dataclasses.replace(cfg.agent, seed=cfg.seed)
    if agent.lr_final_fraction < 1.0 and agent.lr_decay_updates == 0:
        agent = dataclasses.replace(agent, lr_decay_updates=cfg.total_steps * agent.utd_ratio)
    return agent


class Trainer:
    """Owns the envs, agent, buffer and scoring link of one run directory.

    Args:
        cfg: the run's config.
        run_dir: its directory.
        checkpoint: the state to resume from (``load_checkpoint``); None for a new run.
        scorer: any ``vlm.Scorer`` to judge clips instead of the one ``cfg.scorer`` builds (the Python API:
            a custom scorer; a resume must pass it again). Closed at the end of the run.
        env_factory: builds the training and evaluation envs from ``cfg.sim`` instead of ``sim.make_env``
            (the Python API: a custom env meeting the Env contract; a resume must pass it again).
    """

    def __init__(
        self,
        cfg: TrainConfig,
        run_dir: Path,
        checkpoint: dict[str, Any] | None = None,
        scorer: Scorer | None = None,
        env_factory: Callable[[Any], Any] | None = None,
    ) -> None:
        check_config(cfg, new_run=checkpoint is None)
        self.cfg, self.run_dir = cfg, run_dir
        make = self.make_env = env_factory or make_env
        self.actors: Any = None  # the Ray env actors of --actors (vlmrl.actors.ray_source.ActorEpisodes)
        self._guide: Any = None  # the scripted expert that jump-starts training episodes (--jump-start-steps)
        self.env = make(cfg.sim)
        self.eval_env = make(cfg.sim)
        self.car: Any = None  # the Code-as-Reward wrapper (issue #17) when cfg.reward_program is set
        if cfg.reward_program is not None:
            self.car = self.env = wrap_with_program(
                self.env, cfg.reward_program, cfg.sim.task, cfg.reward_program_mode,
                cfg.reward_program_weight, run_dir, resuming=checkpoint is not None,
            )  # fmt: skip
        if cfg.reward_shaping == "potential":
            self.env = PotentialShaping(self.env, cfg.buffer.gamma)
        spec = env_spec(self.env)
        if not isinstance(self.env.action_space, gym.spaces.Box):
            raise ConfigError(f"SAC needs a Box action space, the env has {self.env.action_space}")
        self.action_space: gym.spaces.Box = self.env.action_space
        cameras = [PIXELS_PREFIX + c for c in cfg.sim.cameras]
        self.policy_keys = policy_keys(cfg.policy_obs, cameras, cfg.sim.observe_targets)
        targets = [TARGETS_KEY] if cfg.sim.observe_targets else []
        self.stored_keys = [STATE_KEY, *(JOINT_KEYS if cfg.policy_obs == "robot" else ()), *targets, *cameras]
        full_spec = spec.obs_spec()
        self.policy_obs_spec = {k: full_spec[k] for k in self.policy_keys}
        # An asymmetric critic also reads the sim's privileged state; the actor never does (agents.sac).
        self.privileged_keys = (STATE_KEY,) if cfg.asymmetric_critic else ()
        resuming = checkpoint is not None
        self.agent = build_agent(
            run_agent_config(cfg),
            {**self.policy_obs_spec, **{k: full_spec[k] for k in self.privileged_keys}},
            self.action_space,
            privileged_keys=self.privileged_keys,
            checkpoint=checkpoint,
            start=self._start_from_offline_agent if cfg.agent_from is not None else None,
        )
        if cfg.teacher_policy is not None:
            self._set_teacher(cfg.teacher_policy)
        ready: tuple[Scorer, str] | None = None
        self.scorer_id, self.prompt = "", ""
        if cameras:
            if (
                scorer is None and cfg.scorer.ray.actors
            ):  # scorer actors go to --ray.address too (before the pool starts Ray)
                from vlmrl.actors.ray_source import connect

                connect(cfg.ray.address)
            clip_key = cfg.buffer.clip_camera or cameras[0]
            ready = ready_scorer(
                cfg.scorer, spec.task_description, scorer=scorer, prompt=cfg.prompt,
                source=(clip_key.removeprefix(PIXELS_PREFIX), full_spec[clip_key][0][:2]),
                calibration=self._calibration_file(resuming),
            )  # fmt: skip
            self.scorer_id, self.prompt = ready[0].scorer_id, ready[1]
            if cfg.score_calibration and not resuming:
                self._keep_calibration(ready[0])
        self.buffer_cfg = resolve_buffer_config(cfg, self.scorer_id)
        stored_spec = {k: full_spec[k] for k in self.stored_keys}
        if cfg.prior_data is not None and not resuming:  # before the run directory is kept
            try:
                check_prior_data(
                    cfg.prior_data, stored_spec, spec.action_shape[0],
                    cfg.sim.action_mode if cfg.sim.suite == "so101" else "",
                )  # fmt: skip
            except BaseException:
                if ready is not None:
                    ready[0].close()
                raise
        self.learner = build_learner(
            self.agent,
            self._store_spec(stored_spec, spec.action_shape[0], resuming),
            UpdatePlan(
                batch_size=cfg.batch_size,
                utd_ratio=cfg.agent.utd_ratio,
                random_steps=cfg.learning_starts,
                learning_starts=cfg.learning_starts,
                policy_keys=(*self.policy_keys, *self.privileged_keys),
            ),
            cfg.seed,
            scorer=ready,
            scoring=ScoringSpec(
                worker=cfg.worker,
                aux_reward=cfg.aux_reward,
                aux_weight=cfg.aux_reward_weight,
                sync=cfg.sync_scoring,
            ),
            state=LoopState(
                next_eval_step=cfg.eval_every_steps, next_checkpoint_step=cfg.checkpoint_every_steps
            ),
            checkpoint=checkpoint,
            changed_store=self._warn_changed_store,
            action_bounds=(self.action_space.low, self.action_space.high),
        )
        self.buffer, self.link = self.learner.buffer, self.learner.link
        self.state, self.rng = self.learner.state, self.learner.rng
        self.last_eval: EvalResult | None = None
        self._snapshot: dict[str, Any] | None = None

    # ------------------------------------------------------------------------------------ building
    def _set_teacher(self, path: Path) -> None:
        """``--teacher-policy``: the exported policy distilled into the actor (``SACConfig.teacher_weight``); it
        must act in this run's task, action mode and action size and read keys this agent reads."""
        try:
            teacher = load_policy(path)
        except AgentError as exc:
            raise ConfigError(f"--teacher-policy: {exc}") from None
        sim = self.cfg.sim
        for key, ours in (("task", sim.task), ("action_mode", sim.action_mode)):
            theirs = teacher.run.get(key, ours)
            if theirs != ours:
                raise ConfigError(f"--teacher-policy {path}: its {key} is {theirs!r}, this run's is {ours!r}")
        if teacher.action_low.shape != (self.agent.action_dim,):
            raise ConfigError(
                f"--teacher-policy {path}: it acts with {teacher.action_low.size} values, this run's actions have "
                f"{self.agent.action_dim}"
            )
        for key, (shape, _) in teacher.obs_spec.items():
            if key not in self.agent.obs_spec or tuple(self.agent.obs_spec[key][0]) != tuple(shape):
                raise ConfigError(
                    f"--teacher-policy {path}: it reads {key!r} {list(shape)}, which this run's agent does not store "
                    f"(it reads {list(self.agent.obs_spec)}; a state teacher needs --asymmetric-critic)"
                )
        self.agent.set_teacher(teacher.module, list(teacher.obs_spec))

    def _start_from_offline_agent(self, agent: SAC) -> None:
        """Hand the ``--agent-from`` offline run's IQL networks over to this run's SAC (``agents.handover``)."""
        run_dir = self.cfg.agent_from
        assert run_dir is not None
        offline = load_offline_agent(run_dir, "--agent-from")
        if normalized(offline.obs_spec) != normalized(self.policy_obs_spec):
            raise ConfigError(
                f"--agent-from {run_dir}: its policy reads {describe_spec(offline.obs_spec)}, this run's would read "
                f"{describe_spec(self.policy_obs_spec)} (match --policy-obs, the cameras and the image size)"
            )
        load_iql_into_sac(agent, offline.state, (offline.action_low, offline.action_high))

    def _calibration_file(self, resuming: bool) -> Path | None:
        """The run's score calibration: ``--score-calibration`` for a new run, the run directory's copy of it
        for a resume (None: none)."""
        if not self.cfg.score_calibration:
            return None
        return self.run_dir / SCORE_CALIBRATION_FILE if resuming else Path(self.cfg.score_calibration)

    def _keep_calibration(self, scorer: Any) -> None:
        """Keep a copy of a new run's ``--score-calibration`` in the run directory (a resume reads the copy,
        so an edited file cannot change it); warn when it makes the scores worse."""
        assert self.cfg.score_calibration is not None
        scorer.calibration.save(self.run_dir / SCORE_CALIBRATION_FILE)
        warning = scorer.calibration.ece_warning(self.cfg.score_calibration)
        if warning:
            print(f"vlmrl train: warning: {warning}")

    def _warn_changed_store(self, stored: int, checkpointed: int) -> None:
        """A crash after the checkpoint left more committed episodes in the zarr store: keep them."""
        print(
            f"vlmrl train: warning: {self.run_dir} holds {stored} episodes but the checkpoint "
            f"was taken at {checkpointed} (a crash after it?); continuing with all "
            "stored episodes and a rebuilt sampler, so this resume is not exact"
        )

    @classmethod
    def create(
        cls, cfg: TrainConfig, scorer: Scorer | None = None, env_factory: Callable[[Any], Any] | None = None
    ) -> Trainer:
        """A new run; refuses a directory that already holds a checkpoint (use --resume)."""
        check_config(cfg)
        if cfg.agent_from is not None:  # the networks are the offline agent's (config.json says so)
            offline = load_offline_agent(cfg.agent_from, "--agent-from")
            cfg = dataclasses.replace(cfg, agent=sac_config_for(offline.config.agent, cfg.agent))
        if cfg.sim.cameras and scorer is None:
            check_reachable(cfg.scorer)  # before anything is written
        run_dir = Path(cfg.run_dir) if cfg.run_dir else default_run_dir(cfg)
        if (run_dir / "checkpoint").exists():
            raise ConfigError(
                f"run directory {run_dir} already holds a run; continue it with --resume {run_dir}"
            )
        created = not run_dir.exists()
        run_dir.mkdir(parents=True, exist_ok=True)
        cfg = dataclasses.replace(cfg, run_dir=str(run_dir))
        (run_dir / "config.json").write_text(json.dumps(resolved_dict(cfg), indent=2, default=str))
        try:
            trainer = cls(cfg, run_dir, scorer=scorer, env_factory=env_factory)
        except BaseException:
            if created:  # a bad env/scorer/buffer setting leaves nothing behind
                shutil.rmtree(run_dir, ignore_errors=True)
            raise
        trainer._record_cameras()
        return trainer

    def _camera_summaries(self) -> str:
        """The calibrated cameras the twin renders, as the JSON text of their summaries ("{}" when none)."""
        cameras = getattr(self.env.unwrapped, "calibrated_cameras", {})
        return json.dumps({name: camera.summary() for name, camera in cameras.items()}, indent=2)

    def _record_cameras(self) -> None:
        """Write the calibrated cameras the twin renders (cameras.json), so a resume can tell if they changed."""
        summaries = self._camera_summaries()
        if summaries != "{}":
            (self.run_dir / CAMERAS_FILE).write_text(summaries)

    def _check_cameras(self) -> None:
        """Warn when a resumed run's calibration files now give other cameras than the run started with."""
        path = self.run_dir / CAMERAS_FILE
        recorded = json.loads(path.read_text()) if path.exists() else {}
        if recorded != json.loads(self._camera_summaries()):
            print(
                f"vlmrl train: warning: the calibrated cameras differ from those recorded in {path} when the run "
                "started (calibration files changed?); the resumed run renders the new ones"
            )

    @classmethod
    def resume(
        cls, run_dir: Path, scorer: Scorer | None = None, env_factory: Callable[[Any], Any] | None = None
    ) -> Trainer:
        """Continue a run from its checkpoint with its saved config (and the scorer/env factory it ran with)."""
        checkpoint = load_checkpoint(run_dir)
        trainer = cls(checkpoint["config"], run_dir, checkpoint, scorer=scorer, env_factory=env_factory)
        trainer._check_cameras()
        return trainer

    def _store_spec(self, obs_spec: dict, action_dim: int, resuming: bool) -> StoreSpec:
        """The run's replay buffer: a zarr store in the run directory, or in RAM (reloaded from the checkpoint
        on a resume)."""
        if self.buffer_cfg.storage == "zarr":
            path: Path | None = self.run_dir / "buffer.zarr"
        else:
            path = memory_buffer_path(self.run_dir) if resuming else None
        # With --actors each episode records the version of the policy it was collected with.
        info_keys = (
            "success",
            "progress",
            *((POLICY_VERSION_KEY,) if self.cfg.actors else ()),
            *((INTERVENTION_KEY,) if self.cfg.takeover_stall_steps else ()),
        )
        return StoreSpec(
            cfg=self.buffer_cfg, obs_spec=obs_spec, action_dim=action_dim, info_keys=info_keys, path=path
        )

    # ------------------------------------------------------------------------------------ the loop
    def run(self) -> dict[str, Path]:
        """Train until total_steps (or stop_after_steps, or Ctrl-C); then checkpoint, export, report."""
        cfg, state = self.cfg, self.state
        stop_at = (
            cfg.total_steps
            if not cfg.stop_after_steps
            else min(cfg.total_steps, state.step + cfg.stop_after_steps)
        )
        interrupted = False
        if state.demo_episodes_added < cfg.demo_episodes:
            self._add_demonstrations()
        if cfg.prior_data is not None and state.prior_episodes_added < 0:
            self._add_prior_data(cfg.prior_data)
        if cfg.demo_updates and self.agent.num_updates == 0:  # a resumed run has updated already
            self._update_on_demonstrations()
        self._take_snapshot()
        episodes = self.episode_source()
        try:
            with (
                TrainProgress(cfg.total_steps, state.step, enabled=cfg.progress) as progress,
                self._writer() as writer,
            ):
                try:
                    self.learner.run(
                        episodes,
                        until=lambda: state.step >= stop_at,
                        after_episode=lambda stats: self._after_episode(stats, writer, progress),
                    )
                except KeyboardInterrupt:
                    interrupted = True
                    progress.note(
                        "interrupted: saving the checkpoint of the last finished episode and the report"
                    )
        finally:
            if self.actors is not None:
                self.actors.close()
        return self._finish(interrupted)

    def episode_source(self) -> Any:
        """The run's experience source: its own env, or (``--actors N``) N Ray env actors."""
        cfg = self.cfg
        seed_base = cfg.seed * TRAIN_SEED_STRIDE
        if not cfg.actors:
            ramp = self._reset_options if cfg.randomize_ramp_steps or cfg.task_ramp_steps else None
            guide = self._jump_start if cfg.jump_start_steps else None
            takeover = (
                StallTakeover(self.env, cfg.takeover_stall_steps, cfg.takeover_stall_m)
                if cfg.takeover_stall_steps
                else None
            )
            return EnvEpisodes(
                self.env, self.buffer, self.stored_keys, seed_base, reset_options=ramp, guide=guide,
                takeover=takeover,
            )  # fmt: skip
        from vlmrl.actors.ray_source import ActorEpisodes, connect  # imports Ray: only with --actors

        connect(cfg.ray.address)
        policy = PolicySpec(
            agent_cfg=self.agent.cfg,
            obs_spec=self.agent.obs_spec,
            privileged_keys=self.privileged_keys,
            policy_keys=tuple(self.policy_keys),
        )
        self.actors = ActorEpisodes(
            cfg.actors, f"{self.run_dir.resolve().name}-{id(self):x}", self.make_env, cfg.sim, policy,
            self.stored_keys, seed_base, self.buffer, self.agent,
            lambda: self.state.step < cfg.learning_starts, cfg.ray,
        )  # fmt: skip
        print(f"vlmrl train: {cfg.actors} env actors on the Ray cluster (learner: this process)")
        return self.actors

    def _reset_options(self) -> dict[str, Any]:
        """Reset options of the next training episode under ``--randomize-ramp-steps`` and ``--task-ramp-steps``:
        the share of the randomisation ranges and of the task's difficulty reached at this step (checkpointed with
        the step, so a resume is exact)."""
        cfg, options = self.cfg, {}
        if cfg.randomize_ramp_steps:
            options["randomize_scale"] = min(1.0, self.state.step / cfg.randomize_ramp_steps)
        if cfg.task_ramp_steps:
            options["difficulty"] = min(1.0, self.state.step / cfg.task_ramp_steps)
        return options

    def _jump_start(self, episode: int) -> tuple[int, Callable[[Any], np.ndarray]]:
        """``--jump-start-steps``: how many first steps of training episode ``episode`` the scripted expert drives
        (uniform in [0, H], H falling linearly from ``jump_start_horizon`` to 0 at step ``jump_start_steps``), and
        its ``act``; called after the episode's reset."""
        cfg = self.cfg
        if self._guide is None:
            self._guide = make_expert(self.env)
        horizon = round(cfg.jump_start_horizon * max(0.0, 1.0 - self.state.step / cfg.jump_start_steps))
        steps = int(
            np.random.default_rng([cfg.seed, JUMP_START_SEED_OFFSET, episode]).integers(0, horizon + 1)
        )
        self._guide.reset()
        return steps, self._guide.act

    def _add_demonstrations(self) -> None:
        """Put the scripted expert's episodes in the buffer (once per run, before the first step)."""
        cfg, state = self.cfg, self.state
        expert = make_expert(self.env)
        staged = StagedSteps()
        demos = EnvEpisodes(
            self.env, staged, self.stored_keys, cfg.seed * TRAIN_SEED_STRIDE + DEMO_SEED_OFFSET,
            extra_info={
                **({POLICY_VERSION_KEY: -1.0} if cfg.actors else {}),
                **({INTERVENTION_KEY: 0.0} if cfg.takeover_stall_steps else {}),
            },
            steps_after_success=cfg.demo_steps_after_success if cfg.demo_steps_after_success >= 0 else None,
        )  # fmt: skip
        # With --prior-share > 0 the demonstrations are the prior part of RLPD's symmetric sampling.
        mix = self.buffer.sampler if isinstance(self.buffer.sampler, PriorMixSampler) else None
        if mix is not None:
            mix.mark_prior(True)
        max_attempts = 2 * cfg.demo_episodes + 10
        act = expert.act
        if cfg.demo_action_noise > 0:
            act = noisy_actions(expert.act, self.env.action_space, cfg.demo_action_noise, cfg.seed)
        try:
            # An expert episode that fails is dropped (and counted), not stored as a demonstration.
            while state.demo_episodes_added < cfg.demo_episodes and state.demo_attempts < max_attempts:
                expert.reset()
                stats = demos.collect(state.demo_attempts, act, after_step=lambda: None)
                state.demo_attempts += 1  # no updates, no env-step count
                if not stats["success"]:
                    staged.drop()
                    continue
                staged.keep_into(self.buffer)
                state.demo_steps += int(stats["length"])
                state.demo_episodes_added += 1
                state.demo_successes += 1
        finally:
            if mix is not None:
                mix.mark_prior(False)
        state.demo_rows = self.buffer.storage.episodes().next_row
        if self.link is not None:
            self.link.submit_new_clips()
        dropped = state.demo_attempts - state.demo_episodes_added
        print(
            f"vlmrl train: {state.demo_episodes_added} demonstration episodes of the scripted expert in the "
            f"buffer ({state.demo_steps} steps; {dropped} unsuccessful expert episodes dropped"
            + (f"; action noise {cfg.demo_action_noise:g})" if cfg.demo_action_noise > 0 else ")")
        )

    def _update_on_demonstrations(self) -> None:
        """``--demo-updates``: that many gradient updates on the buffer before the first env step, when it holds
        only the demonstrations and prior data (the sampler's prior part then fills every batch)."""
        cfg = self.cfg
        start = time.perf_counter()
        metrics: dict[str, float] = {}
        chunks = range(0, cfg.demo_updates, _DEMO_UPDATE_CHUNK)
        for done in track(chunks, "demo updates", disable=not cfg.progress, console=Console(stderr=True)):
            metrics = self.learner.update(min(_DEMO_UPDATE_CHUNK, cfg.demo_updates - done))
        with self._writer(purge=False) as writer:
            for key, value in metrics.items():
                writer.add_scalar(f"demo_updates/{key}", value, 0)
        if cfg.agent.proposals:  # IBRL: the clone of the demonstrations competes with the actor from now on
            self.agent.freeze_proposer()
        print(
            f"vlmrl train: {cfg.demo_updates} updates on the demonstrations ({self.state.demo_rows} buffer rows) "
            f"before the first env step ({time.perf_counter() - start:.0f} s)"
        )

    def _add_prior_data(self, path: Path) -> None:
        """Copy the intact episodes of a recorded store into the buffer as prior data (once per run)."""
        skipped = add_prior_data(self.buffer, self.state, path, skip_corrupt=self.cfg.skip_corrupt)
        added = self.state.prior_episodes_added
        mix = self.buffer.sampler if isinstance(self.buffer.sampler, PriorMixSampler) else None
        if self.link is not None:
            self.link.submit_new_clips()
        share = f"{self.cfg.prior_share:.0%} of each batch" if mix is not None else "replayed by --replay"
        print(f"vlmrl train: {added} episodes of prior data from {path} in the buffer ({share})")
        if skipped:
            print(f"vlmrl train: --skip-corrupt: {describe_skipped(skipped)}")

    def _after_episode(self, stats: dict[str, float], writer: Any, progress: TrainProgress) -> None:
        cfg, state = self.cfg, self.state
        if self.car is not None:
            stats |= self.car.episode_stats()
        state.train_log.append({"step": float(state.step), **stats})
        for key, value in stats.items():
            writer.add_scalar(key if "/" in key else f"train/{key}", value, state.step)
        if state.step >= state.next_eval_step:
            state.next_eval_step += cfg.eval_every_steps * (
                1 + (state.step - state.next_eval_step) // cfg.eval_every_steps
            )
            self._keep_if_best(self._evaluate(writer))
            self._write_evals()
        progress.update(state.step, self._progress_fields(stats))
        if state.step >= state.next_checkpoint_step:
            state.next_checkpoint_step += cfg.checkpoint_every_steps * (
                1 + (state.step - state.next_checkpoint_step) // cfg.checkpoint_every_steps
            )
            save_checkpoint(self.run_dir, self._take_snapshot(), self.buffer)
        else:
            self._take_snapshot()

    def _evaluate(self, writer: Any, record_episodes: int = 0) -> EvalResult:
        keys = self.policy_keys
        camera = PIXELS_PREFIX + self.cfg.sim.cameras[0] if self.cfg.sim.cameras else ""
        result = evaluate(
            self.eval_env,
            lambda obs: self.agent.act({k: obs[k] for k in keys}, deterministic=True),
            eval_seeds(self.cfg.seed, self.cfg.eval_episodes),
            camera_key=camera,
            record_episodes=record_episodes,
        )
        self.last_eval = result
        self.state.evals.append({"step": float(self.state.step), **result.as_dict()})
        for key, value in result.as_dict().items():
            writer.add_scalar(f"eval/{key}", value, self.state.step)
        return result

    def _write_evals(self) -> None:
        """Rewrite ``evals.jsonl`` (one scheduled evaluation per line) so that a script or a person can
        follow a run's success while it trains; rewritten whole, so a resumed run's file matches its
        history (evaluations past the checkpoint are repeated, not kept twice)."""
        lines = "".join(json.dumps(e) + "\n" for e in self.state.evals)
        atomic_write(self.run_dir / EVALS_LOG, lines.encode())

    def _keep_if_best(self, result: EvalResult) -> None:
        """Export ``best_policy.pt`` when a scheduled evaluation is the best so far (highest success rate,
        then highest mean return, then the latest): SAC's success oscillates from one evaluation to the
        next, and the last policy is not always the best one. The choice uses the run's own evaluation
        episodes only (training env, evaluation seeds), never a held-out grid."""
        state = self.state
        if (result.success_rate, result.mean_return) < (state.best_eval_success, state.best_eval_return):
            return
        state.best_eval_success, state.best_eval_return = result.success_rate, result.mean_return
        state.best_eval_step = state.step
        run_info = policy_run_info(self.cfg.sim, self.cfg.policy_obs)
        export_policy(self.agent, self.run_dir / BEST_POLICY, run=run_info)

    def _progress_fields(self, stats: dict[str, float]) -> dict[str, str]:
        success = f"{self.state.evals[-1]['success_rate']:.0%}" if self.state.evals else "-"
        backlog = f"{stats.get('scorer/backlog', 0):.0f}" if self.link is not None else "-"
        return {"success": success, "backlog": backlog}

    # ------------------------------------------------------------------------------- checkpoints
    def _take_snapshot(self) -> dict[str, Any]:
        """Remember the state at this episode boundary: what Ctrl-C saves (a deep copy, ~ms)."""
        self._snapshot = self._state_dict()
        return self._snapshot

    def _state_dict(self) -> dict[str, Any]:
        return learner_checkpoint(self.learner, self.cfg, self.policy_obs_spec)

    def _writer(self, purge: bool = True) -> Any:
        """TensorBoard writer; ``purge`` drops events logged after ``state.step`` (those of a resumed run
        past its checkpoint), which the final evaluation's writer must not do to the last episode's."""
        from torch.utils.tensorboard import SummaryWriter

        purge_step = (self.state.step or None) if purge else None
        return SummaryWriter(str(self.run_dir / "tb"), purge_step=purge_step)

    # ------------------------------------------------------------------------------------ the end
    def _finish(self, interrupted: bool) -> dict[str, Path]:
        outputs: dict[str, Path] = {}
        assert self._snapshot is not None
        if interrupted:  # the episode in flight is lost, as after a crash; resume repeats it exactly
            outputs["checkpoint"] = save_checkpoint(self.run_dir, self._snapshot, self.buffer)
        with self._writer(purge=False) as writer:
            final = self._evaluate(writer, record_episodes=self.cfg.video_episodes)
            self.state.evals.pop()  # the report shows it; the history keeps the scheduled evaluations
        if not interrupted:
            outputs["checkpoint"] = save_checkpoint(self.run_dir, self._take_snapshot(), self.buffer)
        run_info = policy_run_info(self.cfg.sim, self.cfg.policy_obs)  # what deploy sets itself up from
        outputs["policy"] = export_policy(self.agent, self.run_dir / "policy.pt", run=run_info)
        if self.state.best_eval_step >= 0 and (self.run_dir / BEST_POLICY).exists():
            outputs["best_policy"] = self.run_dir / BEST_POLICY
        if self.cfg.export_onnx:
            outputs["onnx"] = export_onnx(self.agent, self.run_dir / "policy.onnx")
        scorer = self.link.scorer if self.link is not None else None
        outputs.update(
            write_report(
                self.run_dir, self.cfg, self.state, final, scorer, self.prompt, self.buffer_cfg,
                interrupted=interrupted, stored_episodes=self.buffer.num_episodes,
            )
        )  # fmt: skip
        if self.link is not None:
            self.link.close()
        self.buffer.close()
        self.env.close()
        self.eval_env.close()
        self.final = final
        return outputs

    def summary_line(self) -> str:
        """One line: steps, episodes, final success rate and return."""
        final = getattr(self, "final", None)
        figures = f", final success {final.success_rate:.0%}, return {final.mean_return:.2f}" if final else ""
        if self.actors is not None:
            c = self.actors.counters
            figures += (
                f", {self.cfg.actors} actors: {c.episodes} episodes this session, {c.lost_episodes} lost "
                f"({c.timeouts} timeouts), {c.broadcasts} weight broadcasts"
            )
        return f"{self.state.step} steps, {self.state.episode} episodes{figures}"


BEST_POLICY = "best_policy.pt"
"""The policy of the best scheduled evaluation, beside ``policy.pt`` (the last one)."""

EVALS_LOG = "evals.jsonl"
"""The scheduled evaluations so far, one JSON object per line (``step``, ``success_rate``, ``return``, ...)."""


def normalized(spec: dict[str, Any]) -> dict[str, tuple[tuple[int, ...], str]]:
    """An observation spec as (shape of ints, dtype name) per key, for comparing specs of any origin."""
    return {k: (tuple(int(n) for n in shape), np.dtype(dtype).name) for k, (shape, dtype) in spec.items()}


def describe_spec(spec: dict[str, Any]) -> str:
    """``key shape`` pairs of an observation spec, for one-line errors."""
    return ", ".join(f"{k} {tuple(shape)}" for k, (shape, _) in spec.items())


def policy_keys(policy_obs: str, cameras: list[str], targets: bool = False) -> list[str]:
    """Observation keys the policy reads for a ``policy_obs`` choice; ``targets``: also the joint targets last
    commanded (``--sim.observe-targets``)."""
    extra = [TARGETS_KEY] if targets else []
    if policy_obs == "robot":
        return [*JOINT_KEYS, *extra, *cameras]
    return [STATE_KEY, *extra, *(cameras if policy_obs == "pixels" else [])]


def default_run_dir(cfg: TrainConfig) -> Path:
    """runs/train-<task>-<UTC time>."""

    return Path("runs") / f"train-{cfg.sim.task}-{time.strftime('%Y%m%d-%H%M%S', time.gmtime())}"
