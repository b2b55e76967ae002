"""Record episodes on a robot (or its twin) by teleoperation or a policy; zarr store + LeRobotDataset.

    vlmrl record --source keyboard                          # jog the twin's joints with q/a w/s e/d ...
    vlmrl record --source leader --leader-port /dev/ttyACM1 --robot.type so101_follower --robot.port /dev/ttyACM0
    vlmrl record --source policy --policy runs/train/policy.pt --episodes 10
    vlmrl record --source scripted --episodes 20            # the twin's privileged expert (demonstrations)

Operator keys (with a display): right arrow = success, left = failure (both end the episode), up =
discard and re-record the episode, escape = emergency stop. Each episode is kept in memory until it ends,
then committed to ``out_dir/episodes.zarr`` (a crash loses at most the episode in flight); the store is
reopened and extended by later runs. At the end every stored episode is exported to
``out_dir/lerobot`` (LeRobotDataset v3.0 through ``buffer.io.export_lerobot``, LeRobot's own writer;
rebuilt, then swapped in; a failed export leaves the previous one and says the new episodes are kept).
A run that stops early (the watchdog, an emergency stop, Ctrl-C) still exports the episodes committed
before the stop, then reports the stop.

On the twin (``--robot.type sim_so101``), ``--env.control-hz`` left at its default becomes the rate the
twin's policies train at (``--source policy``: the policy's; otherwise ``SimConfig.control_hz``, 20 Hz),
so recorded episodes match training and deploy. The twin takes ``vlmrl train``'s camera options and
randomisation (``--sim.cameras``, ``--sim.image-size``, ``--sim.camera-calibration``,
``--sim.randomize.*``), and its recordings store what a training run stores: ``state`` is the twin's state
vector (``sim.so101.env.STATE_NAMES``), beside the joint keys and ``pixels/<camera>``, so a recording is
``vlmrl train --prior-data`` (with ``--sim.action-mode absolute``: recorded actions are joint targets).

Nothing in ``out_dir`` changes before the inputs are checked (robot, driver, policy, an existing store);
a run that fails on them removes what it created and leaves the previous run's files as they were.
"""

from __future__ import annotations

import logging
import shutil
from collections.abc import Callable
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path
from typing import Any, Literal

import numpy as np

from agents.export import load_policy
from buffer import BufferConfig, BufferError
from buffer.io import export_lerobot, open_recorded
from buffer.metadata import read_store_metadata
from buffer.storage.integrity import describe_skipped
from buffer.storage.shard_format import DEFAULT_JPEG_QUALITY, FrameCodec
from robot.config import LeRobotEnvConfig
from robot.contract import env_spec
from robot.errors import RobotError
from robot.signals import interrupt_on_signals
from robot.teleop import KeyboardJog, LeaderArm, OperatorKeys, leader_type_for
from sim.config import SimConfig, TwinConfig
from sim.so101.env import STATE_NAMES
from vlmrl.deployment.robot_env import RobotEnvConfig, check_policy_fits, make_robot_env
from vlmrl.errors import ConfigError
from vlmrl.loop.assembly import open_episode_store
from vlmrl.run_dir import NewPaths, write_config

logger = logging.getLogger("vlmrl.record")


@dataclass(frozen=True, kw_only=True)
class Config(RobotEnvConfig):
    """vlmrl record: record episodes (teleoperation or a policy) to zarr / LeRobotDataset."""

    source: Literal["keyboard", "leader", "policy", "scripted"] = "keyboard"
    """Who drives: keyboard jogging, a LeRobot leader arm, an exported policy, or the twin's scripted expert."""
    policy: Path | None = None
    """policy.pt for ``--source policy``."""
    leader_type: str = ""
    """LeRobot leader arm type for ``--source leader``; empty: the follower's own (``robot.arms``:
    so101_follower -> so101_leader, koch_follower -> koch_leader)."""
    leader_port: str | None = None
    """Serial port of the leader arm."""
    jog_step: float = 2.0
    """Keyboard jogging: degrees (gripper: percent) per control step while a key is held."""
    episodes: int = 1
    """Episodes to record."""
    seed: int = 0
    """Seed of the first episode (the twin places its objects from it)."""
    out_dir: Path = Path("runs/record")
    """Holds episodes.zarr (appended to across runs), lerobot/ (the export) and config.json."""
    capacity_steps: int = 100_000
    """Steps the zarr store holds (a new store only; the oldest episodes go first when full)."""
    frame_codec: FrameCodec = "none"
    """Frame compression of a new store (an existing one keeps its own); `jpeg` is lossy, ~8x smaller
    (``buffer.BufferConfig.frame_codec``)."""
    frame_quality: int = DEFAULT_JPEG_QUALITY
    """JPEG quality (1..100) of ``--frame-codec jpeg``, recorded in the store."""
    export_lerobot: bool = True
    """Export every stored episode to ``out_dir/lerobot`` at the end."""
    skip_corrupt: bool = False
    """Export: leave out stored episodes whose data is damaged (listed on the terminal) instead of
    failing. (Recording never appends to a store with damaged episodes.)"""
    sim: TwinConfig = field(default_factory=TwinConfig)
    """The twin's cameras, calibrated cameras and domain randomisation, as ``vlmrl train --sim.*`` takes
    them (``--robot.type sim_so101`` only): ``--sim.cameras``, ``--sim.image-size``,
    ``--sim.camera-calibration``, ``--sim.calibration-robot-id``, ``--sim.camera-crop``,
    ``--sim.randomize.*``."""


