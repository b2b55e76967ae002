"""Implicit Q-Learning for offline data, readable top to bottom: networks in ``__init__``, one step in ``update``.

IQL (Kostrikov, Nair and Levine 2022, "Offline Reinforcement Learning with Implicit Q-Learning") never
queries Q at actions outside the data:

- value: V(s) regresses the ``expectile`` of min_i Q'_i(s, a) over the dataset's actions (asymmetric L2),
- Q: Q_i(s, a) regresses r + discount * V(s') (SARSA-like, no max over actions),
- actor: advantage-weighted regression, maximise exp(beta * (Q'(s, a) - V(s))) * log pi(a | s), with the
  weights clipped at ``max_weight``.

The policy is a Gaussian with a tanh on its mean (the paper's choice: log pi of dataset actions on the
[-1, 1] bounds stays finite), built from SAC's ``Actor`` so its deterministic action, tanh(mean), exports
through ``agents.export`` unchanged. ``bc=True`` keeps only the actor loss with unit weights: behaviour
cloning of the same data with the same network, the floor IQL must beat.

Like SAC: the Q ensemble runs as one batched matmul per layer (``TwinCritic``); the value, Q and actor
losses touch disjoint parameters, so they share one backward pass and one fused Adam step; with pixels
the conv encoder is trained by the Q loss only (DrQ shift augmentation) and the value and actor read its
features detached.
"""

from __future__ import annotations

import copy
import math
from typing import Any

import gymnasium as gym
import numpy as np
import torch
from torch import Tensor

from agents.augmentation import random_shift
from agents.config import IQLConfig
from agents.encoders import ObservationEncoder, ObsSpec, is_pixel_key
from agents.errors import AgentError
from agents.networks import Actor, TwinCritic, action_bounds
from agents.optim import make_adam
from buffer.batch import Batch


def expectile_loss(diff: Tensor, expectile: float) -> Tensor:
    """Asymmetric squared error |tau - 1(diff < 0)| * diff^2 per element (diff = target - prediction)."""
    weight = torch.where(diff < 0, 1.0 - expectile, expectile)
    return weight * diff.pow(2)


