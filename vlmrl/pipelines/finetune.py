"""Fine-tune a sim-trained SAC policy on a robot (or its twin), with a human in the loop.

    vlmrl finetune --from runs/train/so101-lift                                  # on the twin
    vlmrl finetune --from runs/train/so101-lift --robot.type so101_follower --robot.port /dev/ttyACM0
    vlmrl finetune --from runs/offline-lerobot --robot.type so101_follower ...    # from offline RL

Several arms at once: ``--actors N`` (Ray), see ``vlmrl.arm.robot_arms``.

On the twin, ``--operator scripted`` puts the twin's scripted operator at the arm (``sim.scripted_operator``):
it presses success when the task holds, and failure when the policy is hopelessly stuck, and takes over with
the twin's expert when the policy stalls or drifts out of the workspace, within a budget of takeover steps
per episode; its keys and takeovers take the keyboard's path (stored and learned from as a person's), and
its signals go to ``out_dir/operator.jsonl``, one line per episode. With ``--robot.unit`` the twin is one of
its hardware-like units (``sim.units``), a stand-in for an arm the policy never saw::

    vlmrl finetune --from runs/train/so101-lift --robot.unit b --operator scripted --episodes 200

The reward is the robot's, never the simulator's: the operator's success key (1, terminal) plus, if
there is one, the aux reward of a pixel scorer: ``--scorer 'scorer:learned --scorer.path student.pt'``, or
by default the sim run's scorer when it reads pixels (a VLM); the oracle, which reads the simulator's
privileged progress, is never used (a run trained with it fine-tunes on the keys alone). The env does not
read the twin's task status either (``privileged_status=False``). ``report.md`` says which reward the run
used and shows ``success_vs_robot_minutes.png``: success (and interventions) per episode against robot
minutes, steps over the control rate. Each episode prints one line: its outcome, return, steps,
intervention steps and takeovers, safety clips by reason.

Episodes are as long as the sim run's training episodes unless ``--env.max-episode-steps`` is given, and
the task, cameras, image size and control rate follow the sim run as in ``vlmrl deploy``
(``vlmrl.deployment.policy_episodes.fit_to_policy``).

An offline run (``vlmrl train --offline DATA --policy-obs robot`` on the arm's recordings) starts it too:
its IQL networks are handed over to SAC (``agents.handover``, ``vlmrl.online.offline_handover``).

The agent (actor, critics, temperature, normaliser) starts from ``RUN_DIR/checkpoint/state.pt``. Each
episode runs at the fixed control rate through the safety layer; gradient updates happen between
episodes (``utd_ratio`` per step collected), so learning never stretches a control period. Operator keys
(with a display; `robot.teleop.OPERATOR_KEYS`): right = success, left = failure, up = reset now, space =
take over (the keyboard jog or a leader arm drives; what was sent is stored and learned from), escape
= emergency stop. Transitions go to ``out_dir/buffer.zarr`` one committed episode at a time (a power cut
loses at most the episode in flight); new clips go to the async VLM worker, whose scores set sampling
priorities and the aux reward (weighted by the sim run's ``aux_reward_weight``, scores calibrated by its
score calibration, as in training). The loop is `vlmrl train`'s (``vlmrl.loop.learner``) with the robot as
the experience source. After every episode the run is checkpointed in `vlmrl train`'s format
(``out_dir/checkpoint/state.pt``, ``vlmrl.loop.checkpoint``); the policy is exported to ``out_dir/policy.pt``
at the end.
What the sim run's checkpoint must hold: ``vlmrl.arm.trained_run``.
"""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Annotated, Any, Literal

import tyro

