"""Offline RL from recorded episodes: IQL (or behaviour cloning) on a zarr store or LeRobotDataset.

``vlmrl train --offline DATA`` runs ``OfflineRun``: load the episodes (``vlmrl.offline.datasets``), label rewards
(``--reward sparse|aux|sparse+aux|scorer:<id>``), then gradient steps on uniform batches. Evaluation:

- data from the SO-101 twin (a store written by ``vlmrl record --robot.type sim_so101`` or by
  ``benchmarks/offline_experiment.py``, which stores its sim config): success rate of the deterministic
  policy in the twin, on evaluation-only seeds;
- anything else (a real arm's recordings): what can be known without a simulator, on held-out episodes:
  V on successful vs failed episodes (and the AUC with which V tells them apart), and the action error
  of the policy on held-out successful episodes (demonstrations).

The run directory holds config.json, checkpoint.pt (exact resume: agent, sampler RNG, history),
metrics.jsonl, curves.png, report.md and policy.pt (``agents.export``, deployable like SAC's).
"""

from __future__ import annotations

import dataclasses
import json
import os
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

import numpy as np

from agents.config import IQLConfig
from agents.export import export_policy
from agents.iql import IQL
from buffer.metadata import read_store_metadata
from sim.config import SimConfig, stored_sim_settings
from sim.factory import make_env
from vlmrl.errors import ConfigError
from vlmrl.evaluation.episodes import eval_seeds, evaluate
from vlmrl.loop.checkpoint import load_torch_file
from vlmrl.offline.datasets import Episodes, OfflineDataset, label_rewards, load_episodes, split_episodes

JOINT_SUFFIX = ".pos"
CONFIG_FILE = "offline_config.json"
"""Marks an offline run directory (``vlmrl train --resume DIR`` continues it here)."""


@dataclass(frozen=True, kw_only=True)
class OfflineConfig:
    """One offline run (IQL or BC on recorded episodes)."""

    data: Path = Path("")
    """The recorded episodes: a vlmrl zarr store (``vlmrl record``'s episodes.zarr) or a LeRobotDataset."""
    reward: str = "sparse"
    """sparse (the episodes' success info), aux (the stored aux reward of the one scorer there is),
    scorer:<id> (that scorer's stored aux reward), or sparse+aux / sparse+scorer:<id> (RG-VLM's auxiliary mode).
    Aux rewards are written beside the data by ``vlmrl score``."""
    aux_weight: float = 1.0
    """Multiplier of the stored aux reward."""
    policy_obs: Literal["auto", "state", "pixels", "robot"] = "auto"
    """What the policy reads: state (the sim's state vector), pixels (state + cameras), robot (LeRobot joint
    keys + cameras, what a real arm provides); auto: state when the data has it, else robot."""
    agent: IQLConfig = field(default_factory=IQLConfig)
    """IQL hyper-parameters (``--agent.bc`` for behaviour cloning of the same data)."""
    gamma: float = 0.99
    """Discount of the Q target."""
    gradient_steps: int = 20_000
    """Gradient steps of the whole run."""
    batch_size: int = 256
    """Transitions per gradient step."""
    eval_every_steps: int = 2_000
    """Evaluate every this many gradient steps (and at the end)."""
    eval_episodes: int = 10
    """Twin evaluation episodes per evaluation (deterministic policy, evaluation-only seeds)."""
    holdout_fraction: float = 0.1
    """Share of episodes held out (successes and failures alike) for the sim-free metrics; data from the
    twin is evaluated in the twin and trains on every episode."""
    checkpoint_every_steps: int = 5_000
    """Checkpoint every this many gradient steps (and at the end or on Ctrl-C)."""
    stop_after_steps: int = 0
    """Stop this invocation (checkpoint and report) after this many gradient steps; 0: run to the end."""
    seed: int = 0
    """Seed of the agent, the batch sampling, the held-out split and the evaluation episodes."""
    run_dir: str = ""
    """Output directory; empty: runs/offline-<data name>-<time>."""
    resume: str = ""
    """Continue the run in this directory from its checkpoint (its saved config is used)."""
    torch_threads: int = 1
    """Torch threads of the learner."""
    then_online_steps: int = 0
    """``vlmrl train --then-online``: env steps of the online run that follows (kept so a resumed offline
    run goes on to it); the offline run itself does not read it."""


