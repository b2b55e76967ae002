"""The arms a fine-tuning run learns from: one in this process, or several in Ray actors (``--actors``), each
with its env (safety layer, watchdog), operator keys and teleop; the learner sees them as one experience
source (``vlmrl.loop.sources.RobotEpisodes``, ``vlmrl.actors.ray_source.ActorEpisodes``).

Several arms at once (``--actors N``, Ray; ``vlmrl.actors.robot_actor``): each arm runs in its own Ray actor with
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
"""

from __future__ import annotations

import dataclasses
import json
import uuid
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from robot.config import ArmConfig
from robot.teleop import KeyboardJog, LeaderArm, OperatorKeys, leader_type_for
from sim.scripted_operator import ScriptedOperator
from vlmrl.actors.env_actor import PolicySpec
from vlmrl.actors.robot_actor import RobotActor, RobotKit, RobotSide, describe_env
from vlmrl.deployment.robot_env import check_policy_fits, make_robot_env
from vlmrl.errors import ConfigError
from vlmrl.loop.arm_actions import ActionConverter
from vlmrl.loop.sources import RobotEpisodes
from vlmrl.online.config import check_ray_actors
from vlmrl.run_dir import NewPaths

Config = Any
"""A ``vlmrl finetune`` config (``vlmrl.pipelines.finetune.Config``)."""


def check_operator(cfg: Config) -> None:
    """One-line ConfigError for an operator that cannot run as asked."""
    if cfg.operator == "scripted" and cfg.robot.type != "sim_so101":
        raise ConfigError(
            f"--operator scripted watches the twin's task and drives with its expert: it needs --robot.type "
            f"sim_so101, not {cfg.robot.type} (a person operates a real arm: --operator person)"
        )
    if cfg.operator == "scripted" and cfg.teleop == "leader":
        raise ConfigError("--operator scripted takes over with the twin's expert: leave --teleop leader out")


SourceFor = Callable[[Any], Any]
"""Builds the loop's experience source once the replay buffer exists."""


def make_teleop(cfg: Config, env: Any) -> Any:
    """Who drives during a takeover: the leader arm at ``cfg.leader_port``, or the keyboard jog."""
    if cfg.teleop == "leader":
        return LeaderArm(leader_type_for(cfg.robot.type), cfg.leader_port)
    return KeyboardJog(env.action_keys, dict.fromkeys(env.action_keys, 2.0))


def make_operator(cfg: Config, env: Any) -> tuple[Any, Any]:
    """The operator's keys and who drives its takeovers: the twin's scripted operator (both), or the
    keyboard's operator keys and ``make_teleop``'s driver."""
    if cfg.operator == "scripted":
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


@contextmanager
def one_arm(
    cfg: Config,
    obs_spec: dict,
    new: NewPaths,
    robot_factories: dict[str, Any] | None,
    convert: ActionConverter | None = None,
) -> Iterator[tuple[RobotSide, SourceFor]]:
    """The arm in this process: its env (checked against the policy), operator keys and teleop;
    ``convert`` for a joint-delta or end-effector policy (``vlmrl.loop.sources.RobotEpisodes``)."""
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
                    env,
                    buffer,
                    keys,
                    teleop,
                    seed_base=cfg.seed,
                    convert=convert,
                    store_action=cfg.store_action,
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
    """``vlmrl train``'s one-line checks of ``--actors`` and ``--ray.*`` (``check_ray_actors``; finetune has
    none of the options train refuses beside actors)."""
    check_ray_actors(cfg.actors, cfg.ray)


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
    convert: ActionConverter | None = None,
) -> Iterator[tuple[RobotSide, SourceFor]]:
    """``cfg.actors`` robot actors on Ray (see the module doc), all up and alike; the learner's view of their
    envs. ``convert`` for a joint-delta or end-effector policy, as ``one_arm``."""
    from vlmrl.actors.ray_source import ActorEpisodes, connect  # imports Ray: only with --actors

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
        actor_class=RobotActor, actor_configs=arms, actor_kwargs={"action_space": action_space, "convert": convert, "store_action": cfg.store_action},
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


def control_hz_of(cfg: Config) -> float:
    """Control periods per second of the arm: on the twin the physics time a step advances
    (``--twin-control-hz``, else ``--env.control-hz``), on a real arm the loop's rate."""
    if cfg.robot.type == "sim_so101" and cfg.twin_control_hz:
        return float(cfg.twin_control_hz)
    return float(cfg.env.control_hz)