class IQL:
    """The offline learner. ``act`` for acting, ``update`` for one gradient step, ``state_dict`` for checkpoints.

    Args:
        cfg: hyper-parameters.
        obs_spec: observation key -> (per-sample shape, dtype) of the keys the agent reads.
        action_space: a bounded ``gymnasium.spaces.Box``; actions are taken and returned in its (env) units.
    """

    def __init__(self, cfg: IQLConfig, obs_spec: ObsSpec, action_space: gym.spaces.Box) -> None:
        low, high = action_bounds(action_space, "IQL")
        if not 0.5 <= cfg.expectile < 1.0 or cfg.temperature < 0.0 or cfg.max_weight <= 0.0:
            raise AgentError("IQLConfig needs 0.5 <= expectile < 1, temperature >= 0 and max_weight > 0")
        if cfg.num_critics < 1 or not 0.0 < cfg.tau <= 1.0:
            raise AgentError("IQLConfig needs num_critics >= 1 and 0 < tau <= 1")
        self.cfg = cfg
        self.obs_spec = dict(obs_spec)
        self.device = torch.device(cfg.device)
        self.action_dim = int(action_space.shape[0])
        self.action_low = torch.as_tensor(low, dtype=torch.float32, device=self.device)
        self.action_high = torch.as_tensor(high, dtype=torch.float32, device=self.device)
        self.has_pixels = any(is_pixel_key(k) for k in obs_spec)
        torch.manual_seed(cfg.seed)  # network initialisation
        self.generator = torch.Generator(device=self.device).manual_seed(cfg.seed)

        self.encoder = ObservationEncoder(obs_spec, cfg.pixel, cfg.normalize_obs, cfg.obs_clip).to(
            self.device
        )
        features = self.encoder.feature_dim
        self.actor = Actor(features, self.action_dim, cfg.hidden_dims, cfg.log_std_min, cfg.log_std_max)
        self.critic = TwinCritic(features + self.action_dim, cfg.hidden_dims, cfg.num_critics, cfg.layer_norm)
        self.value = TwinCritic(features, cfg.hidden_dims, 1, cfg.layer_norm)  # V(s): a critic without action
        for module in (self.actor, self.critic, self.value):
            module.to(self.device)
        self.critic_target = copy.deepcopy(self.critic).requires_grad_(False)
        self.encoder_target = copy.deepcopy(self.encoder).requires_grad_(False)
        self.encoder_target.normalizer = self.encoder.normalizer  # statistics are shared, not averaged

        # BC trains the actor (and, with pixels, the encoder through it); IQL the three losses of the docstring.
        if cfg.bc:
            groups: list[dict[str, Any]] = [
                {"params": [*self.actor.parameters(), *self.encoder.parameters()], "lr": cfg.actor_lr}
            ]
        else:
            groups = [
                {"params": list(self.actor.parameters()), "lr": cfg.actor_lr},
                {"params": [*self.critic.parameters(), *self.encoder.parameters()], "lr": cfg.critic_lr},
                {"params": list(self.value.parameters()), "lr": cfg.value_lr},
            ]
        self.optimizer = make_adam(groups, self.device)
        self._online: list[Tensor] = [*self.critic.parameters(), *self.encoder.pixel_encoders.parameters()]
        self._target: list[Tensor] = [
            *self.critic_target.parameters(),
            *self.encoder_target.pixel_encoders.parameters(),
        ]
        self._no_action = torch.zeros(0, device=self.device)
        self.num_updates = 0

    # ----------------------------------------------------------------------------------------- acting
    def to_unit(self, action: Tensor) -> Tensor:
        """Env units -> the actor's [-1, 1] units."""
        return (2.0 * (action - self.action_low) / (self.action_high - self.action_low) - 1.0).clamp(
            -1.0, 1.0
        )

    def to_env(self, unit_action: Tensor) -> Tensor:
        """The actor's [-1, 1] units -> env units."""
        return self.action_low + 0.5 * (unit_action + 1.0) * (self.action_high - self.action_low)

    def obs_to_tensors(self, obs: dict[str, np.ndarray]) -> dict[str, Tensor]:
        """Numpy observation dict (the keys of ``obs_spec``) -> tensors on the learner's device."""
        try:
            return {k: torch.as_tensor(np.asarray(obs[k]), device=self.device) for k in self.obs_spec}
        except KeyError as exc:
            raise AgentError(
                f"observation is missing key {exc.args[0]!r} (agent reads {list(self.obs_spec)})"
            ) from None

    @torch.no_grad()
    def act(self, obs: dict[str, np.ndarray], deterministic: bool = True) -> np.ndarray:
        """Action for one observation (or a batch with a leading axis), float32 in env units.

        Deterministic by default (offline policies are evaluated and deployed at their mode, tanh(mean));
        otherwise a Gaussian sample around it, clipped to the bounds.
        """
        tensors = self.obs_to_tensors(obs)
        first = next(iter(self.obs_spec))
        batched = tensors[first].dim() == len(self.obs_spec[first][0]) + 1
        if not batched:
            tensors = {k: v.unsqueeze(0) for k, v in tensors.items()}
        mean, log_std = self.actor(self.encoder(tensors))
        unit = torch.tanh(mean)
        if not deterministic:
            noise = torch.randn(unit.shape, generator=self.generator, device=self.device)
            unit = (unit + noise * log_std.exp()).clamp(-1.0, 1.0)
        action = self.to_env(unit).cpu().numpy().astype(np.float32)
        return action if batched else action[0]

    @torch.no_grad()
    def values(self, obs: dict[str, np.ndarray]) -> np.ndarray:
        """V(s) of a batch of observations, float32[B] (for offline diagnostics; meaningless with ``bc``)."""
        features = self.encoder(self.obs_to_tensors(obs))
        return self.value(features, self._no_action.expand(features.shape[0], 0))[0].cpu().numpy()

    # --------------------------------------------------------------------------------------- learning
    def update(self, batch: Batch) -> dict[str, Any]:
        """One gradient step of value, Q-networks and actor (or the actor alone with ``bc``) on ``batch``.

        ``batch.reward`` and ``batch.discount`` are used as given (the target is reward + discount * V(s'));
        ``batch.weights`` weight the Q loss (importance weights of a prioritised sampler).

        Returns:
            Scalar metrics (floats).
        """
        obs, next_obs = self.obs_to_tensors(batch.obs), self.obs_to_tensors(batch.next_obs)
        action = self.to_unit(torch.as_tensor(batch.action, device=self.device))
        reward = torch.as_tensor(batch.reward, device=self.device)
        discount = torch.as_tensor(batch.discount, device=self.device)
        weights = torch.as_tensor(batch.weights, device=self.device)
        self.encoder.update_statistics(obs)
        if self.has_pixels and self.cfg.pixel.shift_pad_px > 0:
            pad = self.cfg.pixel.shift_pad_px
            obs = {k: random_shift(v, pad, self.generator) if is_pixel_key(k) else v for k, v in obs.items()}
            next_obs = {
                k: random_shift(v, pad, self.generator) if is_pixel_key(k) else v for k, v in next_obs.items()
            }
        if self.cfg.bc:
            loss, stats, names = self._bc_loss(obs, action)
        else:
            loss, stats, names = self._iql_losses(obs, next_obs, action, reward, discount, weights)
        self.optimizer.zero_grad(set_to_none=True)
        loss.backward()
        self.optimizer.step()
        if not self.cfg.bc:
            with torch.no_grad():
                torch._foreach_lerp_(self._target, self._online, self.cfg.tau)
        self.num_updates += 1
        return dict(zip(names, stats.tolist()))

    def _log_prob(self, features: Tensor, action: Tensor) -> Tensor:
        """log pi(action | features), float32[B], for actions in [-1, 1] under N(tanh(mean), std)."""
        mean, log_std = self.actor(features)
        z = (action - torch.tanh(mean)) * torch.exp(-log_std)
        return (-0.5 * z.pow(2) - log_std - 0.5 * math.log(2.0 * math.pi)).sum(dim=-1)

    def _bc_loss(self, obs: dict[str, Tensor], action: Tensor) -> tuple[Tensor, Tensor, tuple[str, ...]]:
        log_prob = self._log_prob(self.encoder(obs), action)
        actor_loss = -log_prob.mean()
        return actor_loss, actor_loss.detach().unsqueeze(0), ("actor_loss",)

    def _iql_losses(
        self,
        obs: dict[str, Tensor],
        next_obs: dict[str, Tensor],
        action: Tensor,
        reward: Tensor,
        discount: Tensor,
        weights: Tensor,
    ) -> tuple[Tensor, Tensor, tuple[str, ...]]:
        """Value + Q + actor loss (one scalar) and the logged scalars; a pure function of its tensors."""
        features = self.encoder(obs)
        detached = features.detach()
        batch = features.shape[0]
        no_action = self._no_action.expand(batch, 0)
        with torch.no_grad():
            target_features = self.encoder_target(obs) if self.has_pixels else detached
            q_data = self.critic_target(target_features, action).min(dim=0).values
            next_v = self.value(self.encoder(next_obs), no_action)[0]
            q_target = reward + discount * next_v

        v = self.value(detached, no_action)[0]
        value_loss = expectile_loss(q_data - v, self.cfg.expectile).mean()

        q = self.critic(features, action)
        critic_loss = 0.5 * (weights * (q - q_target.unsqueeze(0)).pow(2)).mean(dim=1).sum()

        advantage = (q_data - v).detach()
        adv_weights = torch.exp(self.cfg.temperature * advantage).clamp(max=self.cfg.max_weight)
        actor_loss = -(adv_weights * self._log_prob(detached, action)).mean()

        loss = value_loss + critic_loss + actor_loss
        stats = torch.stack(
            [value_loss, critic_loss, actor_loss, v.mean(), q.mean(), advantage.mean(), adv_weights.mean()]
        ).detach()
        names = ("value_loss", "critic_loss", "actor_loss", "v_mean", "q_mean", "advantage", "awr_weight")
        return loss, stats, names

    # ------------------------------------------------------------------------------------- checkpoint
    def state_dict(self) -> dict[str, Any]:
        """A snapshot (deep copy) of everything needed to continue training exactly.

        Networks, targets, normaliser statistics, optimizer moments and the agent's RNG.
        """
        state = {
            "encoder": self.encoder.state_dict(),
            "encoder_target": self.encoder_target.state_dict(),
            "actor": self.actor.state_dict(),
            "critic": self.critic.state_dict(),
            "critic_target": self.critic_target.state_dict(),
            "value": self.value.state_dict(),
            "optimizer": self.optimizer.state_dict(),
            "generator": self.generator.get_state(),
            "num_updates": self.num_updates,
        }
        return copy.deepcopy(state)

    def load_state_dict(self, state: dict[str, Any]) -> None:
        """Restore a ``state_dict()``; raises AgentError when it comes from a differently shaped agent."""
        try:
            for name in (
                "encoder",
                "encoder_target",
                "actor",
                "critic",
                "critic_target",
                "value",
                "optimizer",
            ):
                getattr(self, name).load_state_dict(state[name])
        except (KeyError, RuntimeError, ValueError) as exc:
            first_line = str(exc).strip().splitlines()[0] if str(exc).strip() else repr(exc)
            raise AgentError(f"agent checkpoint does not match this agent: {first_line}") from None
        self.generator.set_state(state["generator"])
        self.num_updates = int(state["num_updates"])
        self.encoder_target.normalizer = self.encoder.normalizer