from agents.errors import AgentError
from agents.export import export_policy
from agents.sac import linear_decay
from agents.sim_to_robot import estimate_dim_of
from buffer.config import BufferConfig, PriorMixSamplerConfig
from robot.config import DEFAULT_EPISODE_STEPS, LeRobotEnvConfig
from robot.contract import STATE_KEY
from robot.signals import interrupt_on_signals
from sim.config import ScriptedOperatorConfig
from vlm.config import WorkerConfig
from vlmrl.actors.env_actor import POLICY_VERSION_KEY
from vlmrl.actors.robot_actor import RobotSide
from vlmrl.arm.finetune_report import (
    better_policy,
    describe_operator,
    describe_robot,
    episode_record,
    log_episode,
    record_best,
    write_report,
)
from vlmrl.arm.robot_arms import check_actor_settings, check_operator, control_hz_of, one_arm, several_arms
from vlmrl.arm.trained_run import (
    action_space_of,
    aux_weight_of,
    load_sim_run,
    open_scorer,
    policy_obs_spec,
    reward_scorer,
    sim_policy_run_info,
    start_from_sim_run,
)
from vlmrl.deployment.policy_episodes import adopt_trained, fit_to_policy, policy_run_info
from vlmrl.deployment.robot_env import RobotEnvConfig
from vlmrl.errors import ConfigError
from vlmrl.loop.arm_actions import ActionConverter, agent_action_names, sim_action_converter
from vlmrl.loop.assembly import ScoringSpec, StoreSpec, build_agent, build_learner, learner_checkpoint
from vlmrl.loop.checkpoint import checkpoint_to_resume, save_checkpoint
from vlmrl.loop.learner import UpdatePlan
from vlmrl.loop.prior_data import add_prior_data, check_prior_data
from vlmrl.loop.sources import ROBOT_INFO_KEYS
from vlmrl.offline.run import is_offline_run
from vlmrl.online.config import RayConfig
from vlmrl.run_dir import NewPaths, write_config

INFO_KEYS = ROBOT_INFO_KEYS


