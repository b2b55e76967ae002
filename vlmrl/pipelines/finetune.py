"""Fine-tune a sim-trained SAC policy on a robot (or its twin), with a human in the loop.

    vlmrl finetune --from runs/train/so101-lift                                  # on the twin
    vlmrl finetune --from runs/train/so101-lift --robot.type so101_follower --robot.port /dev/ttyACM0

The agent (actor, critics, temperature, normaliser) starts from ``RUN_DIR/checkpoint/state.pt``. Each
episode runs at the fixed control rate through the safety layer; gradient updates happen between
episodes (``utd_ratio`` per step collected), so learning never stretches a control period. Operator keys
(with a display; `robot.teleop.OPERATOR_KEYS`): right = success, left = failure, up = reset now, space =
take over (the keyboard jog or a leader arm drives; what was sent is stored and learned from), escape
= emergency stop. Transitions go to ``out_dir/buffer.zarr`` one committed episode at a time (a power cut
loses at most the episode in flight); new clips go to the async VLM worker, whose scores set sampling
priorities and the aux reward. The agent is checkpointed after every episode and exported to
``out_dir/policy.pt`` at the end.

The checkpoint must hold ``config`` (the train config: ``agent``, ``sim``, ``policy_obs``, ``buffer``,
``batch_size``, ``scorer``, ``prompt``, ``aux_reward``, ``aux_reward_weight``, ``worker``) and ``agent``;
an optional ``policy_obs_spec`` names the observation keys the policy reads (else they follow
``policy_obs`` as in ``vlmrl train``). Those keys must be ones a robot provides (joint keys,
``pixels/<camera>``): a policy that reads the sim's privileged ``state`` is refused with one line.
"""

from __future__ import annotations

import dataclasses
import json
import logging
import threading
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Annotated, Any, Literal

import numpy as np
import tyro

from buffer.config import BufferConfig
from vlm.config import WorkerConfig
from vlmrl.errors import ConfigError
from vlmrl.pipelines.common import (
    RobotEnvConfig,
    check_policy_fits,
    make_robot_env,
    open_episode_store,
    write_config,
)

logger = logging.getLogger("vlmrl.finetune")

INFO_KEYS = ("success", "progress", "intervention")


@dataclass(frozen=True, kw_only=True)
class Config(RobotEnvConfig):
    """vlmrl finetune: fine-tune a sim-trained policy on a robot (or its twin)."""

    from_run: Annotated[Path, tyro.conf.arg(name="from")]
    """Run directory of ``vlmrl train`` holding checkpoint/state.pt."""
    out_dir: Path = Path("runs/finetune")
    """Holds buffer.zarr, checkpoint.pt, policy.pt, metrics.jsonl, safety.jsonl and config.json."""
    episodes: int = 10
    """Episodes to run on the robot."""
    seed: int = 0
    """Seed of the first episode (the twin places its objects from it)."""
    buffer: BufferConfig = field(default_factory=lambda: BufferConfig(storage="zarr", capacity_steps=50_000))
    """Replay buffer (stored as zarr in out_dir; sampler, n-step, clip length, aux reward weight)."""
    batch_size: int | None = None
    """SAC batch size (None: the sim run's)."""
    learning_starts: int = 0
    """Transitions collected on the robot before the first update."""
    worker: WorkerConfig = field(default_factory=WorkerConfig)
    """Async VLM scoring worker."""
    teleop: Literal["keyboard", "leader"] = "keyboard"
    """Who drives during an intervention."""
    leader_port: str | None = None
    """Leader arm port for ``--teleop leader``."""
    wait_for_scores_s: float = 0.0
    """After each episode, wait up to this long for its clips to be scored (0: fully asynchronous)."""
    torch_threads: int = 1
    """Torch threads for acting and updates (more threads than free cores make the control loop late)."""
    resume: bool = False
    """Continue the fine-tuning run in out_dir (agent, sampler and episode count from its checkpoint.pt;
    the buffer store is reopened) instead of starting from the sim run's agent."""


def load_sim_run(run_dir: Path) -> dict[str, Any]:
    """The checkpoint of a ``vlmrl train`` run (ConfigError naming the file if it is missing or broken)."""
    import torch

    path = run_dir / "checkpoint" / "state.pt"
    if not path.is_file():
        raise ConfigError(
            f"--from {run_dir}: no checkpoint at {path} (is this a `vlmrl train` run directory?)"
        )
    try:
        state = torch.load(path, map_location="cpu", weights_only=False)  # our own file
    except Exception as exc:
        raise ConfigError(f"--from {run_dir}: cannot read {path}: {exc}") from None
    for key in ("config", "agent"):
        if key not in state:
            raise ConfigError(f"--from {run_dir}: {path} has no {key!r} entry")
    return state


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


