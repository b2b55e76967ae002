"""Sim to robot: an asymmetric-critic SAC agent's networks become a SAC agent that reads only robot keys.

An ``--asymmetric-critic`` run (issue #13) trains critics that read the sim's privileged state beside the
actor's features; a robot gives no such state, so ``vlmrl finetune`` builds a robot-side SAC (the policy's
robot keys, no privileged keys, no privileged head) and hands the sim agent over to it here.

What is copied:

- encoder (normaliser statistics and pixel encoder) without its privileged normaliser, and the actor:
  copied as they are, so the robot-side policy is the same function of the robot observation.
- critics and target critics: the first layer's privileged input rows are folded away. Where the run
  trained the auxiliary head (``privileged_aux_weight`` > 0: a linear map from the actor's features to
  the normalised privileged state), the head's prediction replaces the privileged input: with ``x`` the
  first layer's input, ``x W = f W_f + p W_p + a W_a`` and ``p ~ f H^T + b``, so ``W_f <- W_f + H^T W_p``
  and the layer's bias gains ``b W_p``. The robot-side critic is then exactly the sim critic fed the
  state the robot's own observation predicts. Without a head the privileged rows are dropped, which
  is the sim critic fed the zero normalised state: the running mean of the privileged state.
- temperature, update count and RNG: copied; optimiser moments: the robot-side agent's own (fresh: the
  first layer's moments belong to another function).

Why not fresh critics, and why not plain dropping when a head exists: the first fine-tuning updates
move the actor up the critic's action gradient. Fresh critics give a random gradient, so the policy
the sim run learnt drifts before the critics have seen a single robot transition. Dropping the
privileged rows gives the critic of the mean state: for reach, a critic that values moving to the
average target wherever the target is, which pulls every action towards that one place. The folded
critic keeps the sim critic's knowledge of where the target is, through the features the auxiliary
loss trained to encode it; it is as wrong as the head's prediction is. The dropped (no head) form is
the better of the two fallbacks (it keeps what the critic learnt about the joints and actions), and
``vlmrl finetune --critic-warmup-updates N`` lets the critics adapt to the robot's data before the actor
moves at all; that is advisable with either form (not measured on an arm here).

Measured (twin reach, robot observations, absolute actions, the recipe's ``--asymmetric-critic
--agent.privileged-aux-weight 1.0``, 3,000 steps, seeds 0 and 1; 500 states the deterministic actor
visits; reference: the sim critic fed the true state): cosine between the robot-side and the reference
dQ/da at the actor's action, mean 0.36 / 0.31 folded, 0.18 / 0.21 dropped, -0.03 / -0.01 fresh; Q
correlation 0.62 / 0.70 folded, 0.27 / 0.34 dropped, 0.30 / 0.31 fresh. The folded critic points the
actor's first updates the way the sim critic would far more often than the others, but not always: hence
the warm-up.
"""

from __future__ import annotations

from typing import Any

import torch

from agents.errors import AgentError

PRIVILEGED_NORMALIZER = "privileged_normalizer."
"""Prefix of the encoder's state entries for the privileged part (the sim's state)."""


def estimate_dim_of(sim_state: dict[str, Any]) -> int | None:
    """The size of the state estimate a sim agent's actor reads (``SACConfig.actor_reads_estimate``), else
    None: what the robot-side ``SAC`` needs as ``estimate_dim``."""
    try:
        weight = sim_state["actor"].get("estimator.weight")
    except (KeyError, TypeError, AttributeError):
        return None
    return None if weight is None else int(weight.shape[0])


def load_sim_into_robot_sac(robot: Any, sim_state: dict[str, Any]) -> str:
    """Start ``robot`` (an ``agents.sac.SAC`` without privileged keys) from an asymmetric-critic agent's
    ``state_dict`` (see the module doc).

    Args:
        robot: a SAC built with the sim run's config, the policy's (robot) observation spec and action space.
        sim_state: ``SAC.state_dict()`` of the agent trained with privileged keys.

    Returns:
        How the critics' privileged inputs went: ``"folded into the features by the auxiliary head"`` or
        ``"dropped (no auxiliary head: the critics see the mean privileged state)"``.

    Raises:
        AgentError: a robot agent with privileged keys, a state without privileged inputs, or networks of
            another shape (named in one line).
    """
    if robot.encoder.privileged_keys:
        raise AgentError(
            f"the robot-side agent reads privileged keys {robot.encoder.privileged_keys}; build it without them"
        )
    try:
        encoder_state = dict(sim_state["encoder"])
        actor, critic, target = sim_state["actor"], sim_state["critic"], sim_state["critic_target"]
        privileged_dim = int(encoder_state[PRIVILEGED_NORMALIZER + "mean"].shape[0])
    except (KeyError, TypeError, AttributeError) as exc:
        raise AgentError(f"the sim agent's state has no {exc.args[0]!r}: not a SAC state_dict") from None
    if privileged_dim == 0:
        raise AgentError("the sim agent's critics read no privileged state: load it with SAC.load_state_dict")
    features = robot.encoder.feature_dim
    expected = features + privileged_dim + robot.action_dim
    fan_in = int(critic["weights.0"].shape[1])
    if fan_in != expected:
        raise AgentError(
            f"the sim agent's critics read {fan_in} inputs, expected {expected} ({features} features + "
            f"{privileged_dim} privileged + {robot.action_dim} actions): another observation spec or action space"
        )
    head = sim_state.get("privileged_head")
    if head is not None and tuple(head["weight"].shape) != (privileged_dim, features):
        raise AgentError(
            f"the sim agent's auxiliary head maps {tuple(head['weight'].shape[::-1])}, expected ({features}, {privileged_dim})"
        )
    own = robot.encoder.state_dict()
    state = robot.state_dict()  # the robot-side agent's own optimiser moments
    state["encoder"] = {
        **{k: v for k, v in encoder_state.items() if not k.startswith(PRIVILEGED_NORMALIZER)},
        **{k: v for k, v in own.items() if k.startswith(PRIVILEGED_NORMALIZER)},
    }
    state["actor"] = actor
    state["eval_actor"] = sim_state.get("eval_actor", actor)  # the sim agent's average, else its actor
    state["critic"] = _without_privileged_inputs(critic, features, privileged_dim, head)
    state["critic_target"] = _without_privileged_inputs(target, features, privileged_dim, head)
    for name in ("log_alpha", "generator", "num_updates"):
        if name in sim_state:
            state[name] = sim_state[name]
    robot.load_state_dict(state)
    if head is None:
        return "dropped (no auxiliary head: the critics see the mean privileged state)"
    return "folded into the features by the auxiliary head"


def _without_privileged_inputs(
    critic: dict[str, Any], features: int, privileged_dim: int, head: dict[str, Any] | None
) -> dict[str, Any]:
    """A ``TwinCritic`` state whose first layer reads [features, action] (see the module doc)."""
    out = dict(critic)
    weight = critic["weights.0"]  # [critics, features + privileged + actions, width]
    w_features = weight[:, :features]
    w_privileged = weight[:, features : features + privileged_dim]
    bias = critic["biases.0"]  # [critics, 1, width]
    if head is not None:
        h, b = head["weight"].to(weight), head["bias"].to(weight)  # p = f h^T + b
        w_features = w_features + torch.einsum("pf,cpw->cfw", h, w_privileged)
        bias = bias + torch.einsum("p,cpw->cw", b, w_privileged).unsqueeze(1)
    out["weights.0"] = torch.cat([w_features, weight[:, features + privileged_dim :]], dim=1).contiguous()
    out["biases.0"] = bias.contiguous()
    return out
