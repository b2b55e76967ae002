"""Offline to online: an offline run (``vlmrl train --offline``) as the start of an online one.

Three ways in, one reading of the offline run directory (``load_offline_agent``) and one handover of
IQL's networks to SAC (``agents.handover``: why SAC, what is copied):

- ``vlmrl train --offline DATA --then-online STEPS``: after the offline run, ``online_config`` makes a
  `vlmrl train` run in ``<offline run>/online`` in the twin the data was recorded in, starting from the
  offline agent, with DATA's episodes as the prior part of RLPD sampling (``--prior-data``,
  ``--prior-share``), no random warm-up, STEPS env steps;
- ``vlmrl train --agent-from RUN`` (what ``online_config`` sets): any twin run starting from that agent;
- ``vlmrl finetune --from RUN`` with an offline run: ``finetune_state`` gives it what it reads from a sim
  run's checkpoint, so the same flow runs on a robot.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

import numpy as np

from agents.errors import AgentError
from agents.export import load_policy
from agents.handover import load_iql_into_sac, sac_config_for
from agents.sac import SAC
from buffer.metadata import read_store_metadata
from sim.config import SimConfig, stored_sim_settings
from vlmrl.errors import ConfigError
from vlmrl.offline.run import OfflineConfig, config_from_dict, dataclass_from_dict, is_offline_run
from vlmrl.online.config import TrainConfig

ONLINE_DIR = "online"
"""Where ``--then-online`` puts the online run, inside the offline run's directory."""


@dataclass(frozen=True)
class OfflineAgent:
    """What an online run takes from an offline run directory."""

    run_dir: Path
    config: OfflineConfig
    """The offline run's config (data, reward, IQL settings)."""
    state: dict[str, Any]
    """``IQL.state_dict()`` at the offline run's last checkpoint."""
    obs_spec: dict[str, tuple[tuple[int, ...], np.dtype]]
    """Observation keys, shapes and dtypes the agent reads."""
    action_low: np.ndarray
    action_high: np.ndarray
    """The bounds its actions were scaled by (env units)."""

    @property
    def policy_obs(self) -> Literal["state", "pixels", "robot"]:
        """The `vlmrl train` ``--policy-obs`` that reads the same keys."""
        if "state" not in self.obs_spec:
            return "robot"
        return "pixels" if any(k.startswith("pixels/") for k in self.obs_spec) else "state"


def load_offline_agent(run_dir: Path, flag: str) -> OfflineAgent:
    """The agent of an offline run directory; ConfigError naming ``flag`` and the file when it is not one."""
    import torch

    run_dir = Path(run_dir)
    if not is_offline_run(run_dir):
        raise ConfigError(f"{flag} {run_dir}: not an offline run directory (no offline_config.json)")
    checkpoint, policy_file = run_dir / "checkpoint.pt", run_dir / "policy.pt"
    for path in (checkpoint, policy_file):
        if not path.is_file():
            raise ConfigError(f"{flag} {run_dir}: no {path.name} (the offline run has not saved yet)")
    try:
        saved = torch.load(checkpoint, map_location="cpu", weights_only=False)  # our own file
        policy = load_policy(policy_file)  # the keys and action bounds the agent was built with
    except (OSError, RuntimeError, EOFError, AgentError) as exc:
        raise ConfigError(f"{flag} {run_dir}: cannot read it: {str(exc).strip().splitlines()[0]}") from None
    return OfflineAgent(
        run_dir,
        config_from_dict(saved["config"]),
        saved["agent"],
        policy.obs_spec,
        policy.action_low,
        policy.action_high,
    )


def sac_for(offline: OfflineAgent, base: Any, action_space: Any, seed: int) -> Any:
    """A SAC of config ``base`` (network fields taken from the offline agent) started from the offline
    agent; AgentError in one line when ``action_space`` is not the one the agent was trained in."""
    sac = SAC(
        dataclasses.replace(sac_config_for(offline.config.agent, base), seed=seed),
        offline.obs_spec,
        action_space,
    )
    load_iql_into_sac(sac, offline.state, (offline.action_low, offline.action_high))
    return sac