@dataclass(frozen=True, kw_only=True)
class Config(RobotEnvConfig):
    """vlmrl finetune: fine-tune a sim-trained policy on a robot (or its twin)."""

    from_run: Annotated[Path, tyro.conf.arg(name="from")]
    """Run directory of ``vlmrl train`` holding checkpoint/state.pt, or of ``vlmrl train --offline`` (its
    IQL agent handed over to SAC; trained with ``--policy-obs robot`` on a robot's recordings)."""
    out_dir: Path = Path("runs/finetune")
    """Holds buffer.zarr, checkpoint/, policy.pt (the last policy), best_policy.pt and best_policy.json
    (``--best-window``), metrics.jsonl, safety.jsonl, config.json, report.md with
    success_vs_robot_minutes.png, and with the scripted operator operator.jsonl."""
    episodes: int = 10
    """Episodes to run on the robot."""
    robot_minutes: float | None = None
    """Stop once the run (with what it ran before a ``--resume``) has spent this many robot minutes (steps over
    the control rate), or after ``--episodes``, whichever comes first; None: episodes only. How to evaluate
    every N robot minutes: resume with ``--robot-minutes`` N, 2N, ... and deploy policy.pt in between."""
    seed: int = 0
    """Seed of the first episode (the twin places its objects from it)."""
    buffer: BufferConfig = field(default_factory=lambda: BufferConfig(storage="zarr", capacity_steps=50_000))
    """Replay buffer (stored as zarr in out_dir; sampler, n-step, clip length, aux reward weight)."""
    batch_size: int | None = None
    """SAC batch size (None: the sim run's)."""
    learning_starts: int = 0
    """Transitions collected on the robot before the first update."""
    critic_warmup_updates: int = 0
    """The first N updates train the critics only; the actor, the temperature, the pixel encoder and the
    observation statistics start after them. For a run trained with ``--asymmetric-critic``, whose critics
    lose their privileged inputs (``agents.sim_to_robot``); on the nominal twin a 6,000-update warm-up kept
    the policy, and the actor's updates after it did not (results/finetune)."""
    store_action: Literal["sent", "policy"] = "sent"
    """What a step the policy drove stores as its action: ``sent``, what the arm was sent after the safety
    layer, or ``policy``, the policy's own action, the safety layer then part of the robot as the twin's
    clipping is part of the sim in `vlmrl train`. Takeovers always store what was sent."""
    prior_data: Path | None = None
    """A store whose episodes go into the buffer before the first robot episode, as the prior part of each
    batch (RLPD, as the sim run's demonstrations were in `vlmrl train`), cloned at the sim run's
    ``agent.bc_weight``: demonstrations on this arm (``vlmrl record``, for a run of ``--sim.action-mode
    absolute``; for a joint-delta or end-effector policy its targets are turned into the moves between them,
    ``vlmrl.loop.arm_actions``) or an earlier
    fine-tuning run's ``buffer.zarr`` (its actions are the policy's kind). Its arrays must match the robot's
    (joints, cameras, image size)."""
    prior_share: float = 0.5
    """With ``--prior-data``: share of each batch drawn from it (0: its episodes are replayed like the robot's)."""
    actor_lr: float | None = None
    """The actor's learning rate on the robot (None: the sim run's); below the critics' it moves a working
    policy in smaller steps while the critics re-fit to the robot's reward."""
    actor_lr_final_fraction: float = 1.0
    """The actor's rate falls linearly from ``--actor-lr`` to this fraction of it over
    ``--actor-lr-decay-minutes`` robot minutes (set before each episode's updates) and stays there: with the
    sim run's encoder kept (``--freeze-encoder``) the policy then settles where the first minutes took it, where
    at a constant rate the later updates lose what those won (results/finetune). 1: a constant rate. The
    critics keep theirs, the sim run's ``critic_lr`` (a decay the sim run had is not continued on the robot)."""
    actor_lr_decay_minutes: float = 0.0
    """Robot minutes over which the actor's rate reaches ``--actor-lr-final-fraction`` (counted from the first
    robot episode, a ``--resume``'s earlier minutes included)."""
    bc_weight: float | None = None
    """Weight of the actor's behaviour-cloning term on the rows it clones (``--prior-data``'s,
    ``--buffer.clone-info-key``'s, ``--buffer.clone-all``; None: the sim run's ``agent.bc_weight``)."""
    freeze_encoder: bool = False
    """Keep the sim run's pixel encoder and observation statistics: updates change the actor, critics and
    temperature only. The actor reads features that only the critic loss trains, so a critic re-fitting to
    the robot's reward otherwise moves them under a policy that worked (``SAC.encoder_frozen``)."""
    worker: WorkerConfig = field(default_factory=WorkerConfig)
    """Async VLM scoring worker."""
    operator: Literal["person", "scripted"] = "person"
    """Who watches the arm and presses the keys: a person (the keyboard's operator keys; takeovers drive with
    ``--teleop``), or on the twin the scripted operator (``sim.scripted_operator``: success and failure from
    the task's outcome, takeovers with the twin's expert when the policy stalls or drifts away)."""
    scripted_operator: ScriptedOperatorConfig = field(default_factory=ScriptedOperatorConfig)
    """With ``--operator scripted``: when it takes over (stall, workspace), for how long, its budget per
    episode (0: keys only, no takeovers)."""
    scorer: str | None = None
    """A pixel scorer whose clip scores add an aux reward to the keys' (and set priorities), written as after
    `vlmrl score EPISODES`, e.g. ``'scorer:learned --scorer.path student.pt'``; ``none``: the keys alone. Not
    given: the sim run's scorer unless it reads privileged sim state (the oracle: then the keys alone)."""
    aux_reward_weight: float | None = None
    """Weight of the scorer's aux reward in the reward (None: the sim run's ``aux_reward_weight``)."""
    teleop: Literal["keyboard", "leader"] = "keyboard"
    """Who drives during a person's intervention."""
    leader_port: str | None = None
    """Leader arm port for ``--teleop leader``."""
    wait_for_scores_s: float = 0.0
    """After each episode, wait up to this long for its clips to be scored (0: fully asynchronous)."""
    torch_threads: int = 1
    """Torch threads for acting and updates (more threads than free cores make the control loop late)."""
    best_window: int = 20
    """``best_policy.pt`` is the policy after the episode that ended the best run of this many episodes by the
    policy's own successes (success keys on episodes without a takeover; ``best_policy.json`` says which):
    fine-tuning can gain within minutes and then lose it (results/finetune), and the keys tell when. 0: none."""
    fresh_agent: bool = False
    """The sim run's networks newly initialised instead of its weights: from scratch on the robot, with the same
    operator and robot minutes (``benchmarks/finetune_experiment.py``'s baseline)."""
    resume: bool = False
    """Continue the fine-tuning run in out_dir (agent, sampler, scores and episode count from its
    checkpoint; the buffer store is reopened) instead of starting from the sim run's agent."""
    actors: int = 0
    """Arms run at once, each in its own Ray actor (its own LeRobotEnv, safety layer, operator keys and
    policy copy); this process learns. 0: one arm in this process, and Ray is not imported."""
    arms: Path | None = None
    """With ``--actors`` on real arms: JSON list, one object per actor, overriding ``--robot`` fields
    (``port``, ``id``, ``camera_sources``, ...) and ``leader_port``. Optional on the twin."""
    ray: RayConfig = field(default_factory=RayConfig)
    """With ``--actors``: the Ray cluster and how the actors are fed (as ``vlmrl train --ray.*``)."""


