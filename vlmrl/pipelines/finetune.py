"""Fine-tune a sim-trained SAC policy on a robot (or its twin), with a human in the loop.

    vlmrl finetune --from runs/train/so101-lift                                  # on the twin
    vlmrl finetune --from runs/train/so101-lift --robot.type so101_follower --robot.port /dev/ttyACM0
    vlmrl finetune --from runs/offline-lerobot --robot.type so101_follower ...    # from offline RL

Several arms at once (``--actors N``, Ray; ``vlmrl.robot_actor``): each arm runs in its own Ray actor with
its own ``LeRobotEnv`` (safety layer, watchdog), operator keys, teleop and a CPU copy of the policy; this
process keeps the agent, the buffer (its only writer), the scorer and the updates, and sends the actors new
weights every ``--ray.weights-every-updates`` updates (each episode stores its ``info/policy_version``). On
the twin every actor runs its own twin (episode e resets with seed ``seed + e``, whichever actor runs it);
real arms get their own port and id from ``--arms FILE``, a JSON list with one object per actor overriding
``--robot`` fields (plus ``leader_port``)::

    vlmrl finetune --from runs/train/so101-lift --actors 2                        # two twins
    vlmrl finetune --from runs/train/so101-lift --robot.type so101_follower --actors 2 --arms arms.json
    # arms.json: [{"port": "/dev/ttyACM0", "id": "left", "camera_sources": ["0"]},
    #             {"port": "/dev/ttyACM1", "id": "right", "camera_sources": ["2"]}]

Each arm's clipped commands go to ``out_dir/arm-<i>/safety.jsonl``. The keyboard is one for all arms: its
keys reach every actor (escape stops them all); takeovers of one arm need that arm's leader
(``--teleop leader`` and ``leader_port`` per arm).

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
(``vlmrl.pipelines.common.fit_to_policy``).

An offline run (``vlmrl train --offline DATA --policy-obs robot`` on the arm's recordings) starts it too:
its IQL networks are handed over to SAC (``agents.handover``, ``vlmrl.offline_handover``).

The agent (actor, critics, temperature, normaliser) starts from ``RUN_DIR/checkpoint/state.pt``. Each
episode runs at the fixed control rate through the safety layer; gradient updates happen between
episodes (``utd_ratio`` per step collected), so learning never stretches a control period. Operator keys
(with a display; `robot.teleop.OPERATOR_KEYS`): right = success, left = failure, up = reset now, space =
take over (the keyboard jog or a leader arm drives; what was sent is stored and learned from), escape
= emergency stop. Transitions go to ``out_dir/buffer.zarr`` one committed episode at a time (a power cut
loses at most the episode in flight); new clips go to the async VLM worker, whose scores set sampling
priorities and the aux reward (weighted by the sim run's ``aux_reward_weight``, scores calibrated by its
score calibration, as in training). The loop is `vlmrl train`'s (``vlmrl.learner``) with the robot as
the experience source. After every episode the run is checkpointed in `vlmrl train`'s format
(``out_dir/checkpoint/state.pt``, ``vlmrl.checkpoint``); the policy is exported to ``out_dir/policy.pt``
at the end.

The checkpoint must hold ``config`` (the train config: ``agent``, ``sim``, ``policy_obs``, ``buffer``,
``batch_size``, ``scorer``, ``prompt``, ``aux_reward``, ``aux_reward_weight``, ``worker``) and ``agent``;
an optional ``policy_obs_spec`` names the observation keys the policy reads (else they follow
``policy_obs`` as in ``vlmrl train``). Those keys must be ones a robot provides (joint keys,
``pixels/<camera>``): a policy that reads the sim's privileged ``state`` is refused with one line. A run
trained with ``--asymmetric-critic`` (critics that also read that state) is handed over to a SAC that reads
only the robot keys, its critics without the privileged inputs (``agents.sim_to_robot``).
"""

from __future__ import annotations

import dataclasses
import json
import logging
import uuid
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Annotated, Any, Literal

import numpy as np
import tyro