def select_obs_keys(policy_obs: str, available: list[str], source: str) -> list[str]:
    """The observation keys a policy of kind ``policy_obs`` reads from data holding ``available``.

    Raises:
        ConfigError: the data lacks what that kind of policy needs.
    """
    pixels = sorted(k for k in available if k.startswith("pixels/"))
    joints = sorted(k for k in available if k.endswith(JOINT_SUFFIX))
    if policy_obs == "auto":
        policy_obs = "state" if "state" in available else "robot"
    if policy_obs == "state":
        keys = ["state"]
    elif policy_obs == "pixels":
        keys = ["state", *pixels]
    else:
        keys = [*joints, *pixels]
    if policy_obs in ("state", "pixels") and "state" not in available:
        raise ConfigError(
            f"--policy-obs {policy_obs}: {source} has no 'state' observation (it has {available}); "
            "use --policy-obs robot"
        )
    if policy_obs == "pixels" and not pixels:
        raise ConfigError(f"--policy-obs pixels: {source} holds no camera frames (it has {available})")
    if policy_obs == "robot" and not joints:
        raise ConfigError(
            f"--policy-obs robot: {source} has no LeRobot joint keys (*{JOINT_SUFFIX}; it has {available})"
        )
    return keys


class OfflineRun:
    """An offline run: data, agent, sampler, optional twin, history; ``run`` trains to the budget."""

    def __init__(self, cfg: OfflineConfig, run_dir: Path) -> None:
        import gymnasium as gym

        self.cfg, self.run_dir = cfg, run_dir
        keys = available_keys(cfg.data)
        self.obs_keys = select_obs_keys(cfg.policy_obs, keys, str(cfg.data))
        self.episodes = load_episodes(cfg.data, self.obs_keys)
        self.rewards = label_rewards(self.episodes, cfg.reward, cfg.aux_weight)
        self.env = twin_env(self.episodes, self.obs_keys, run_dir)
        holdout = 0.0 if self.env is not None else cfg.holdout_fraction
        self.train_ids, self.held_ids = split_episodes(self.episodes, holdout, cfg.seed)
        self.dataset = OfflineDataset(self.episodes, self.rewards, cfg.gamma, self.train_ids, seed=cfg.seed)
        obs_spec = {k: (self.episodes.obs[k].shape[1:], self.episodes.obs[k].dtype) for k in self.obs_keys}
        self.agent = IQL(cfg.agent, obs_spec, action_box(self.episodes, self.env, gym))
        self.step = 0
        self.history: list[dict[str, float]] = []

    # ------------------------------------------------------------------------------------- the loop
    def run(self) -> dict[str, Path]:
        """Gradient steps to the budget with evaluations and checkpoints; returns the files written."""
        cfg = self.cfg
        stop_at = cfg.gradient_steps
        if cfg.stop_after_steps:
            stop_at = min(stop_at, self.step + cfg.stop_after_steps)
        log = (self.run_dir / "metrics.jsonl").open("a")
        started = time.monotonic()
        try:
            while self.step < stop_at:
                metrics = self.agent.update(self.dataset.sample(cfg.batch_size))
                self.step += 1
                if self.step % 100 == 0:
                    log.write(json.dumps({"step": self.step, **metrics}) + "\n")
                    log.flush()
                if self.step % cfg.eval_every_steps == 0 or self.step == cfg.gradient_steps:
                    self.history.append({"step": self.step, **self.evaluate()})
                    print(f"vlmrl train --offline: step {self.step:,}: {format_eval(self.history[-1])}")
                if self.step % cfg.checkpoint_every_steps == 0:
                    self.save()
        except KeyboardInterrupt:
            print("vlmrl train --offline: interrupted; saving the checkpoint and the report")
        finally:
            log.close()
        self.save()
        return self.finish(time.monotonic() - started)

    def evaluate(self) -> dict[str, float]:
        """Twin success rate when the data came from the twin; the held-out metrics otherwise."""
        if self.env is not None:
            result = evaluate(self.env, self.agent.act, eval_seeds(self.cfg.seed, self.cfg.eval_episodes))
            return result.as_dict()
        return heldout_metrics(self.agent, self.episodes, self.held_ids, with_values=not self.cfg.agent.bc)

    # ------------------------------------------------------------------------------------- files
    def save(self) -> Path:
        """checkpoint.pt, written atomically (a kill leaves the previous one)."""
        import torch

        state = {
            "config": dataclasses.asdict(self.cfg),
            "agent": self.agent.state_dict(),
            "dataset": self.dataset.state_dict(),
            "step": self.step,
            "history": self.history,
        }
        path = self.run_dir / "checkpoint.pt"
        tmp = path.with_suffix(".tmp")
        torch.save(state, tmp)
        os.replace(tmp, path)
        return path

    def restore(self) -> None:
        """Load checkpoint.pt into this run."""
        state = load_torch_file(self.run_dir / "checkpoint.pt")
        self.agent.load_state_dict(state["agent"])
        self.dataset.load_state_dict(state["dataset"])
        self.step, self.history = int(state["step"]), list(state["history"])

    def finish(self, elapsed_s: float) -> dict[str, Path]:
        """policy.pt, curves.png and report.md."""
        outputs = {"checkpoint": self.run_dir / "checkpoint.pt"}
        outputs["policy"] = export_policy(self.agent, self.run_dir / "policy.pt")
        if self.history:
            outputs["curves"] = write_offline_curves(self.history, self.run_dir / "curves.png")
        outputs["report"] = self.write_report(elapsed_s)
        if self.env is not None:
            self.env.close()
        return outputs

    def write_report(self, elapsed_s: float) -> Path:
        cfg, e = self.cfg, self.episodes
        success = e.episode_success()
        method = "behaviour cloning" if cfg.agent.bc else "IQL"
        lines = [
            f"# Offline run: {method} on {cfg.data}",
            "",
            f"- data: {e.num_episodes} episodes ({int(success.sum())} successful), "
            f"{len(e.transition_rows())} transitions; {len(self.train_ids)} episodes train, "
            f"{len(self.held_ids)} held out",
            f"- reward: `{cfg.reward}` (aux weight {cfg.aux_weight}); mean per transition "
            f"{float(self.rewards[e.transition_rows()].mean()):.4f}",
            f"- policy reads: {', '.join(self.obs_keys)}",
            f"- gradient steps: {self.step:,} of {cfg.gradient_steps:,}, batch {cfg.batch_size}, "
            f"{elapsed_s:.0f} s in this invocation",
            "- evaluation: "
            + (
                "success rate in the SO-101 twin (deterministic policy, evaluation-only seeds)"
                if self.env is not None
                else "held-out episodes (no simulator): V on successful vs failed episodes, action error "
                "on successful ones"
            ),
            "",
        ]
        if self.history:
            names = [k for k in self.history[0] if k != "step"]
            lines += ["| step | " + " | ".join(names) + " |", "|---" * (len(names) + 1) + "|"]
            lines += [
                f"| {int(h['step']):,} | " + " | ".join(f"{h[n]:.4g}" for n in names) + " |"
                for h in self.history
            ]
        path = self.run_dir / "report.md"
        path.write_text("\n".join(lines) + "\n")
        return path

    def summary_line(self) -> str:
        """One line with the last evaluation."""
        last = format_eval(self.history[-1]) if self.history else "no evaluation yet"
        return f"{self.step:,} gradient steps; {last}"