def fit_to_sim_run(cfg: Config, train: Any, offline: bool = False) -> Config:
    """``cfg`` with the sim run's task, cameras, image size, control rate, episode length and anti-windup
    bound where they were left at their defaults, as ``vlmrl deploy`` fits a policy file
    (``vlmrl.deployment.policy_episodes.fit_to_policy``); an ``offline`` run (recordings, not the twin) gives only its
    image size and bound.

    Raises:
        ConfigError: an option given and not the run's.
    """
    sim = train.sim
    source = str(cfg.from_run)
    if not offline:
        run = policy_run_info(sim, "robot")
        return fit_to_policy(cfg, run, bool(sim.cameras), source)
    defaults = LeRobotEnvConfig()
    changes: dict[str, Any] = {}
    windup = float(sim.max_windup_deg) if sim.action_mode == "delta" else 0.0
    adopt_trained(changes, "max_windup_deg", cfg.env.max_windup_deg, defaults.max_windup_deg, windup, source,
                  f"with --sim.max-windup-deg {windup:g}", "--env.max-windup-deg", "run")  # fmt: skip
    if sim.cameras:
        adopt_trained(changes, "image_size", cfg.env.image_size, defaults.image_size, sim.image_size, source,
                      f"on {sim.image_size} px frames", "--env.image-size", "run")  # fmt: skip
    return dataclasses.replace(cfg, env=dataclasses.replace(cfg.env, **changes)) if changes else cfg


def main(cfg: Config) -> int:
    """Fine-tune for ``cfg.episodes`` episodes; returns 0."""
    run(cfg)
    return 0