class ScoreSink:
    """Scores from the worker thread into the buffer: clip scores (priorities) and whole-episode aux
    rewards recomputed from every score of that episode so far (``vlm.aux_reward``)."""

    def __init__(self, buffer: Any, scorer_id: str, aux_cfg: Any) -> None:
        self.buffer, self.scorer_id, self.aux_cfg = buffer, scorer_id, aux_cfg
        self._by_episode: dict[int, list[tuple[int, float]]] = {}
        self._lock = threading.Lock()
        self.scored = 0

    def __call__(self, requests: Sequence[Any], scores: np.ndarray) -> None:
        from vlm.aux_reward import aux_rewards

        scores = np.clip(np.asarray(scores, np.float32), 0.0, 1.0)
        self.buffer.set_scores([r.clip_id for r in requests], scores, self.scorer_id)
        with self._lock:
            touched = set()
            for r, s in zip(requests, scores):
                self._by_episode.setdefault(r.episode, []).append((r.last_step, float(s)))
                touched.add(r.episode)
            self.scored += len(requests)
            snapshot = {e: list(self._by_episode[e]) for e in touched}
        for episode, marks in snapshot.items():
            start, end = self.buffer.episode_rows(episode)
            n = end - start - 1
            ended = bool(self.buffer.storage.read("terminated", np.array([end - 2]))[0])
            steps, values = zip(*marks)
            aux = aux_rewards(self.aux_cfg, n, np.minimum(steps, n), np.asarray(values), terminated=ended)
            self.buffer.set_aux_reward(start + np.arange(n), aux, self.scorer_id)


def main(cfg: Config) -> int:
    """Fine-tune for ``cfg.episodes`` episodes; returns 0."""
    import torch

    from agents.export import export_policy
    from agents.sac import SAC
    from robot.contract import env_spec
    from robot.signals import interrupt_on_signals
    from robot.teleop import KeyboardJog, LeaderArm, OperatorKeys
    from sim import make_env
    from vlm import Clip, ClipRequest, ScoringWorker, make_prompt, make_scorer

    if cfg.episodes < 1:
        raise ConfigError(f"--episodes {cfg.episodes}: expected at least 1")
    torch.set_num_threads(cfg.torch_threads)
    state = load_sim_run(cfg.from_run)
    train = state["config"]
    obs_spec = policy_obs_spec(state)
    sim_env = make_env(dataclasses.replace(train.sim, cameras=()))
    action_space: Any = sim_env.action_space  # the units the agent was trained in; the safety layer clips
    sim_env.close()
    resumed = load_finetune_checkpoint(cfg)
    write_config(cfg, cfg.out_dir)
    env = make_robot_env(cfg, cfg.out_dir)
    with interrupt_on_signals(), env:
        check_policy_fits(obs_spec, env, f"the policy of {cfg.from_run}")
        agent = SAC(train.agent, obs_spec, action_space)
        agent.load_state_dict(resumed["agent"] if resumed else state["agent"])
        spec = env_spec(env)
        camera = f"pixels/{spec.cameras[0]}" if spec.cameras else ""
        scorer = make_scorer(train.scorer)
        buffer_cfg = dataclasses.replace(
            cfg.buffer,
            storage="zarr",
            clip_camera=cfg.buffer.clip_camera or camera,
            aux_reward_scorer=scorer.scorer_id if train.aux_reward_weight > 0 else "",
            aux_reward_weight=train.aux_reward_weight,
            gamma=train.buffer.gamma,
            n_step=train.buffer.n_step,
        )
        record_attrs = {
            "task_description": spec.task_description,
            "control_hz": cfg.env.control_hz,
            "robot_type": cfg.robot.type,
            "action_keys": list(env.action_keys),
            "cameras": list(spec.cameras),
            "from_run": str(cfg.from_run),
        }
        store = cfg.out_dir / "buffer.zarr"
        buffer = open_episode_store(
            store, buffer_cfg, spec.obs_spec(), spec.action_shape[0], INFO_KEYS, record_attrs
        )
        first = 0
        if resumed:
            if buffer.num_episodes != resumed["num_episodes"]:
                buffer.close()
                raise ConfigError(
                    f"--resume: {store} holds {buffer.num_episodes} episodes but checkpoint.pt was taken at "
                    f"{resumed['num_episodes']}; the store changed after the checkpoint"
                )
            buffer.load_state_dict(resumed["buffer"])
            first = int(resumed["episode"]) + 1
        prompt = train.prompt or make_prompt(spec.task_description)
        sink = ScoreSink(
            buffer,
            scorer.scorer_id,
            dataclasses.replace(train.aux_reward, weight=1.0, gamma=buffer_cfg.gamma),
        )

        def load_clip(request: ClipRequest) -> Clip:
            frames, info = buffer.read_clip(request)  # type: ignore[arg-type]  # ClipRef's fields
            return Clip(frames, {k: v for k, v in info.items() if k in ("success", "progress")})

        worker = ScoringWorker(scorer, prompt, load_clip, sink, cfg.worker)
        keys = OperatorKeys()
        teleop: Any = (
            LeaderArm("so101_leader", cfg.leader_port)
            if cfg.teleop == "leader"
            else KeyboardJog(env.action_keys, dict.fromkeys(env.action_keys, 2.0))
        )
        batch_size = cfg.batch_size or train.batch_size
        metrics_path = cfg.out_dir / "metrics.jsonl"
        try:
            for episode in range(first, first + cfg.episodes):
                stats = run_episode(env, agent, buffer, keys, teleop, seed=cfg.seed + episode)
                worker.submit(ClipRequest.from_ref(ref) for ref in buffer.new_clips())
                if cfg.wait_for_scores_s > 0:
                    worker.drain(cfg.wait_for_scores_s)
                if buffer.num_transitions >= max(cfg.learning_starts, batch_size):
                    stats |= update(
                        agent, buffer, batch_size, stats["steps"] * train.agent.utd_ratio, obs_spec
                    )
                stats |= {"episode": episode, "scored": sink.scored, "transitions": buffer.num_transitions}
                with metrics_path.open("a") as f:
                    f.write(json.dumps(stats, default=float) + "\n")
                save_finetune_checkpoint(
                    cfg.out_dir,
                    {
                        "agent": agent.state_dict(),
                        "buffer": buffer.state_dict(),
                        "episode": episode,
                        "num_episodes": buffer.num_episodes,
                    },
                )
                print(
                    f"finetune: episode {episode}: return {stats['return']:.2f} success {stats['success']} steps {stats['steps']}"
                )
        finally:
            worker.drain(30.0)
            worker.close()
            scorer.close()
            keys.close()
            teleop.close()
            buffer.close()
        export_policy(agent, cfg.out_dir / "policy.pt")
    print(f"finetune: {cfg.episodes} episode(s) -> {cfg.out_dir / 'policy.pt'}")
    return 0