Driver = Callable[[dict[str, np.ndarray]], np.ndarray]


def make_driver(cfg: Config, env: Any) -> tuple[Driver, Callable[[], None], Callable[[], None]]:
    """(propose action from obs, reset hook called after env.reset, close)."""
    keys = list(env.action_keys)

    def ordered(targets: dict[str, float]) -> np.ndarray:
        return np.array([targets[k] for k in keys], dtype=np.float32)

    if cfg.source == "policy":
        if cfg.policy is None or not cfg.policy.is_file():
            raise ConfigError(f"--source policy needs --policy pointing at a policy.pt (got {cfg.policy})")
        policy = load_policy(cfg.policy)
        check_policy_fits(policy.obs_spec, env, f"policy {cfg.policy}")
        return (lambda obs: np.asarray(policy(obs), np.float32)), (lambda: None), (lambda: None)
    if cfg.source == "scripted":
        expert_of = getattr(env.robot, "scripted_expert", None)
        if expert_of is None:
            raise ConfigError(
                f"--source scripted needs the twin (--robot.type sim_so101), not {cfg.robot.type}"
            )
        state: dict[str, Any] = {}

        def reset_expert() -> None:
            state["next"] = expert_of()

        return (lambda obs: ordered(state["next"]())), reset_expert, (lambda: None)
    if cfg.source == "leader":
        leader = LeaderArm(cfg.leader_type or leader_type_for(cfg.robot.type), cfg.leader_port)
        return (lambda obs: ordered(leader.action(env.measured))), (lambda: None), leader.close
    jog = KeyboardJog(keys, {k: cfg.jog_step * (2.5 if k == "gripper.pos" else 1.0) for k in keys})
    return (lambda obs: ordered(jog.action(env.measured))), (lambda: jog.sync(env.measured)), jog.close


def twin_rate(cfg: Config) -> Config:
    """``cfg`` with the twin's training rate as ``env.control_hz`` where it is left at its default.

    A policy trained in the twin acts at ``SimConfig.control_hz`` (or what its ``policy.pt`` says), and
    ``vlmrl deploy`` runs it at that rate; recording the twin at another rate would make episodes that
    neither match training nor replay at the right speed. Real arms and rates the user set are kept.
    """
    if (
        cfg.robot.type != "sim_so101"
        or cfg.twin_control_hz is not None
        or cfg.env.control_hz != LeRobotEnvConfig().control_hz
    ):
        return cfg

    hz = SimConfig().control_hz
    if cfg.source == "policy" and cfg.policy is not None and cfg.policy.is_file():
        hz = float(load_policy(cfg.policy).run.get("control_hz") or hz)
    print(
        f"record: the twin runs at {hz:g} Hz, the rate its policies train at (--env.control-hz sets another)"
    )
    return replace(cfg, env=replace(cfg.env, control_hz=hz))