def run(cfg: Config, robot_factories: dict[str, Any] | None = None) -> dict[str, Any]:
    """Fine-tune for ``cfg.episodes`` episodes (see the module doc); returns the last episode's metrics.

    Args:
        cfg: the fine-tuning run.
        robot_factories: extra robot types (``robot.lerobot_robot.make_robot``): a custom LeRobot ``Robot``
            built from the ``ArmConfig`` without editing the package.
    """
    import torch

    if cfg.episodes < 1:
        raise ConfigError(f"--episodes {cfg.episodes}: expected at least 1")
    if cfg.best_window < 0:
        raise ConfigError(f"--best-window {cfg.best_window}: expected a number of episodes, or 0 for none")
    if cfg.robot_minutes is not None and not cfg.robot_minutes > 0:
        raise ConfigError(f"--robot-minutes {cfg.robot_minutes}: expected a positive number of minutes")
    check_actor_settings(cfg)
    check_operator(cfg)
    torch.set_num_threads(cfg.torch_threads)
    state = load_sim_run(cfg.from_run)
    train = state["config"]
    if not 0.0 < cfg.actor_lr_final_fraction <= 1.0:
        raise ConfigError(
            f"--actor-lr-final-fraction {cfg.actor_lr_final_fraction:g}: expected a fraction in (0, 1]"
        )
    if cfg.actor_lr_final_fraction < 1.0 and not 0.0 < cfg.actor_lr_decay_minutes < float("inf"):
        raise ConfigError(
            f"--actor-lr-decay-minutes {cfg.actor_lr_decay_minutes:g}: expected a positive number of robot minutes "
            f"for --actor-lr-final-fraction {cfg.actor_lr_final_fraction:g}"
        )
    if cfg.critic_warmup_updates < 0:
        raise ConfigError(f"--critic-warmup-updates {cfg.critic_warmup_updates}: expected 0 or more")
    if not 0.0 <= cfg.prior_share <= 1.0:
        raise ConfigError(f"--prior-share {cfg.prior_share:g}: expected a share in [0, 1]")
    if cfg.buffer.prior_info_key and (cfg.prior_data is None or cfg.prior_share <= 0):
        raise ConfigError(
            f"--buffer.prior-info-key {cfg.buffer.prior_info_key}: its steps join the prior part of each batch, "
            "which needs --prior-data with --prior-share > 0"
        )
    cfg = fit_to_sim_run(cfg, train, offline=is_offline_run(cfg.from_run))
    scorer_cfg, reward_words = reward_scorer(cfg, train)
    obs_spec = policy_obs_spec(state)  # the policy's robot keys, never the privileged state
    action_space: Any = action_space_of(state)  # the units the agent was trained in; the safety layer clips
    resumed = checkpoint_to_resume(cfg.out_dir, cfg.resume, "--out-dir", required=("agent", "buffer", "loop"))
    agent = build_agent(
        train.agent, obs_spec, action_space, estimate_dim=estimate_dim_of(state["agent"]), checkpoint=resumed,
        start=lambda agent: start_from_sim_run(agent, cfg, train, state),
    )  # fmt: skip
    agent.encoder_frozen = cfg.freeze_encoder  # the flag of this invocation, a resumed run's too
    agent.constant_rates()  # the robot's rates are this run's: the sim run's decay, if any, ends here
    base_actor_lr = cfg.actor_lr if cfg.actor_lr is not None else train.agent.actor_lr
    try:  # so are these: the checkpoint's optimiser brings the learning rates it ran with
        agent.retune(actor_lr=cfg.actor_lr, bc_weight=cfg.bc_weight)
    except AgentError as exc:
        raise ConfigError(f"finetune: {exc}") from None
    # config.json is written once the robot, the policy fit and the store are checked; a run failing on
    # them leaves the previous run's files as they were (and removes an empty safety.jsonl/store it made).
    new = NewPaths(cfg.out_dir, ["safety.jsonl", "buffer.zarr", *(f"arm-{i}" for i in range(cfg.actors))])
    last: dict[str, Any] = {}
    convert = sim_action_converter(train.sim)  # the agent's actions to joint targets and back
    action_dim = int(action_space.shape[0])  # what the buffer stores: the agent's units
    arms = (
        several_arms(cfg, agent, obs_spec, action_space, new, robot_factories, convert)
        if cfg.actors
        else one_arm(cfg, obs_spec, new, robot_factories, convert)
    )
    control_hz = control_hz_of(cfg)
    facts = {
        "from_run": f"{cfg.from_run}{' (its networks, freshly initialised: --fresh-agent)' if cfg.fresh_agent else ''}",
        "robot": describe_robot(cfg),
        "operator": describe_operator(cfg),
        "reward": reward_words,
        "control_hz": control_hz,
    }
    print(f"finetune: reward from {reward_words}")
    with interrupt_on_signals(), arms as (side, source_for):
        camera = f"pixels/{side.cameras[0]}" if side.cameras else ""
        with new.removed_on_failure():
            if cfg.prior_data is not None and resumed is None:  # a resumed run's buffer holds it already
                check_prior_data(
                    cfg.prior_data, side.obs_spec, action_dim, train.sim.action_mode,
                    arm_action_dim=side.action_dim, rebuilt=(STATE_KEY,),
                )  # fmt: skip
            ready = open_scorer(cfg, train, scorer_cfg, side, camera)
            weight = aux_weight_of(cfg, train) if ready is not None else 0.0
            learner = build_learner(
                agent,
                store_spec(
                    cfg,
                    train,
                    side,
                    action_dim,
                    camera,
                    weight,
                    ready[0].scorer_id if ready else "",
                    reward_words,
                ),
                UpdatePlan(
                    batch_size=cfg.batch_size or train.batch_size,
                    utd_ratio=train.agent.utd_ratio,
                    learning_starts=cfg.learning_starts,
                    between_episodes=True,  # learning never stretches a control period
                    policy_keys=tuple(obs_spec),
                ),
                cfg.seed,
                scorer=ready,
                scoring=ScoringSpec(
                    worker=cfg.worker,
                    aux_reward=train.aux_reward,
                    aux_weight=weight,
                    wait_s=cfg.wait_for_scores_s,
                ),
                checkpoint=resumed,
                changed_store=lambda stored, checkpointed: refuse_changed_store(cfg, stored, checkpointed),
            )
        buffer, link, loop = learner.buffer, learner.link, learner.state
        if cfg.prior_data is not None and resumed is None:
            add_prior(cfg, cfg.prior_data, buffer, loop, link, convert, side.action_keys)
            warning = eviction_ahead(
                cfg, buffer.storage.episodes().next_row, buffer.storage.capacity, control_hz
            )
            if warning:
                print(warning)
        write_config(cfg, cfg.out_dir)
        episodes = source_for(buffer)
        stop_at = loop.episode + cfg.episodes

        def schedule_actor_rate() -> None:  # for the next episode's updates, from the robot minutes spent
            if cfg.actor_lr_final_fraction < 1.0:
                agent.retune(actor_lr=actor_rate(cfg, base_actor_lr, loop.step / control_hz / 60.0))

        schedule_actor_rate()

        def done() -> bool:
            spent = loop.step / control_hz / 60.0
            return loop.episode >= stop_at or (cfg.robot_minutes is not None and spent >= cfg.robot_minutes)

        warned_eviction = False

        def after_episode(stats: dict[str, Any]) -> None:
            nonlocal warned_eviction
            stats = episode_record(stats, loop, buffer, control_hz)
            if cfg.prior_data is not None and not warned_eviction and prior_evicted(buffer):
                warned_eviction = True
                print(
                    f"finetune: warning: the buffer is full ({buffer.storage.capacity} rows) and evicts its oldest "
                    "episodes, --prior-data's first: raise --buffer.capacity-steps in a new run to keep them"
                )
            stats["actor_lr"] = agent.cfg.actor_lr  # the rate this episode's updates used
            schedule_actor_rate()
            log_episode(cfg.out_dir, stats)
            rate = better_policy(cfg.out_dir, cfg.best_window) if cfg.best_window else None
            if rate is not None:  # the policy's own successes, from the keys: the best so far
                export_policy(agent, cfg.out_dir / "best_policy.pt", run=sim_policy_run_info(cfg.from_run))
                record_best(cfg.out_dir, rate, cfg.best_window, stats)
            save_checkpoint(
                cfg.out_dir, learner_checkpoint(learner, cfg, obs_spec, train_config=train), buffer
            )
            last.clear()
            last.update(stats)

        try:
            learner.run(episodes, until=done, after_episode=after_episode)
        finally:
            if link is not None:
                link.close()  # drains the queued clips (up to 30 s), stops the worker, closes the scorer
            buffer.close()
            write_report(cfg.out_dir, facts)
        export_policy(agent, cfg.out_dir / "policy.pt", run=sim_policy_run_info(cfg.from_run))
    print(
        f"finetune: {loop.episode} episode(s) in all, {loop.step / control_hz / 60.0:.1f} robot minutes -> "
        f"{cfg.out_dir / 'policy.pt'}, {cfg.out_dir / 'report.md'}"
    )
    return last