def online_config(cfg: Any, offline_dir: Path, steps: int) -> Any:
    """The `vlmrl train` run that ``--then-online STEPS`` starts after the offline run in ``offline_dir``.

    The twin is the one the data was recorded in (its stored sim config), the policy reads what the
    offline policy reads, the agent's networks are the offline agent's (``agent_from``), the data is the
    prior part of each batch (``prior_data``), and the policy acts from the first step (no random
    warm-up unless ``--learning-starts`` was given). Everything else is ``cfg``'s, the reward included:
    the twin's reward plus ``--aux-reward-weight`` x the run's scorer's aux reward (0 by default), not
    the offline ``--reward``; to go on with an aux reward, give the weight and ``--aux-reward.kind`` the
    data was scored with. The prior episodes are scored again by the run's scorer, like any clip.

    Raises:
        ConfigError: the data has no stored sim config (``twin_sim_config``).
    """
    offline = load_offline_agent(offline_dir, "--then-online")
    defaults = TrainConfig()
    return dataclasses.replace(
        cfg,
        sim=twin_sim_config(offline.config.data),
        policy_obs=offline.policy_obs,
        agent_from=offline_dir,
        prior_data=Path(offline.config.data),
        total_steps=steps,
        learning_starts=0 if cfg.learning_starts == defaults.learning_starts else cfg.learning_starts,
        run_dir=str(Path(offline_dir) / ONLINE_DIR),
        offline=None,
        then_online=0,
        resume="",
        stop_after_steps=0,
    )


def twin_sim_config(data: Path) -> Any:
    """The ``SimConfig`` of the twin a zarr store was recorded in (its stored ``sim_config``).

    Raises:
        ConfigError: the data has none (recorded on a robot, or a LeRobotDataset): the online part of
            that data runs with `vlmrl finetune --from`.
    """
    sim = read_store_metadata(data).record.get("sim_config") if (Path(data) / "zarr.json").is_file() else None
    if not sim:
        raise ConfigError(
            f"--then-online: {data} holds no twin sim config (recorded on a robot, or a LeRobotDataset); "
            "continue on the arm or its twin with `vlmrl finetune --from <the offline run>`"
        )
    return dataclass_from_dict(SimConfig, stored_sim_settings(dict(sim)))


def finetune_state(run_dir: Path) -> dict[str, Any]:
    """What `vlmrl finetune --from` reads from a sim run's checkpoint, made from an offline run: a train
    config (SAC with the offline agent's networks, the data's cameras and frame size, joint-target
    actions; `vlmrl train`'s defaults otherwise: scorer, aux reward weight), the handed-over SAC state,
    the policy's keys and its action bounds.

    Raises:
        ConfigError: not an offline run, or one whose policy reads the sim's state (no robot gives it).
    """
    import gymnasium as gym

    offline = load_offline_agent(run_dir, "--from")
    if offline.policy_obs != "robot":
        raise ConfigError(
            f"--from {run_dir}: its policy reads the sim's privileged 'state', which a robot does not give; "
            "train it offline with --policy-obs robot (joint keys and cameras)"
        )
    cameras = [k.removeprefix("pixels/") for k in offline.obs_spec if k.startswith("pixels/")]
    image_size = offline.obs_spec[f"pixels/{cameras[0]}"][0][0] if cameras else SimConfig().image_size
    defaults = TrainConfig()
    train = dataclasses.replace(
        defaults,
        # A robot's recordings (LeRobot keys) hold the joint targets that were sent.
        sim=dataclasses.replace(
            defaults.sim, cameras=tuple(cameras), image_size=int(image_size), action_mode="absolute"
        ),
        policy_obs=offline.policy_obs,
        batch_size=offline.config.batch_size,
        buffer=dataclasses.replace(defaults.buffer, gamma=offline.config.gamma),
    )
    box = gym.spaces.Box(offline.action_low, offline.action_high)
    sac = sac_for(offline, defaults.agent, box, seed=offline.config.seed)
    train = dataclasses.replace(train, agent=sac.cfg)
    return {
        "config": train,
        "agent": sac.state_dict(),
        "policy_obs_spec": {
            k: (list(shape), np.dtype(dt).name) for k, (shape, dt) in offline.obs_spec.items()
        },
        "action_bounds": (offline.action_low, offline.action_high),
    }