from buffer.config import BufferConfig
from robot.config import ArmConfig
from sim.config import ScriptedOperatorConfig, joint_delta_scale
from vlm.config import WorkerConfig
from vlmrl.assembly import ScoringSpec, StoreSpec, build_agent, build_learner, learner_checkpoint
from vlmrl.checkpoint import holds_checkpoint, load_checkpoint, save_checkpoint
from vlmrl.env_actor import POLICY_VERSION_KEY
from vlmrl.errors import ConfigError
from vlmrl.learner import LoopState, UpdatePlan
from vlmrl.pipelines.common import (
    RobotEnvConfig,
    adopt_trained,
    check_policy_fits,
    fit_to_policy,
    make_robot_env,
    policy_run_info,
    write_config,
)
from vlmrl.robot_actor import RobotKit, RobotSide, describe_env
from vlmrl.run_dir import NewPaths
from vlmrl.scorer_choice import parse_scorer, ready_scorer
from vlmrl.sources import ROBOT_INFO_KEYS, RobotEpisodes
from vlmrl.train_config import RayConfig

logger = logging.getLogger("vlmrl.finetune")

INFO_KEYS = ROBOT_INFO_KEYS
SCORE_CALIBRATION_FILE = "score_calibration.json"
"""The score calibration copy a `vlmrl train` run keeps (``vlmrl.trainer.SCORE_CALIBRATION_FILE``)."""