def eviction_ahead(cfg: Config, prior_rows: int, capacity: int, control_hz: float) -> str | None:
    """A one-line warning when ``--prior-data``'s rows and the rows this run plans to store (``--episodes`` of the
    policy's episode length, or fewer with ``--robot-minutes``) do not fit the buffer, which would then evict the
    demonstrations part-way (the FIFO ring evicts the oldest episodes first); None when they fit."""
    steps = cfg.env.max_episode_steps or DEFAULT_EPISODE_STEPS
    planned = cfg.episodes * (steps + 1)  # an episode stores its steps and its last observation
    if cfg.robot_minutes is not None:
        planned = min(planned, math.ceil(cfg.robot_minutes * 60.0 * control_hz * (steps + 1) / steps))
    if prior_rows + planned <= capacity:
        return None
    minutes = max(capacity - prior_rows, 0) / control_hz / 60.0
    return (
        f"finetune: warning: --prior-data's {prior_rows} rows and up to {planned} this run plans do not fit the "
        f"buffer's {capacity}: its demonstrations would be evicted after about {minutes:.0f} robot minutes; "
        f"--buffer.capacity-steps {prior_rows + planned} keeps them (a --resume keeps the store's size)"
    )


def prior_evicted(buffer: Any) -> bool:
    """Whether the store evicted its first rows: ``--prior-data``'s episodes, which went in first. The ring
    evicts the oldest episodes when full, so a long run loses its demonstrations (measured: past 40 robot minutes
    at 50,000 rows the prior part of each batch went empty, results/finetune)."""
    return bool(buffer.storage.episodes().first_row > 0)


