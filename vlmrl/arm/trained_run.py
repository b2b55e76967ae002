"""What `vlmrl finetune` takes from the run it starts from (a `vlmrl train` run, or an offline one handed over
to SAC): its checkpoint, what its policy reads and the units it acts in, its agent's weights, its scorer and
reward, and the training settings its policy file carries.

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
from pathlib import Path
from typing import Any

import numpy as np

from agents.errors import AgentError
from agents.export import load_policy
from agents.sim_to_robot import load_sim_into_robot_sac
from robot.contract import env_spec
from sim import make_env
from vlmrl.actors.robot_actor import RobotSide
from vlmrl.errors import ConfigError
from vlmrl.loop.checkpoint import load_checkpoint
from vlmrl.offline.run import is_offline_run
from vlmrl.online.offline_handover import finetune_state
from vlmrl.scorers.choice import parse_scorer, ready_scorer

SCORE_CALIBRATION_FILE = "score_calibration.json"
"""The score calibration copy a `vlmrl train` run keeps (``vlmrl.online.trainer.SCORE_CALIBRATION_FILE``)."""

Config = Any
"""A ``vlmrl finetune`` config (``vlmrl.pipelines.finetune.Config``)."""


def load_sim_run(run_dir: Path) -> dict[str, Any]:
    """The checkpoint of a ``vlmrl train`` run, read like a resume reads it (``vlmrl.loop.checkpoint``: config
    fields added since it was written get their defaults); ConfigError naming the file if it is missing,
    broken, or lacks the agent. An offline run (``vlmrl train --offline``) gives the same entries, its
    IQL agent handed over to SAC (``vlmrl.online.offline_handover.finetune_state``)."""
    if is_offline_run(run_dir):
        return finetune_state(run_dir)
    return load_checkpoint(run_dir, flag="--from", required=("config", "agent"))


def policy_obs_spec(state: dict[str, Any]) -> dict[str, tuple[tuple[int, ...], np.dtype]]:
    """Observation keys, shapes and dtypes the checkpointed agent reads."""
    if "policy_obs_spec" in state:
        return {k: (tuple(shape), np.dtype(dt)) for k, (shape, dt) in state["policy_obs_spec"].items()}

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

    if "action_bounds" in state:
        low, high = state["action_bounds"]
        return gym.spaces.Box(np.asarray(low, np.float32), np.asarray(high, np.float32))
    sim_env = make_env(dataclasses.replace(state["config"].sim, cameras=()))
    try:
        return sim_env.action_space
    finally:
        sim_env.close()


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


def start_from_sim_run(agent: Any, cfg: Config, train: Any, state: dict[str, Any]) -> None:
    """A new fine-tuning run's agent: the sim run's (its critics handed over without their privileged inputs
    when it trained with ``--asymmetric-critic``; with ``--fresh-agent`` its networks as initialised), the
    critics alone learning for ``--critic-warmup-updates``."""
    if cfg.fresh_agent:
        print(f"finetune: a fresh agent with the networks of {cfg.from_run}, not its weights (--fresh-agent)")
    elif getattr(train, "asymmetric_critic", False):
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


def sim_policy_run_info(run_dir: Path) -> dict[str, Any] | None:
    """The training settings the sim run's ``policy.pt`` carries (``agents.export``: task, cameras, image
    size, control rate, action mode), passed on to the fine-tuned policy, which reads and acts the same way;
    None when the run has no exported policy or it carries none."""
    path = run_dir / "policy.pt"
    if not path.is_file():
        return None

    run = load_policy(path).run
    return {**run, "fine_tuned_from": str(run_dir)} if run else None