def main(cfg: Config) -> int:
    """Record ``cfg.episodes`` episodes; returns 0."""
    if cfg.episodes < 1:
        raise ConfigError(f"--episodes {cfg.episodes}: expected at least 1")
    if cfg.source == "policy" and (cfg.policy is None or not cfg.policy.is_file()):
        raise ConfigError(f"--source policy needs --policy pointing at a policy.pt (got {cfg.policy})")
    cfg = twin_options(twin_rate(cfg))
    store = cfg.out_dir / "episodes.zarr"
    new = NewPaths(cfg.out_dir, ["safety.jsonl", "episodes.zarr"])
    with new.removed_on_failure():
        env = make_robot_env(cfg, cfg.out_dir, twin_config=cfg.sim)
    with interrupt_on_signals(), env:
        with new.removed_on_failure():
            spec = env_spec(env)
            layout = recorded_layout(env, spec.obs_spec())
            record_attrs = {
                "task_description": spec.task_description,
                "control_hz": cfg.env.control_hz,
                "robot_type": cfg.robot.type,
                "action_keys": list(env.action_keys),
                "action_mode": "absolute",  # joint targets in LeRobot units, after the safety layer
                "cameras": list(spec.cameras),
                "state_names": list(layout.state_names),
                **({"sim_config": asdict(layout.sim_config)} if layout.sim_config is not None else {}),
            }
            propose, on_reset, close_driver = make_driver(cfg, env)
            try:
                buffer = open_episode_store(
                    store,
                    BufferConfig(
                        storage="zarr",
                        capacity_steps=cfg.capacity_steps,
                        frame_codec=cfg.frame_codec,
                        frame_quality=cfg.frame_quality,
                    ),
                    layout.obs_spec,
                    spec.action_shape[0],
                    ("success", "progress"),
                    record_attrs,
                )
            except BaseException:
                close_driver()
                raise
            write_config(cfg, cfg.out_dir)  # the inputs are valid: this run's config replaces the last
        keys = OperatorKeys()
        recorded, attempt = 0, 0
        stop: BaseException | None = None
        try:
            while recorded < cfg.episodes:
                episode = record_episode(
                    env, propose, on_reset, keys, seed=cfg.seed + attempt, state_of=layout.state_of
                )
                attempt += 1
                if episode is None:
                    logger.info("episode discarded; recording it again")
                    continue
                buffer.add_episode(**episode)
                recorded += 1
                print(f"record: episode {recorded}/{cfg.episodes}: {len(episode['action'])} steps")
        except (RobotError, KeyboardInterrupt) as exc:  # a stop: what was committed is kept and exported
            stop = exc
        finally:
            held = buffer.num_episodes
            close_driver()
            keys.close()
            buffer.close()
    kept = f"record: {recorded} new episode(s) -> {store}, which holds {held} episode(s)"
    if stop is not None:
        kept += f"; stopped during episode {recorded + 1}/{cfg.episodes}, which is not kept"
    if cfg.export_lerobot and held > 0:
        try:
            export_store(store, cfg.out_dir / "lerobot", cfg)
        except BaseException:
            print(f"{kept}; the LeRobot export failed ({cfg.out_dir / 'lerobot'} left as it was):")
            raise
    print(kept)
    if stop is not None:
        if isinstance(stop, RobotError) and cfg.robot.type == "sim_so101" and watchdog_trip(stop):
            raise RobotError(
                f"{stop}: the twin could not render and step within the watchdog's limit on this machine; "
                "lower --env.control-hz or free the CPU"
            ) from stop
        raise stop
    return 0


def twin_options(cfg: Config) -> Config:
    """``cfg`` with ``--sim.cameras`` / ``--sim.image-size`` folded into the arm's cameras and the env's
    image size (one source of truth for the env and the store); ConfigError for ``--sim.*`` options on a
    real arm, which has its own cameras and no randomisation."""
    if cfg.robot.type != "sim_so101":
        if cfg.sim != TwinConfig():
            raise ConfigError(
                f"--sim.* options set the twin's cameras and randomisation (--robot.type sim_so101), not "
                f"{cfg.robot.type}'s"
            )
        return cfg
    robot = cfg.robot if cfg.sim.cameras is None else replace(cfg.robot, cameras=tuple(cfg.sim.cameras))
    env = cfg.env if cfg.sim.image_size is None else replace(cfg.env, image_size=cfg.sim.image_size)
    if cfg.sim.image_size is not None and not cfg.sim.image_size > 0:
        raise ConfigError(f"--sim.image-size {cfg.sim.image_size}: expected a positive number of pixels")
    sim = replace(cfg.sim, cameras=tuple(robot.cameras), image_size=env.image_size)
    return replace(cfg, robot=robot, env=env, sim=sim)


@dataclass(frozen=True)
class RecordedLayout:
    """What a recording stores: the env's observations, with ``state`` as a training run stores it."""

    obs_spec: dict[str, Any]
    """Observation key -> (shape, dtype) of the store."""
    state_names: tuple[str, ...]
    """What each value of ``state`` is: on the twin the training env's ``STATE_NAMES`` (its privileged
    state), on a real arm its joint keys (it has no other state)."""
    state_of: Callable[[], np.ndarray] | None
    """The twin's state at the last observation (None: the env's own ``state``)."""
    sim_config: Any
    """The twin's ``SimConfig`` (None on a real arm), stored so offline training can rebuild the env."""