def actor_rate(cfg: Config, base: float, minutes: float) -> float:
    """The actor's learning rate after ``minutes`` robot minutes: ``base`` falling linearly to
    ``--actor-lr-final-fraction`` of it over ``--actor-lr-decay-minutes``, then staying there."""
    if cfg.actor_lr_final_fraction >= 1.0:
        return base
    return base * linear_decay(minutes / cfg.actor_lr_decay_minutes, cfg.actor_lr_final_fraction)


def add_prior(
    cfg: Config, path: Path, buffer: Any, loop: Any, link: Any, convert: ActionConverter | None, joints: Any
) -> None:
    """``--prior-data``'s episodes into the fine-tuning buffer, before the first robot episode: a recording's
    joint targets as a joint-delta or end-effector policy's actions, its missing takeover flags as zeros, and the arm's
    ``state`` (its ``joints`` side by side) where a twin recording stored the sim's."""
    add_prior_data(
        buffer, loop, path, skip_corrupt=False, convert=convert, fill_info=True,
        joint_state=tuple(joints),
    )  # fmt: skip
    if link is not None:
        link.submit_new_clips()
    share = f"{cfg.prior_share:.0%} of each batch" if cfg.prior_share > 0 else "replayed with the robot's"
    print(
        f"finetune: {loop.prior_episodes_added} episodes "
        f"({loop.demo_rows - loop.prior_episodes_added} steps) of prior data from "
        f"{path} in the buffer ({share})"
    )


def store_spec(
    cfg: Config,
    train: Any,
    side: RobotSide,
    action_dim: int,
    camera: str,
    weight: float,
    scorer_id: str,
    reward_words: str,
) -> StoreSpec:
    """The fine-tuning run's replay buffer: a zarr store in ``out_dir`` that is a recording of the arm (its
    ``vlmrl_record`` attributes), with the sim run's discount and n-step."""
    sampler: Any = cfg.buffer.sampler
    if cfg.prior_data is not None and cfg.prior_share > 0 and not isinstance(sampler, PriorMixSamplerConfig):
        sampler = PriorMixSamplerConfig(prior_share=cfg.prior_share, online=sampler)
    buffer_cfg = dataclasses.replace(
        cfg.buffer,
        sampler=sampler,
        storage="zarr",
        clip_camera=cfg.buffer.clip_camera or camera,
        aux_reward_scorer=scorer_id if weight > 0 else "",
        aux_reward_weight=weight,
        gamma=train.buffer.gamma,
        n_step=train.buffer.n_step,
    )
    record = {
        "task_description": side.task_description,
        "control_hz": cfg.env.control_hz,
        "robot_type": cfg.robot.type,
        "robot_unit": cfg.robot.unit,
        "operator": cfg.operator,
        "reward": reward_words,
        "action_keys": agent_action_names(sim_action_converter(train.sim), side.action_keys),
        "action_mode": train.sim.action_mode,  # the policy's action units (--prior-data reads them)
        "cameras": list(side.cameras),
        "from_run": str(cfg.from_run),
    }
    info_keys = INFO_KEYS + ((POLICY_VERSION_KEY,) if cfg.actors else ())
    return StoreSpec(
        cfg=buffer_cfg, obs_spec=side.obs_spec, action_dim=action_dim, info_keys=info_keys,
        path=cfg.out_dir / "buffer.zarr", record=record,
    )  # fmt: skip


def refuse_changed_store(cfg: Config, stored: int, checkpointed: int) -> None:
    """A resume refuses a store that changed after its checkpoint."""
    raise ConfigError(
        f"--resume: {cfg.out_dir / 'buffer.zarr'} holds {stored} episodes but the checkpoint in {cfg.out_dir} "
        f"was taken at {checkpointed}; the store changed after the checkpoint"
    )
