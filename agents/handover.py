"""Offline to online: an IQL agent's networks become the starting point of a SAC agent.

Why hand over to SAC rather than go on with IQL online (IQL's own "online fine-tuning", Kostrikov et
al. 2022, section 5.3): every online learner here is SAC (``vlmrl train``, ``vlmrl finetune`` on a robot,
their checkpoints, exact resume and export), and IQL's networks are SAC's classes (``ObservationEncoder``,
``Actor``, ``TwinCritic``) in the same units ([-1, 1] actions, the same observation normaliser), so the
handover is a copy of state dicts, done in this one place, and both online paths gain it at once. IQL
online would need a second agent in the learner, the trainer, finetune and their checkpoints.

What is copied and what is not:

- encoder (normaliser statistics, and the pixel encoder trained by IQL's Q loss), actor, Q ensemble and
  its targets: copied. The deterministic policy, tanh(mean), is the same function after the handover.
- V(s): dropped; SAC's target uses Q'(s', a' ~ pi) instead. IQL's Q regressed r + gamma V(s'), an
  upper expectile of the data's returns, so it starts close to the Q of a policy a little better than
  the data, which SAC's first updates then move towards its own policy.
- the actor's spread: IQL's std is around tanh(mean) in action units, SAC's is before the tanh; near
  the middle of the range they agree, near the bounds SAC's samples spread less.
- optimiser moments and the temperature: SAC's own (fresh); ``init_alpha`` sets how much entropy the
  first online updates pay for (a small one keeps the offline policy's behaviour; RLPD and Cal-QL
  report the dip a large one causes).
"""

from __future__ import annotations

import dataclasses
from typing import Any

import numpy as np

from agents.config import IQLConfig, SACConfig
from agents.errors import AgentError

NETWORK_FIELDS = (
    "hidden_dims",
    "num_critics",
    "layer_norm",
    "log_std_min",
    "log_std_max",
    "normalize_obs",
    "obs_clip",
    "pixel",
)
"""IQLConfig fields that fix the shapes and inputs of the networks SAC takes over."""


def sac_config_for(iql: IQLConfig, base: SACConfig) -> SACConfig:
    """``base`` with the network fields (``NETWORK_FIELDS``) of the IQL agent it takes over; learning
    rates, temperature, update ratio and the rest stay ``base``'s. With more than two Q-networks the TD
    target keeps ``base``'s subset size when it fits, else all of them."""
    changes = {name: getattr(iql, name) for name in NETWORK_FIELDS}
    if base.target_critics > iql.num_critics:
        changes["target_critics"] = iql.num_critics
    return dataclasses.replace(base, **changes)


def load_iql_into_sac(sac: Any, iql_state: dict[str, Any], iql_bounds: tuple[Any, Any]) -> None:
    """Start ``sac`` (an ``agents.sac.SAC``) from an IQL agent's ``state_dict`` (see the module doc).

    Args:
        sac: a SAC built with ``sac_config_for`` the IQL config and the same observation spec.
        iql_state: ``IQL.state_dict()``.
        iql_bounds: (low, high) of the IQL agent's action space: actions are scaled to [-1, 1] by them, so
            SAC's must be the same or the same network would mean other actions.

    Raises:
        AgentError: other action bounds, or networks of another shape (named in one line).
    """
    low, high = (np.asarray(b, np.float32) for b in iql_bounds)
    sac_low, sac_high = sac.action_low.cpu().numpy(), sac.action_high.cpu().numpy()
    if low.shape != sac_low.shape or not (np.allclose(low, sac_low) and np.allclose(high, sac_high)):
        raise AgentError(
            f"the offline agent acts in [{low.round(3).tolist()}, {high.round(3).tolist()}], this agent in "
            f"[{sac_low.round(3).tolist()}, {sac_high.round(3).tolist()}]: the same network would mean other actions"
        )
    state = sac.state_dict()  # SAC's own optimiser moments, temperature, RNG and update count
    for name in ("encoder", "actor", "critic", "critic_target"):
        try:
            state[name] = iql_state[name]
        except KeyError:
            raise AgentError(f"the offline agent's state has no {name!r}: not an IQL state_dict") from None
    state.pop("eval_actor", None)  # an averaged actor (SACConfig.actor_ema) starts at the offline actor
    sac.load_state_dict(state)