def load_finetune_checkpoint(cfg: Config) -> dict[str, Any] | None:
    """The checkpoint to resume from (None for a new run); refuses to mix a new run into an old one."""
    import torch

    path = cfg.out_dir / "checkpoint.pt"
    if not cfg.resume:
        if path.exists():
            raise ConfigError(
                f"--out-dir {cfg.out_dir} holds a fine-tuning run; continue it with --resume or choose another"
            )
        return None
    if not path.is_file():
        raise ConfigError(f"--resume: no checkpoint at {path}")
    try:
        return torch.load(path, map_location="cpu", weights_only=False)  # our own file
    except Exception as exc:
        raise ConfigError(f"--resume: cannot read {path}: {exc}") from None


def save_finetune_checkpoint(out_dir: Path, state: dict[str, Any]) -> None:
    """Write checkpoint.pt atomically (a crash while saving keeps the previous one)."""
    import os

    import torch

    tmp = out_dir / "checkpoint.pt.tmp"
    torch.save(state, tmp)
    os.replace(tmp, out_dir / "checkpoint.pt")


def run_episode(env: Any, agent: Any, buffer: Any, keys: Any, teleop: Any, seed: int) -> dict[str, Any]:
    """One episode: the agent acts (stochastic) unless the operator intervenes; steps go to the buffer."""
    obs, info = env.reset(seed=seed)
    keys.poll()
    total, steps, interventions, done = 0.0, 0, 0, False
    while not done:
        for event in keys.poll():
            if event in ("success", "failure"):
                env.mark_outcome(event == "success")
            elif event == "rerecord":
                env.truncate_now()  # "reset now": the data stays, the episode is not terminal
        if keys.intervening:
            targets = teleop.action(env.measured)
            action = np.array([targets[k] for k in env.action_keys], np.float32)
            interventions += 1
        else:
            teleop_sync = getattr(teleop, "sync", None)
            if callable(teleop_sync):
                teleop_sync(env.measured)  # a takeover starts where the arm is
            action = agent.act({k: obs[k] for k in agent.obs_spec}, deterministic=False)
        next_obs, reward, terminated, truncated, info = env.step(action)
        step_info = {
            "success": info["success"],
            "progress": info["progress"],
            "intervention": float(keys.intervening),
        }
        buffer.add_step(obs, info["sent_action"], reward, terminated, truncated, step_info, next_obs)
        obs, total, steps = next_obs, total + float(reward), steps + 1
        done = terminated or truncated
    return {"return": total, "success": bool(info["success"]), "steps": steps, "interventions": interventions}


def update(
    agent: Any, buffer: Any, batch_size: int, n_updates: int, obs_spec: dict[str, Any]
) -> dict[str, float]:
    """``n_updates`` SAC updates from the buffer, TD errors back to the sampler; mean metrics."""
    sums: dict[str, float] = {}
    for _ in range(n_updates):
        buffer.set_learner_step(agent.num_updates)
        batch = buffer.sample(batch_size, keys=list(obs_spec))
        out = agent.update(batch)
        buffer.update_priorities(batch.indices, out["td_error"])
        for k, v in out.items():
            if np.ndim(v) == 0:
                sums[k] = sums.get(k, 0.0) + float(v)
    return {k: v / max(n_updates, 1) for k, v in sums.items()} | {"updates": float(n_updates)}