# ----------------------------------------------------------------------------------------- helpers
def available_keys(path: Path) -> list[str]:
    """Observation keys of a dataset, read from its metadata only (no episode data)."""
    path = Path(path)
    if (path / "meta" / "info.json").is_file():
        from buffer.io import lerobot_spec

        return list(lerobot_spec(path)[0])
    if (path / "zarr.json").is_file():
        return list(read_store_metadata(path).obs_spec)  # one-line BufferError for malformed metadata
    # load_episodes names what is wrong with the path.
    return list(load_episodes(path).obs)


def action_box(episodes: Episodes, env: Any, gym: Any) -> Any:
    """The action space: the twin's when there is one, else the data's range widened by 5% per side."""
    if env is not None:
        return env.action_space
    rows = episodes.transition_rows()
    low, high = episodes.action[rows].min(axis=0), episodes.action[rows].max(axis=0)
    margin = np.maximum(0.05 * (high - low), 1e-3)
    return gym.spaces.Box((low - margin).astype(np.float32), (high + margin).astype(np.float32))


def twin_env(episodes: Episodes, obs_keys: list[str], run_dir: Path) -> Any:
    """The SO-101 twin the episodes were recorded in, or None for data from elsewhere.

    ``sim_config`` in the store's attributes (the offline experiment's stores) rebuilds that sim env;
    ``robot_type == "sim_so101"`` (``vlmrl record`` on the twin) rebuilds the recording's LeRobot env from
    the config.json ``vlmrl record`` wrote beside the store.
    """
    attrs = episodes.attrs
    cameras_needed = any(k.startswith("pixels/") for k in obs_keys)
    if "sim_config" in attrs:
        sim = stored_sim_settings(dict(attrs["sim_config"]))
        sim["cameras"] = tuple(sim.get("cameras", ())) if cameras_needed else ()
        return make_env(SimConfig(**sim))
    if attrs.get("robot_type") == "sim_so101":
        from vlmrl.deployment.robot_env import RobotEnvConfig, make_robot_env

        recorded_path = Path(episodes.source).parent / "config.json"
        recorded = json.loads(recorded_path.read_text()) if recorded_path.is_file() else {}
        cfg = dataclass_from_dict(RobotEnvConfig, recorded)
        cfg = dataclasses.replace(cfg, env=dataclasses.replace(cfg.env, keyboard_estop=False))
        return make_robot_env(cfg, run_dir)
    return None