def recorded_layout(env: Any, obs_spec: dict[str, Any]) -> RecordedLayout:
    """One state layout for recordings and training: on the twin, ``state`` is the training env's state
    vector (``sim.so101.env.STATE_NAMES``), so a recording is prior data for ``vlmrl train`` by key name
    (``state``, the joint keys ``shoulder_pan.pos`` ... and ``pixels/<camera>`` mean the same in both);
    a real arm's ``state`` stays its joint positions, named as its joint keys."""
    privileged = getattr(env.robot, "privileged_state", None)
    if privileged is None:
        return RecordedLayout(dict(obs_spec), tuple(env.action_keys), None, None)

    spec = {**obs_spec, "state": ((len(STATE_NAMES),), np.dtype(np.float32))}
    return RecordedLayout(spec, STATE_NAMES, privileged, env.robot.config.sim_config())


def watchdog_trip(exc: RobotError) -> bool:
    """Whether ``exc`` is the watchdog's stop (``robot.watchdog``: a stale observation or an overrun)."""
    return "stale observation" in str(exc) or "control loop overran" in str(exc)


def record_episode(
    env: Any,
    propose: Driver,
    on_reset: Callable[[], None],
    keys: Any,
    seed: int,
    state_of: Callable[[], np.ndarray] | None = None,
) -> dict[str, Any] | None:
    """Run one episode; returns the arrays for ``ReplayBuffer.add_episode`` (None: the operator discarded
    it). ``state_of``: the ``state`` to store with each observation (``recorded_layout``)."""

    def stored(obs: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
        return obs if state_of is None else {**obs, "state": state_of()}

    obs, info = env.reset(seed=seed)
    obs = stored(obs)
    on_reset()
    keys.poll()
    observations, actions, rewards, terminated, truncated = [obs], [], [], [], []
    infos = [info]
    done = False
    while not done:
        for event in keys.poll():
            if event in ("success", "failure"):
                env.mark_outcome(event == "success")
            elif event == "rerecord":
                return None
        obs, reward, term, trunc, info = env.step(propose(obs))
        obs = stored(obs)
        observations.append(obs)
        actions.append(info["sent_action"])  # what the arm was told, after the safety layer
        rewards.append(reward)
        terminated.append(term)
        truncated.append(trunc)
        infos.append(info)
        done = term or trunc
    return {
        "obs": {k: np.stack([o[k] for o in observations]) for k in observations[0]},
        "action": np.stack(actions).astype(np.float32),
        "reward": np.asarray(rewards, np.float32),
        "terminated": np.asarray(terminated, bool),
        "truncated": np.asarray(truncated, bool),
        "info": {
            "success": np.asarray([i["success"] for i in infos], np.float32),
            "progress": np.asarray([i["progress"] for i in infos], np.float32),
        },
    }


def export_store(store: Path, root: Path, cfg: Config) -> Path:
    """Export the episodes of the zarr store to a LeRobotDataset at ``root`` (built beside it, then swapped
    in; on failure the half-built copy is removed and ``root`` stays as it was). Damaged episodes stop
    the export naming them, or with ``cfg.skip_corrupt`` are left out and listed."""
    meta = read_store_metadata(store)  # one-line BufferError for malformed metadata
    record = meta.record
    buffer = open_recorded(
        BufferConfig(storage="zarr", capacity_steps=meta.capacity),
        meta.obs_spec,
        meta.action_dim,
        meta.info_keys,
        str(store),
    )
    tmp = root.with_name(root.name + ".tmp")
    shutil.rmtree(tmp, ignore_errors=True)
    try:
        skipped: dict[int, str] | None = {} if cfg.skip_corrupt else None
        fps = round(float(record.get("control_hz", cfg.env.control_hz)))
        try:
            export_lerobot(
                buffer,
                tmp,
                fps=fps,
                task=str(record.get("task_description", "")),
                robot_type=record.get("robot_type"),
                action_names=record.get("action_keys"),
                state_names=record.get("state_names"),
                skipped=skipped,
            )
        except BufferError as exc:
            hint = "" if cfg.skip_corrupt else "; --skip-corrupt leaves damaged episodes out of the export"
            raise BufferError(f"{exc}{hint}") from None
        if skipped:
            print(f"record: export: {describe_skipped(skipped)}")
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    finally:
        buffer.close()
    if root.exists():
        shutil.rmtree(root)
    tmp.rename(root)
    return root