@dataclass(frozen=True, kw_only=True)
class Config(RobotEnvConfig):
    """vlmrl finetune: fine-tune a sim-trained policy on a robot (or its twin)."""

    from_run: Annotated[Path, tyro.conf.arg(name="from")]
    """Run directory of ``vlmrl train`` holding checkpoint/state.pt, or of ``vlmrl train --offline`` (its
    IQL agent handed over to SAC; trained with ``--policy-obs robot`` on a robot's recordings)."""
    out_dir: Path = Path("runs/finetune")
    """Holds buffer.zarr, checkpoint/, policy.pt, metrics.jsonl, safety.jsonl, config.json, report.md with
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
    """The first N updates train the critics only; the actor and temperature start after them. Advisable
    for a run trained with ``--asymmetric-critic``, whose critics lose their privileged inputs
    (``agents.sim_to_robot``)."""
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


def load_sim_run(run_dir: Path) -> dict[str, Any]:
    """The checkpoint of a ``vlmrl train`` run, read like a resume reads it (``vlmrl.checkpoint``: config
    fields added since it was written get their defaults); ConfigError naming the file if it is missing,
    broken, or lacks the agent. An offline run (``vlmrl train --offline``) gives the same entries, its
    IQL agent handed over to SAC (``vlmrl.offline_handover.finetune_state``)."""
    from vlmrl.offline import is_offline_run

    if is_offline_run(run_dir):
        from vlmrl.offline_handover import finetune_state

        return finetune_state(run_dir)
    return load_checkpoint(run_dir, flag="--from", required=("config", "agent"))


def policy_obs_spec(state: dict[str, Any]) -> dict[str, tuple[tuple[int, ...], np.dtype]]:
    """Observation keys, shapes and dtypes the checkpointed agent reads."""
    if "policy_obs_spec" in state:
        return {k: (tuple(shape), np.dtype(dt)) for k, (shape, dt) in state["policy_obs_spec"].items()}
    from robot.contract import env_spec
    from sim import make_env

    sim_cfg = state["config"].sim
    env = make_env(sim_cfg)
    try:
        full = env_spec(env).obs_spec()
    finally:
        env.close()
    keys = ["state"] + (
        [f"pixels/{c}" for c in sim_cfg.cameras] if state["config"].policy_obs == "pixels" else []
    )
    return {k: full[k] for k in keys}


def action_space_of(state: dict[str, Any]) -> Any:
    """The action space the checkpointed agent was trained in: its recorded bounds (an offline run's),
    else the sim run's env's."""
    import gymnasium as gym

    from sim import make_env

    if "action_bounds" in state:
        low, high = state["action_bounds"]
        return gym.spaces.Box(np.asarray(low, np.float32), np.asarray(high, np.float32))
    sim_env = make_env(dataclasses.replace(state["config"].sim, cameras=()))
    try:
        return sim_env.action_space
    finally:
        sim_env.close()


def fit_to_sim_run(cfg: Config, train: Any, offline: bool = False) -> Config:
    """``cfg`` with the sim run's task, cameras, image size, control rate, episode length and anti-windup
    bound where they were left at their defaults, as ``vlmrl deploy`` fits a policy file
    (``vlmrl.pipelines.common.fit_to_policy``); an ``offline`` run (recordings, not the twin) gives only its
    image size and bound.

    Raises:
        ConfigError: an option given and not the run's, or a run whose actions are neither joint targets nor
            joint deltas (``--sim.action-mode ee_delta``).
    """
    from robot.config import LeRobotEnvConfig

    sim = train.sim
    if sim.action_mode not in ("absolute", "delta"):
        raise ConfigError(
            f"{cfg.from_run} was trained with --sim.action-mode {sim.action_mode}, but finetune sends the agent's "
            "actions to the arm as joint targets or joint deltas: train with --sim.action-mode absolute or delta"
        )
    source = str(cfg.from_run)
    if not offline:
        run = policy_run_info(sim, "robot")
        return fit_to_policy(cfg, run, bool(sim.cameras), source)
    defaults, changes = LeRobotEnvConfig(), {}
    windup = float(sim.max_windup_deg) if sim.action_mode == "delta" else 0.0
    adopt_trained(changes, "max_windup_deg", cfg.env.max_windup_deg, defaults.max_windup_deg, windup, source,
                  f"with --sim.max-windup-deg {windup:g}", "--env.max-windup-deg", "run")  # fmt: skip
    if sim.cameras:
        adopt_trained(changes, "image_size", cfg.env.image_size, defaults.image_size, sim.image_size, source,
                      f"on {sim.image_size} px frames", "--env.image-size", "run")  # fmt: skip
    return dataclasses.replace(cfg, env=dataclasses.replace(cfg.env, **changes)) if changes else cfg


def control_hz_of(cfg: Config) -> float:
    """Control periods per second of the arm: on the twin the physics time a step advances
    (``--twin-control-hz``, else ``--env.control-hz``), on a real arm the loop's rate."""
    if cfg.robot.type == "sim_so101" and cfg.twin_control_hz:
        return float(cfg.twin_control_hz)
    return float(cfg.env.control_hz)


def reward_scorer(cfg: Config, train: Any) -> tuple[Any, str]:
    """The scorer config whose aux reward joins the keys' reward (None: the keys alone) and, in words, where
    the reward comes from (for the terminal and report.md).

    Raises:
        ConfigError: ``--scorer`` that does not parse, or one that reads privileged sim state (the oracle).
    """
    keys = "the operator's keys (success: 1, terminal)"
    if cfg.scorer is not None and cfg.scorer.strip().lower() == "none":
        return None, f"{keys} only (--scorer none)"
    if cfg.scorer is not None:
        scorer = parse_scorer(cfg.scorer, "--scorer")
        if scorer.kind == "oracle":
            raise ConfigError(
                f"--scorer {cfg.scorer!r} reads the simulator's privileged progress, which a robot does not have: "
                "give a pixel scorer such as 'scorer:learned --scorer.path student.pt', or none"
            )
        origin = "--scorer"
    elif train.scorer.kind == "oracle":
        return None, (
            f"{keys} only: the sim run's scorer is the oracle, which reads privileged progress (give --scorer "
            "'scorer:learned --scorer.path student.pt' for a pixel scorer)"
        )
    else:
        scorer, origin = train.scorer, "the sim run's scorer"
    weight = aux_weight_of(cfg, train)
    return scorer, f"{keys} + {weight:g} x the aux reward of {origin} ({scorer.kind}) on the clips' pixels"


def aux_weight_of(cfg: Config, train: Any) -> float:
    """The aux reward's weight: ``--aux-reward-weight``, else the sim run's."""
    weight = cfg.aux_reward_weight if cfg.aux_reward_weight is not None else train.aux_reward_weight
    if weight < 0:
        raise ConfigError(f"--aux-reward-weight {weight}: expected 0 or more")
    return float(weight)


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

    from agents.export import export_policy
    from agents.sim_to_robot import estimate_dim_of
    from robot.signals import interrupt_on_signals
    from vlmrl.finetune_report import write_report
    from vlmrl.offline import is_offline_run

    if cfg.episodes < 1:
        raise ConfigError(f"--episodes {cfg.episodes}: expected at least 1")
    if cfg.robot_minutes is not None and not cfg.robot_minutes > 0:
        raise ConfigError(f"--robot-minutes {cfg.robot_minutes}: expected a positive number of minutes")
    check_actor_settings(cfg)
    check_operator(cfg)
    torch.set_num_threads(cfg.torch_threads)
    state = load_sim_run(cfg.from_run)
    train = state["config"]
    if cfg.critic_warmup_updates < 0:
        raise ConfigError(f"--critic-warmup-updates {cfg.critic_warmup_updates}: expected 0 or more")
    cfg = fit_to_sim_run(cfg, train, offline=is_offline_run(cfg.from_run))
    scorer_cfg, reward_words = reward_scorer(cfg, train)
    obs_spec = policy_obs_spec(state)  # the policy's robot keys, never the privileged state
    action_space: Any = action_space_of(state)  # the units the agent was trained in; the safety layer clips
    resumed = load_finetune_checkpoint(cfg)
    agent = build_agent(
        train.agent, obs_spec, action_space, estimate_dim=estimate_dim_of(state["agent"]), checkpoint=resumed,
        start=lambda agent: start_from_sim_run(agent, cfg, train, state),
    )  # fmt: skip
    # config.json is written once the robot, the policy fit and the store are checked; a run failing on
    # them leaves the previous run's files as they were (and removes an empty safety.jsonl/store it made).
    new = NewPaths(cfg.out_dir, ["safety.jsonl", "buffer.zarr", *(f"arm-{i}" for i in range(cfg.actors))])
    last: dict[str, Any] = {}
    arms = (
        several_arms(cfg, agent, obs_spec, action_space, new, robot_factories, delta_scale_of(train.sim))
        if cfg.actors
        else one_arm(cfg, obs_spec, new, robot_factories, delta_scale_of(train.sim))
    )
    control_hz = control_hz_of(cfg)
    facts = {
        "from_run": str(cfg.from_run),
        "robot": describe_robot(cfg),
        "operator": describe_operator(cfg),
        "reward": reward_words,
        "control_hz": control_hz,
    }
    print(f"finetune: reward from {reward_words}")
    with interrupt_on_signals(), arms as (side, source_for):
        camera = f"pixels/{side.cameras[0]}" if side.cameras else ""
        with new.removed_on_failure():
            ready = open_scorer(cfg, train, scorer_cfg, side, camera)
            weight = aux_weight_of(cfg, train) if ready is not None else 0.0
            learner = build_learner(
                agent,
                store_spec(
                    cfg, train, side, camera, weight, ready[0].scorer_id if ready else "", reward_words
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
        write_config(cfg, cfg.out_dir)
        episodes = source_for(buffer)
        stop_at = loop.episode + cfg.episodes

        def done() -> bool:
            spent = loop.step / control_hz / 60.0
            return loop.episode >= stop_at or (cfg.robot_minutes is not None and spent >= cfg.robot_minutes)

        def after_episode(stats: dict[str, Any]) -> None:
            stats = episode_record(stats, loop, buffer, control_hz)
            log_episode(cfg.out_dir, stats)
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


def start_from_sim_run(agent: Any, cfg: Config, train: Any, state: dict[str, Any]) -> None:
    """A new fine-tuning run's agent: the sim run's (its critics handed over without their privileged inputs
    when it trained with ``--asymmetric-critic``), the critics alone learning for ``--critic-warmup-updates``."""
    from agents.errors import AgentError
    from agents.sim_to_robot import load_sim_into_robot_sac

    if getattr(train, "asymmetric_critic", False):
        try:
            how = load_sim_into_robot_sac(agent, state["agent"])
        except AgentError as exc:
            raise ConfigError(f"--from {cfg.from_run}: {exc}") from None
        print(
            f"finetune: the critics of {cfg.from_run} were handed over without their privileged inputs: {how}"
        )
    else:
        agent.load_state_dict(state["agent"])
    agent.critic_only_until = agent.num_updates + cfg.critic_warmup_updates


def store_spec(
    cfg: Config, train: Any, side: RobotSide, camera: str, weight: float, scorer_id: str, reward_words: str
) -> StoreSpec:
    """The fine-tuning run's replay buffer: a zarr store in ``out_dir`` that is a recording of the arm (its
    ``vlmrl_record`` attributes), with the sim run's discount and n-step."""
    buffer_cfg = dataclasses.replace(
        cfg.buffer,
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
        "action_keys": list(side.action_keys),
        "cameras": list(side.cameras),
        "from_run": str(cfg.from_run),
    }
    info_keys = INFO_KEYS + ((POLICY_VERSION_KEY,) if cfg.actors else ())
    return StoreSpec(
        cfg=buffer_cfg, obs_spec=side.obs_spec, action_dim=side.action_dim, info_keys=info_keys,
        path=cfg.out_dir / "buffer.zarr", record=record,
    )  # fmt: skip


def refuse_changed_store(cfg: Config, stored: int, checkpointed: int) -> None:
    """A resume refuses a store that changed after its checkpoint."""
    raise ConfigError(
        f"--resume: {cfg.out_dir / 'buffer.zarr'} holds {stored} episodes but the checkpoint in {cfg.out_dir} "
        f"was taken at {checkpointed}; the store changed after the checkpoint"
    )


def episode_record(stats: dict[str, Any], loop: LoopState, buffer: Any, control_hz: float) -> dict[str, Any]:
    """One episode's line of ``metrics.jsonl``: the source's stats in plain types, the episode number, the
    robot minutes so far (every step collected, over the control rate), scored clips and transitions."""
    rest = {k: v for k, v in stats.items() if k not in ("return", "success", "length", "interventions")}
    return {
        "return": stats["return"],
        "success": bool(stats["success"]),
        "steps": int(stats["length"]),
        "interventions": int(stats["interventions"]),
        **rest,
        "episode": loop.episode - 1,
        "robot_minutes": loop.step / control_hz / 60.0,
        "scored": int(stats.get("scorer/scored", 0)),
        "transitions": buffer.num_transitions,
    }


def log_episode(out_dir: Path, stats: dict[str, Any]) -> None:
    """Append the episode to ``metrics.jsonl`` (its operator's signals to ``operator.jsonl``) and print its
    line."""
    from vlmrl.finetune_report import episode_line

    operator = stats.pop("operator", None)
    with (out_dir / "metrics.jsonl").open("a") as f:
        f.write(json.dumps(stats, default=float) + "\n")
    if operator is not None:
        with (out_dir / "operator.jsonl").open("a") as f:
            f.write(json.dumps({"episode": stats["episode"], **operator}, default=float) + "\n")
    print(episode_line(stats))


def open_scorer(
    cfg: Config, train: Any, scorer_cfg: Any, side: RobotSide, camera: str
) -> tuple[Any, str] | None:
    """The reward's ready scorer and its prompt (None: the keys alone): the sim run's own, asked as training
    asked it and through its score calibration (the copy `vlmrl train` keeps in its run directory), or
    ``--scorer``'s, checked against the clips' camera and frame size when it declares them."""
    if scorer_cfg is None:
        return None
    if cfg.scorer is None:  # the sim run's
        calibration = (
            cfg.from_run / SCORE_CALIBRATION_FILE if getattr(train, "score_calibration", None) else None
        )
        return ready_scorer(train.scorer, side.task_description, prompt=train.prompt, calibration=calibration)
    source = (camera.removeprefix("pixels/"), side.obs_spec[camera][0][:2]) if camera else None
    return ready_scorer(scorer_cfg, side.task_description, source=source)


def check_operator(cfg: Config) -> None:
    """One-line ConfigError for an operator that cannot run as asked."""
    if cfg.operator == "scripted" and cfg.robot.type != "sim_so101":
        raise ConfigError(
            f"--operator scripted watches the twin's task and drives with its expert: it needs --robot.type "
            f"sim_so101, not {cfg.robot.type} (a person operates a real arm: --operator person)"
        )
    if cfg.operator == "scripted" and cfg.teleop == "leader":
        raise ConfigError("--operator scripted takes over with the twin's expert: leave --teleop leader out")


def describe_robot(cfg: Config) -> str:
    """The arm in words, for report.md."""
    if cfg.robot.type == "sim_so101":
        return f"the twin (sim_so101), unit {cfg.robot.unit or 'nominal'} (sim.units), task {cfg.task}"
    return f"{cfg.robot.type} on {cfg.robot.port} (id {cfg.robot.id})"


def describe_operator(cfg: Config) -> str:
    """Who pressed the keys, in words, for report.md."""
    if cfg.operator == "scripted":
        o = cfg.scripted_operator
        return (
            f"scripted (sim.scripted_operator): takeovers with the twin's expert after a stall ({o.stall_steps} "
            f"steps under {o.stall_m:g} m) or a drift out of the workspace, {o.takeover_steps} steps each, at "
            f"most {o.budget_steps} per episode; signals per episode in operator.jsonl"
        )
    return f"a person (keyboard keys; takeovers with the {cfg.teleop})"


SourceFor = Callable[[Any], Any]
"""Builds the loop's experience source once the replay buffer exists."""


def make_teleop(cfg: Config, env: Any) -> Any:
    """Who drives during a takeover: the leader arm at ``cfg.leader_port``, or the keyboard jog."""
    from robot.teleop import KeyboardJog, LeaderArm, leader_type_for

    if cfg.teleop == "leader":
        return LeaderArm(leader_type_for(cfg.robot.type), cfg.leader_port)
    return KeyboardJog(env.action_keys, dict.fromkeys(env.action_keys, 2.0))


def make_operator(cfg: Config, env: Any) -> tuple[Any, Any]:
    """The operator's keys and who drives its takeovers: the twin's scripted operator (both), or the
    keyboard's operator keys and ``make_teleop``'s driver."""
    from robot.teleop import OperatorKeys

    if cfg.operator == "scripted":
        from sim.scripted_operator import ScriptedOperator

        operator = ScriptedOperator(env.robot, cfg.scripted_operator)
        return operator, operator
    keys = OperatorKeys()
    try:
        return keys, make_teleop(cfg, env)
    except BaseException:
        keys.close()
        raise


def open_robot_env(cfg: Config, out_dir: Path, robot_factories: dict[str, Any] | None) -> Any:
    """The arm's env as finetune runs it: success only from the operator's keys (never the twin's privileged
    task status), safety clips counted in the episode's line instead of a warning of the env's."""
    return make_robot_env(cfg, out_dir, robot_factories, warn_clips=False, privileged_status=False)


def delta_scale_of(sim: Any) -> list[float] | None:
    """A joint-delta sim run's per-joint action scale (as ``vlmrl deploy`` takes it), None for joint targets."""
    if sim.action_mode != "delta":
        return None
    return joint_delta_scale(sim.max_delta_deg, sim.max_delta_gripper)


@contextmanager
def one_arm(
    cfg: Config,
    obs_spec: dict,
    new: NewPaths,
    robot_factories: dict[str, Any] | None,
    delta_scale: list[float] | None = None,
) -> Iterator[tuple[RobotSide, SourceFor]]:
    """The arm in this process: its env (checked against the policy), operator keys and teleop;
    ``delta_scale`` for a joint-delta policy (``vlmrl.sources.RobotEpisodes``)."""
    with new.removed_on_failure():
        env = open_robot_env(cfg, cfg.out_dir, robot_factories)
    with env:
        with new.removed_on_failure():
            check_policy_fits(obs_spec, env, f"the policy of {cfg.from_run}")
            keys, teleop = make_operator(cfg, env)
        try:
            yield (
                describe_env(env),
                lambda buffer: RobotEpisodes(
                    env, buffer, keys, teleop, seed_base=cfg.seed, delta_scale=delta_scale
                ),
            )
        finally:
            keys.close()
            teleop.close()


@dataclass(frozen=True)
class ArmActorConfig:
    """What one robot actor of ``--actors`` opens (``open_arm``, in the actor's process)."""

    cfg: Config
    """The fine-tuning config with this arm's ``robot`` and ``leader_port``."""
    out_dir: Path
    """Where this arm's safety.jsonl goes."""
    policy_obs: dict[str, Any]
    """What the policy reads: the arm's env must provide it."""
    robot_factories: dict[str, Any] | None = None


def open_arm(arm: ArmActorConfig) -> RobotKit:
    """A robot actor's env, operator keys and teleop (runs in the actor's process)."""
    env = open_robot_env(arm.cfg, arm.out_dir, arm.robot_factories)
    try:
        check_policy_fits(arm.policy_obs, env, f"the policy of {arm.cfg.from_run}")
        return RobotKit(env, *make_operator(arm.cfg, env))
    except BaseException:
        env.close()
        raise


ARM_FILE_KEYS = frozenset(f.name for f in dataclasses.fields(ArmConfig)) | {"leader_port"}


def arm_configs(cfg: Config) -> list[Config]:
    """One config per actor: ``cfg`` with each arm's overrides from ``--arms`` (else ``cfg`` itself).

    Raises:
        ConfigError: ``--actors`` on real arms without ``--arms``, or an arms file that cannot be read, is not a
            list of one object per actor, names an unknown field, or gives two arms the same port or id.
    """
    if cfg.arms is None:
        if cfg.robot.type != "sim_so101" and cfg.actors > 1:
            raise ConfigError(
                f"--actors {cfg.actors} on {cfg.robot.type}: give each arm its port and id with --arms FILE "
                '(a JSON list such as [{"port": "/dev/ttyACM0", "id": "left"}, ...])'
            )
        return [cfg] * cfg.actors
    try:
        entries = json.loads(cfg.arms.read_text())
    except (OSError, ValueError) as exc:
        raise ConfigError(f"--arms {cfg.arms}: cannot read it as JSON ({exc})") from None
    if (
        not isinstance(entries, list)
        or len(entries) != cfg.actors
        or not all(isinstance(e, dict) for e in entries)
    ):
        raise ConfigError(f"--arms {cfg.arms}: expected a JSON list of {cfg.actors} objects (one per actor)")
    out = []
    for i, entry in enumerate(entries):
        unknown = sorted(set(entry) - ARM_FILE_KEYS)
        if unknown:
            raise ConfigError(
                f"--arms {cfg.arms}: arm {i} has unknown fields {unknown} (known: {sorted(ARM_FILE_KEYS)})"
            )
        robot = {k: tuple(v) if isinstance(v, list) else v for k, v in entry.items() if k != "leader_port"}
        out.append(
            dataclasses.replace(
                cfg,
                robot=dataclasses.replace(cfg.robot, **robot),
                leader_port=entry.get("leader_port", cfg.leader_port),
            )
        )
    for name in ("port", "id"):
        values = [getattr(c.robot, name) for c in out if getattr(c.robot, name) is not None]
        if len(values) != len(set(values)):
            raise ConfigError(f"--arms {cfg.arms}: two arms have the same {name} ({values})")
    return out


def check_actor_settings(cfg: Config) -> None:
    """``vlmrl train``'s one-line checks of ``--actors`` and ``--ray.*`` (finetune has no ``--reward-program``
    or ``--prior-data``, the other things they refuse)."""
    from types import SimpleNamespace

    from vlmrl.train_config import check_actors

    check_actors(SimpleNamespace(actors=cfg.actors, ray=cfg.ray, reward_program=None, prior_data=None))  # type: ignore[arg-type]


def describe_difference(a: RobotSide, b: RobotSide) -> str:
    """What differs between two arms' envs, in words."""
    parts = []
    for name in ("obs_spec", "action_keys", "cameras", "task_description"):
        if getattr(a, name) != getattr(b, name):
            parts.append(f"{name} {getattr(b, name)!r} instead of {getattr(a, name)!r}")
    return "; ".join(parts) or "action_dim"


@contextmanager
def several_arms(
    cfg: Config,
    agent: Any,
    obs_spec: dict,
    action_space: Any,
    new: NewPaths,
    robot_factories: dict[str, Any] | None,
    delta_scale: list[float] | None = None,
) -> Iterator[tuple[RobotSide, SourceFor]]:
    """``cfg.actors`` robot actors on Ray (see the module doc), all up and alike; the learner's view of their
    envs. ``delta_scale`` for a joint-delta policy, as ``one_arm``."""
    from vlmrl.actor_source import ActorEpisodes, connect  # imports Ray: only with --actors
    from vlmrl.env_actor import PolicySpec
    from vlmrl.robot_actor import RobotActor

    arms = [
        ArmActorConfig(arm, cfg.out_dir / f"arm-{i}", obs_spec, robot_factories)
        for i, arm in enumerate(arm_configs(cfg))
    ]
    connect(cfg.ray.address)
    policy = PolicySpec(
        agent_cfg=agent.cfg,
        obs_spec=obs_spec,
        privileged_keys=(),
        policy_keys=tuple(obs_spec),
        estimate_dim=agent.estimate_dim,
    )
    source = ActorEpisodes(
        cfg.actors, f"finetune-{cfg.out_dir.resolve().name}-{uuid.uuid4().hex[:8]}", open_arm, None, policy,
        [], cfg.seed, None, agent, lambda: False, cfg.ray,
        actor_class=RobotActor, actor_configs=arms, actor_kwargs={"action_space": action_space, "delta_scale": delta_scale},
    )  # fmt: skip
    try:
        with new.removed_on_failure():
            side, *others = source.describe()  # waits for every arm to be up
            for i, other in enumerate(others, start=1):
                if other != side:
                    raise ConfigError(
                        f"arm {i} ({arms[i].cfg.robot.port or 'twin'}) differs from arm 0: {describe_difference(side, other)}; "
                        "the arms of one run must observe and act alike"
                    )
        print(f"vlmrl finetune: {cfg.actors} arms on the Ray cluster (learner: this process)")

        def bind(buffer: Any) -> Any:
            source.buffer = buffer
            return source

        yield side, bind
    finally:
        source.close()


def sim_policy_run_info(run_dir: Path) -> dict[str, Any] | None:
    """The training settings the sim run's ``policy.pt`` carries (``agents.export``: task, cameras, image
    size, control rate, action mode), passed on to the fine-tuned policy, which reads and acts the same way;
    None when the run has no exported policy or it carries none."""
    path = run_dir / "policy.pt"
    if not path.is_file():
        return None
    from agents.export import load_policy

    run = load_policy(path).run
    return {**run, "fine_tuned_from": str(run_dir)} if run else None


def load_finetune_checkpoint(cfg: Config) -> dict[str, Any] | None:
    """The checkpoint to resume from (None for a new run); refuses to mix a new run into an old one."""
    if not cfg.resume:
        if holds_checkpoint(cfg.out_dir):
            raise ConfigError(
                f"--out-dir {cfg.out_dir} holds a fine-tuning run; continue it with --resume or choose another"
            )
        return None
    return load_checkpoint(cfg.out_dir, flag="--resume", required=("agent", "buffer", "loop"), legacy=True)