def heldout_metrics(
    agent: Any, episodes: Episodes, held: list[int], with_values: bool = True
) -> dict[str, float]:
    """Sim-free figures on held-out episodes.

    ``value_success`` / ``value_failure``: mean V over the observations of successful / failed episodes;
    ``value_auc``: probability that a successful episode's mean V exceeds a failed one's (0.5: no better
    than chance); ``action_mae``: mean |policy action - recorded action| on successful episodes (all of
    them when none succeeded), in the data's units (NaN where there is nothing to measure).
    """
    success = episodes.episode_success()
    out = {"action_mae": float("nan")}
    # Demonstrations: the successful episodes; a recording without success labels counts as all demonstrations.
    demos = [e for e in held if success[e]] if episodes.success is not None and success.any() else held
    demo_rows = episodes.transition_rows(demos)
    if len(demo_rows):
        errors = [
            np.abs(agent.act({k: v[rows] for k, v in episodes.obs.items()}) - episodes.action[rows]).mean()
            for rows in np.array_split(demo_rows, max(1, len(demo_rows) // 512))
        ]
        out["action_mae"] = float(np.mean(errors))
    if not with_values:
        return out
    mean_v = {}
    for e in held:
        rows = np.arange(episodes.starts[e], episodes.ends[e])
        mean_v[e] = float(agent.values({k: v[rows] for k, v in episodes.obs.items()}).mean())
    good = np.array([mean_v[e] for e in held if success[e]])
    bad = np.array([mean_v[e] for e in held if not success[e]])
    out["value_success"] = float(good.mean()) if len(good) else float("nan")
    out["value_failure"] = float(bad.mean()) if len(bad) else float("nan")
    out["value_auc"] = (
        float(((good[:, None] > bad[None, :]) + 0.5 * (good[:, None] == bad[None, :])).mean())
        if len(good) and len(bad)
        else float("nan")
    )
    return out


def format_eval(h: dict[str, float]) -> str:
    """``name value`` pairs of one evaluation."""
    return ", ".join(f"{k} {v:.3g}" for k, v in h.items() if k != "step")


def write_offline_curves(history: list[dict[str, float]], path: Path) -> Path:
    """Each evaluation figure against gradient steps, one panel per figure."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    names = [k for k in history[0] if k != "step"]
    fig, axes = plt.subplots(1, len(names), figsize=(4 * len(names), 3.5), squeeze=False)
    steps = [h["step"] for h in history]
    for ax, name in zip(axes[0], names):
        ax.plot(steps, [h[name] for h in history], marker="o")
        ax.set(title=name, xlabel="gradient steps")
        ax.grid(alpha=0.3)
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    plt.close(fig)
    return path


def main(cfg: OfflineConfig) -> int:
    """Train (or resume) an offline run; prints where its files are."""
    run_offline(cfg)
    return 0


def run_offline(cfg: OfflineConfig) -> OfflineRun:
    """Train (or resume) an offline run to its budget (or ``stop_after_steps``); prints where its files
    are and returns the run (its ``run_dir``, ``step`` and, resumed, its saved ``cfg``)."""
    import torch

    torch.set_num_threads(cfg.torch_threads)
    os.environ.setdefault("MUJOCO_GL", "egl")
    if cfg.resume:
        run_dir = Path(cfg.resume)
        if not (run_dir / "checkpoint.pt").is_file():
            raise ConfigError(f"--resume {run_dir}: no checkpoint.pt there")
        saved = load_torch_file(run_dir / "checkpoint.pt")["config"]
        cfg = dataclasses.replace(
            config_from_dict(saved), stop_after_steps=cfg.stop_after_steps, resume=cfg.resume
        )
        run = OfflineRun(cfg, run_dir)
        run.restore()
    else:
        if cfg.gradient_steps < 1 or cfg.batch_size < 1 or cfg.eval_every_steps < 1:
            raise ConfigError("gradient steps, batch size and eval_every_steps must be >= 1")
        if not 0.0 <= cfg.holdout_fraction < 1.0:
            raise ConfigError(f"--holdout-fraction {cfg.holdout_fraction}: expected [0, 1)")
        name = Path(cfg.data).name.replace(".", "-") or "data"
        run_dir = Path(cfg.run_dir or f"runs/offline-{name}-{time.strftime('%Y%m%d-%H%M%S')}")
        run_dir.mkdir(parents=True, exist_ok=True)
        try:
            run = OfflineRun(cfg, run_dir)
        except BaseException:
            if not any(run_dir.iterdir()):
                run_dir.rmdir()  # a run that cannot start leaves no directory
            raise
        (run_dir / CONFIG_FILE).write_text(json.dumps(dataclasses.asdict(cfg), indent=2, default=str))
    print(f"vlmrl train --offline: run directory {run_dir}")
    started = time.monotonic()
    outputs = run.run()
    print(f"vlmrl train --offline: {run.summary_line()} in {time.monotonic() - started:.0f} s")
    for label, path in outputs.items():
        print(f"  {label:<10} {path}")
    return run


def dataclass_from_dict(cls: Any, data: dict[str, Any]) -> Any:
    """``cls`` from ``dataclasses.asdict``-like JSON: nested dataclasses rebuilt, lists made tuples, keys
    ``cls`` does not have ignored (a pipeline's saved config.json holds more than its env part)."""
    import typing

    hints = typing.get_type_hints(cls)
    kwargs: dict[str, Any] = {}
    for f in dataclasses.fields(cls):
        if f.name not in data:
            continue
        value, kind = data[f.name], hints[f.name]
        if dataclasses.is_dataclass(kind) and isinstance(value, dict):
            value = dataclass_from_dict(kind, value)
        elif isinstance(value, list):
            value = tuple(value)
        elif kind is Path or kind == (Path | None):
            value = None if value is None else Path(value)
        kwargs[f.name] = value
    return cls(**kwargs)


def is_offline_run(run_dir: Path) -> bool:
    """True when ``run_dir`` holds an offline run."""
    return (Path(run_dir) / CONFIG_FILE).is_file()


def from_train_config(cfg: Any) -> OfflineConfig:
    """The offline run a ``vlmrl train --offline DATA`` (or ``--resume`` of one) asks for."""
    return OfflineConfig(
        data=Path(cfg.offline) if cfg.offline is not None else Path(""),
        reward=cfg.reward,
        aux_weight=cfg.aux_reward_weight or 1.0,
        policy_obs=cfg.policy_obs,
        agent=dataclasses.replace(cfg.iql, seed=cfg.seed),
        gamma=cfg.buffer.gamma,
        gradient_steps=cfg.total_steps,
        batch_size=cfg.batch_size,
        eval_every_steps=cfg.eval_every_steps,
        eval_episodes=cfg.eval_episodes,
        checkpoint_every_steps=cfg.checkpoint_every_steps,
        stop_after_steps=cfg.stop_after_steps,
        seed=cfg.seed,
        run_dir=cfg.run_dir,
        resume=cfg.resume,
        torch_threads=cfg.torch_threads,
        then_online_steps=cfg.then_online,
    )


def config_from_dict(data: dict[str, Any]) -> OfflineConfig:
    """Rebuild an ``OfflineConfig`` from ``dataclasses.asdict`` output (a checkpoint's)."""
    cfg: OfflineConfig = dataclass_from_dict(OfflineConfig, data)
    return cfg
