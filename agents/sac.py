"""Soft Actor-Critic, readable top to bottom: networks are built in ``__init__``, one gradient step is ``update``.

SAC (Haarnoja et al. 2018, "Soft Actor-Critic Algorithms and Applications") with twin critics and
target networks, automatic temperature, optional LayerNorm critics (RLPD), n-step returns through the
buffer's ``Batch.discount``, PER importance weights, and DrQ for pixels (the conv encoder is trained by
the critic loss only; the actor sees its features detached). A critic ensemble with the TD target over a
random subset (REDQ, Chen et al. 2021; RLPD, Ball et al. 2023), and an asymmetric critic: keys named
``privileged_keys`` (the sim's state) reach the critics only, never the actor or an exported policy;
with ``privileged_aux_weight`` the actor's features also learn to predict that state (an auxiliary loss on
the encoder, as the critic no longer needs the pixels to value a state).

Pixels (issue #13): one encoder, shared by actor and critics and trained by the critic loss; the TD
target encodes the next observation with the same (online) encoder without gradients, as DrQ-v2 does,
instead of a third pass through a target encoder. With ``pixel.frozen`` the encoder takes no gradient.

Speed (compute-bound on CPU): both critics run as one batched matmul per layer; the actor loss goes
through the critics with detached weights (no weight gradients for the critics there); critic, actor and
temperature losses touch disjoint parameters, so they share one backward pass and one fused Adam step.
The actor's gradient therefore uses the critics from before this step's critic update, a simultaneous
update rather than SB3's sequential one; both are gradient steps on the same objectives.
"""

from __future__ import annotations

import copy
import dataclasses
import math
from collections.abc import Callable, Sequence
from typing import Any

import gymnasium as gym
import numpy as np
import torch
from torch import Tensor, nn

from agents.config import SACConfig
from agents.encoders import ObservationEncoder, ObsSpec, is_pixel_key, load_pixel_weights
from agents.errors import AgentError
from agents.networks import Actor, EstimatingActor, TwinCritic, action_bounds, sample_squashed, squash
from agents.optim import make_adam
from buffer.batch import Batch


def _policy(actor: Actor | EstimatingActor) -> Actor:
    """The trainable policy network of an actor (an ``EstimatingActor``'s estimator is the auxiliary head's)."""
    return actor.policy if isinstance(actor, EstimatingActor) else actor


def linear_decay(progress: float, final_fraction: float) -> float:
    """A rate's factor ``progress`` of the way through a linear decay to ``final_fraction`` (1 at 0, then
    ``final_fraction`` from 1 on): ``SAC.lr_scale``'s per update, `vlmrl finetune`'s actor rate per robot minute."""
    return 1.0 - (1.0 - final_fraction) * min(max(progress, 0.0), 1.0)


class SAC:
    """The learner. ``act`` for acting, ``update`` for one gradient step, ``state_dict`` for checkpoints.

    Args:
        cfg: hyper-parameters.
        obs_spec: observation key -> (per-sample shape, dtype) of the keys the agent reads.
        action_space: a bounded ``gymnasium.spaces.Box``; actions are returned in its (env) units.
        privileged_keys: keys only the critics read (an asymmetric critic, simulation only).
        estimate_dim: with ``actor_reads_estimate`` and no privileged keys (a robot continuing a sim run):
            the size of the privileged state the run's actor estimates.
    """

    def __init__(
        self,
        cfg: SACConfig,
        obs_spec: ObsSpec,
        action_space: gym.spaces.Box,
        privileged_keys: tuple[str, ...] = (),
        estimate_dim: int | None = None,
    ) -> None:
        low, high = action_bounds(action_space, "SAC")
        if cfg.utd_ratio < 1 or not 0.0 < cfg.tau <= 1.0 or cfg.init_alpha <= 0.0:
            raise AgentError("SACConfig needs utd_ratio >= 1, 0 < tau <= 1 and init_alpha > 0")
        if not 0.0 < cfg.lr_final_fraction <= 1.0 or cfg.lr_decay_updates < 0:
            raise AgentError(
                f"SACConfig needs 0 < lr_final_fraction <= 1 and lr_decay_updates >= 0, got "
                f"{cfg.lr_final_fraction} and {cfg.lr_decay_updates}"
            )
        if not 0.0 <= cfg.actor_ema <= 1.0:
            raise AgentError(f"SACConfig needs 0 <= actor_ema <= 1, got {cfg.actor_ema}")
        if cfg.bc_weight < 0.0:
            raise AgentError(f"SACConfig needs bc_weight >= 0, got {cfg.bc_weight}")
        if cfg.teacher_weight < 0.0:
            raise AgentError(f"SACConfig needs teacher_weight >= 0, got {cfg.teacher_weight}")
        if cfg.privileged_aux_weight < 0.0:
            raise AgentError(f"SACConfig needs privileged_aux_weight >= 0, got {cfg.privileged_aux_weight}")
        if cfg.num_critics < 1 or not 1 <= cfg.target_critics <= cfg.num_critics:
            raise AgentError(
                f"SACConfig needs num_critics >= 1 and 1 <= target_critics <= num_critics, "
                f"got {cfg.num_critics} and {cfg.target_critics}"
            )
        self.cfg = cfg
        self.obs_spec = dict(obs_spec)
        self.device = torch.device(cfg.device)
        self.action_dim = int(action_space.shape[0])
        self.action_low = torch.as_tensor(low, dtype=torch.float32, device=self.device)
        self.action_high = torch.as_tensor(high, dtype=torch.float32, device=self.device)
        # to_unit as one multiply-add: exactly the identity for [-1, 1] bounds
        scale = 2.0 / (high - low)
        self._unit_scale = torch.as_tensor(scale, dtype=torch.float32, device=self.device)
        self._unit_offset = torch.as_tensor(-1.0 - low * scale, dtype=torch.float32, device=self.device)
        self.has_pixels = any(is_pixel_key(k) for k in obs_spec)
        torch.manual_seed(cfg.seed)  # network initialisation
        self.generator = torch.Generator(device=self.device).manual_seed(cfg.seed)

        # Networks. The encoder belongs to the critic (DrQ); the actor reads its features detached.
        self.encoder = ObservationEncoder(
            obs_spec, cfg.pixel, cfg.normalize_obs, cfg.obs_clip, privileged_keys=tuple(privileged_keys)
        ).to(self.device)
        if cfg.pixel.weights_path and self.has_pixels:
            load_pixel_weights(self.encoder, cfg.pixel.weights_path)
        self.encoder_trains = self.has_pixels and not cfg.pixel.frozen
        self.encoder.pixel_encoders.requires_grad_(self.encoder_trains)
        self.actor_obs_spec = {k: self.obs_spec[k] for k in self.encoder.actor_keys}
        """The keys the actor (and an exported policy) reads: ``obs_spec`` without the privileged keys."""
        features = self.encoder.feature_dim
        critic_in = features + self.encoder.privileged_dim + self.action_dim
        # Auxiliary head: actor features -> normalised privileged state (only where both exist and the
        # encoder learns; a robot run without privileged keys simply has none).
        has_head = (
            cfg.privileged_aux_weight > 0.0 and bool(self.encoder.privileged_keys) and self.encoder_trains
        )
        # Initialisation order (actor, critics, head) as before actor_reads_estimate: same seed, same weights.
        estimate = self._estimate_dim(has_head, estimate_dim) if cfg.actor_reads_estimate else 0
        self.estimate_dim = estimate or None
        """Size of the state estimate the actor reads (``actor_reads_estimate``), else None."""
        policy = Actor(
            estimate or features, self.action_dim, cfg.hidden_dims, cfg.log_std_min, cfg.log_std_max
        )
        self.critic = TwinCritic(critic_in, cfg.hidden_dims, cfg.num_critics, cfg.layer_norm)
        policy.to(self.device)
        self.critic.to(self.device)
        self.critic_target = copy.deepcopy(self.critic).requires_grad_(False)
        self.privileged_head: nn.Linear | None = None
        if has_head:
            self.privileged_head = nn.Linear(features, self.encoder.privileged_dim).to(self.device)
        self.actor: Actor | EstimatingActor = policy
        if estimate:  # this run's head, or (a robot) a fixed one that comes with the actor's weights
            estimator = self.privileged_head or nn.Linear(features, estimate).to(self.device)
            self.actor = EstimatingActor(estimator, policy)
        self.eval_actor = self.actor
        """What deterministic acting and export use: the actor, or its Polyak average (``actor_ema``)."""
        if cfg.actor_ema > 0.0:
            self.eval_actor = copy.deepcopy(self.actor).requires_grad_(False)
            if isinstance(self.eval_actor, EstimatingActor) and isinstance(self.actor, EstimatingActor):
                self.eval_actor.estimator = self.actor.estimator  # the average shares the live estimator
        self._actor_params: list[Tensor] = list(_policy(self.actor).parameters())
        self._eval_actor_params: list[Tensor] = list(_policy(self.eval_actor).parameters())
        self.log_alpha = torch.tensor(
            math.log(cfg.init_alpha), device=self.device, requires_grad=cfg.autotune_alpha
        )
        self.target_entropy = float(-self.action_dim if cfg.target_entropy is None else cfg.target_entropy)

        # One fused Adam (agents.optim.LeanAdam) over disjoint parameter groups (see the module docstring).
        groups: list[dict[str, Any]] = [
            {"params": self._actor_params, "lr": cfg.actor_lr},
            {
                "params": [
                    *self.critic.parameters(),
                    *(p for p in self.encoder.parameters() if p.requires_grad),
                    *(self.privileged_head.parameters() if self.privileged_head is not None else ()),
                ],
                "lr": cfg.critic_lr,
            },
        ]
        if cfg.autotune_alpha:
            groups.append({"params": [self.log_alpha], "lr": cfg.alpha_lr})
        self.optimizer = make_adam(groups, self.device)
        self._online: list[Tensor] = list(self.critic.parameters())
        self._target: list[Tensor] = list(self.critic_target.parameters())
        self._zero = torch.zeros((), device=self.device)  # the logged value of a loss term that is off
        self.num_updates = 0
        self.teacher: Callable[[dict[str, Tensor]], Tensor] | None = None
        """The policy distilled into the actor (``set_teacher``; ``SACConfig.teacher_weight``), or None."""
        self.teacher_keys: tuple[str, ...] = ()
        self.proposer: tuple[ObservationEncoder, Actor | EstimatingActor] | None = None
        """The frozen encoder and actor whose actions compete with the actor's (``SACConfig.proposals``;
        ``freeze_proposer``), or None."""
        self.critic_only_until = 0
        """Updates before this count train the critics only; the actor and temperature wait, and the encoder and
        observation statistics stay as they are (``vlmrl finetune --critic-warmup-updates``: critics handed
        over from the sim adapt first; an encoder moved under a waiting actor costs it its success)."""
        self.encoder_frozen = False
        """True: updates leave the pixel encoder's weights and the observation normaliser's statistics as
        they are (``vlmrl finetune --freeze-encoder``). The actor reads the encoder's features, which only
        the critic loss trains: a critic re-fitting to a new reward moves them under a policy that worked."""

    @property
    def encoder_held(self) -> bool:
        """This update leaves the pixel encoder and the observation statistics alone: ``encoder_frozen``, or a
        critic warm-up (``critic_only_until``) is on."""
        return self.encoder_frozen or self.num_updates < self.critic_only_until

    def _estimate_dim(self, has_head: bool, estimate_dim: int | None) -> int:
        """Size of the state estimate an ``actor_reads_estimate`` actor reads; AgentError where none exists."""
        if self.encoder.privileged_keys:
            if not has_head:
                raise AgentError(
                    "actor_reads_estimate needs the auxiliary head: privileged_aux_weight > 0 and a trained "
                    "pixel encoder"
                )
            return self.encoder.privileged_dim
        if estimate_dim is None or estimate_dim < 1:
            raise AgentError(
                "actor_reads_estimate without privileged keys (a robot) needs estimate_dim: the privileged "
                "state size of the run whose actor it continues"
            )
        return estimate_dim

    # ----------------------------------------------------------------------------------------- acting
    @property
    def alpha(self) -> float:
        """Current entropy temperature."""
        return float(self.log_alpha.detach().exp())

    def set_teacher(self, teacher: Callable[[dict[str, Tensor]], Tensor], keys: Sequence[str]) -> None:
        """Distil ``teacher`` (observation tensors of ``keys`` -> env-unit actions, batched: an exported
        ``policy.pt``'s module) into the actor with weight ``SACConfig.teacher_weight``. Its keys must be ones
        the agent reads (its own or the critics' privileged ones); the teacher is not trained or checkpointed.

        Raises:
            AgentError: a key the agent does not read.
        """
        missing = [k for k in keys if k not in self.obs_spec]
        if missing:
            raise AgentError(
                f"the teacher reads {missing}, which the agent does not (it reads {list(self.obs_spec)})"
            )
        if isinstance(teacher, nn.Module):
            teacher = teacher.to(self.device).eval()
        self.teacher, self.teacher_keys = teacher, tuple(keys)

    def freeze_proposer(self) -> None:
        """Keep a frozen copy of the encoder and actor as they are now, whose actions compete with the actor's in
        the critics' target and in training actions (``SACConfig.proposals``; IBRL). Not trained; checkpointed.

        Raises:
            AgentError: ``SACConfig.proposals`` is off.
        """
        if not self.cfg.proposals:
            raise AgentError("freeze_proposer needs SACConfig.proposals")
        self.proposer = (
            copy.deepcopy(self.encoder).requires_grad_(False),
            copy.deepcopy(self.actor).requires_grad_(False),
        )

    def _proposal(self, obs: dict[str, Tensor]) -> tuple[Tensor, Tensor]:
        """The proposer's mean and log standard deviation at ``obs``."""
        assert self.proposer is not None
        encoder, actor = self.proposer
        return actor(encoder(obs))

    def to_unit(self, action: Tensor) -> Tensor:
        """Env units -> the actor's [-1, 1] units."""
        return torch.addcmul(self._unit_offset, action, self._unit_scale).clamp_(-1.0, 1.0)

    def to_env(self, unit_action: Tensor) -> Tensor:
        """The actor's [-1, 1] units -> env units."""
        return self.action_low + 0.5 * (unit_action + 1.0) * (self.action_high - self.action_low)

    def obs_to_tensors(
        self, obs: dict[str, np.ndarray], keys: dict[str, Any] | None = None
    ) -> dict[str, Tensor]:
        """Numpy observation dict (the keys of ``keys``, default ``obs_spec``) -> tensors on the learner's device."""
        keys = self.obs_spec if keys is None else keys
        try:
            return {k: torch.as_tensor(np.asarray(obs[k]), device=self.device) for k in keys}
        except KeyError as exc:
            raise AgentError(
                f"observation is missing key {exc.args[0]!r} (agent reads {list(keys)})"
            ) from None

    @torch.no_grad()
    def act(self, obs: dict[str, np.ndarray], deterministic: bool = False) -> np.ndarray:
        """Action for one observation (or a batch with a leading axis), float32 in env units."""
        tensors = self.obs_to_tensors(obs, self.actor_obs_spec)
        first = next(iter(self.actor_obs_spec))
        batched = tensors[first].dim() == len(self.actor_obs_spec[first][0]) + 1
        if not batched:
            tensors = {k: v.unsqueeze(0) for k, v in tensors.items()}
        features = self.encoder(tensors)
        if deterministic:
            unit = self.eval_actor.deterministic(features)
        else:
            mean, log_std = self.actor(features)
            unit, _ = sample_squashed(mean, log_std, generator=self.generator)
            if self.proposer is not None and all(k in obs for k in self.encoder.privileged_keys):
                unit = self._better_of(unit, tensors, features, obs, batched)
        action = self.to_env(unit).cpu().numpy().astype(np.float32)
        return action if batched else action[0]

    def _better_of(
        self,
        unit: Tensor,
        tensors: dict[str, Tensor],
        features: Tensor,
        obs: dict[str, np.ndarray],
        batched: bool,
    ) -> Tensor:
        """Per row, the actor's sampled action ``unit`` or the proposer's, whichever the critics value more."""
        proposed, _ = sample_squashed(*self._proposal(tensors), generator=self.generator)
        privileged = None
        if self.encoder.privileged_keys:
            extra = self.obs_to_tensors(obs, {k: self.obs_spec[k] for k in self.encoder.privileged_keys})
            if not batched:
                extra = {k: v.unsqueeze(0) for k, v in extra.items()}
            privileged = self._privileged({**tensors, **extra})
        critic_in = self._critic_input(features, privileged)
        q_actor = self._policy_value(self.critic(critic_in, unit))
        q_proposed = self._policy_value(self.critic(critic_in, proposed))
        return torch.where((q_proposed > q_actor).unsqueeze(-1), proposed, unit)

    # --------------------------------------------------------------------------------------- learning
    def update(self, batch: Batch) -> dict[str, Any]:
        """One gradient step of critics, actor and temperature on ``batch``.

        Returns:
            Scalar metrics (floats) and ``td_error``: float32[B], mean |Q_i - target| over the critics,
            for ``ReplayBuffer.update_priorities``.
        """
        obs, next_obs = self.obs_to_tensors(batch.obs), self.obs_to_tensors(batch.next_obs)
        action = self.to_unit(torch.as_tensor(batch.action, device=self.device))
        reward = torch.as_tensor(batch.reward, device=self.device)
        discount = torch.as_tensor(batch.discount, device=self.device)
        weights = None  # uniform sampling: all ones, so the critic loss skips the multiply
        if not np.all(batch.weights == 1.0):
            weights = torch.as_tensor(batch.weights, device=self.device)
        teacher_action = None  # the teacher reads the raw observations, before any augmentation
        if self.teacher is not None and self.cfg.teacher_weight > 0.0:
            with torch.no_grad():
                taught = self.teacher({k: obs[k] for k in self.teacher_keys})
                teacher_action = self.to_unit(taught.to(self.device, torch.float32))
        prior = None  # behaviour cloning reads the batch's prior rows (an RLPD mix) when it is on
        if self.cfg.bc_weight > 0.0 and batch.prior is not None:
            prior = torch.as_tensor(np.asarray(batch.prior, np.float32), device=self.device)
        if not self.encoder_held:
            self.encoder.update_statistics(obs)
        if self.has_pixels:  # frames -> policy images once, then DrQ shifts at the policy resolution
            pad = self.cfg.pixel.shift_pad_px
            for key in self.encoder.pixel_keys:
                encoder = self.encoder.pixel_encoder(key)
                obs[key] = encoder.prepare_shifted(obs[key], pad, self.generator)
                next_obs[key] = encoder.prepare_shifted(next_obs[key], pad, self.generator)
                if self.cfg.pixel.color_jitter > 0:
                    jitter = self.cfg.pixel.color_jitter
                    obs[key] = encoder.color_jitter(obs[key], jitter, self.generator)
                    next_obs[key] = encoder.color_jitter(next_obs[key], jitter, self.generator)
        noise_shape = (action.shape[0], self.action_dim)
        next_noise = torch.randn(noise_shape, generator=self.generator, device=self.device)
        pi_noise = torch.randn(noise_shape, generator=self.generator, device=self.device)
        subset = None  # all critics, unless the target uses a random subset of the ensemble (REDQ)
        if self.cfg.target_critics < self.cfg.num_critics:
            subset = torch.randperm(self.cfg.num_critics, generator=self.generator, device=self.device)
            subset = subset[: self.cfg.target_critics]
        train_actor = self.num_updates >= self.critic_only_until
        loss, td, stats = self._losses(
            obs,
            next_obs,
            action,
            reward,
            discount,
            weights,
            next_noise,
            pi_noise,
            subset,
            train_actor,
            prior,
            teacher_action,
        )
        self.optimizer.zero_grad(set_to_none=True)
        loss.backward()
        lr_scale = self._decay_learning_rates() if self.cfg.lr_decay_updates > 0 else None
        self.optimizer.step()
        with torch.no_grad():
            torch._foreach_lerp_(self._target, self._online, self.cfg.tau)
            if self.eval_actor is not self.actor and train_actor:
                torch._foreach_lerp_(self._eval_actor_params, self._actor_params, self.cfg.actor_ema)
        self.num_updates += 1

        names = (
            "critic_loss",
            "actor_loss",
            "alpha_loss",
            "alpha",
            "entropy",
            "q_mean",
            "privileged_aux_loss",
            "bc_loss",
            "teacher_loss",
        )
        metrics: dict[str, Any] = dict(zip(names, stats.tolist()))
        metrics["td_error"] = td.abs().mean(dim=0).cpu().numpy().astype(np.float32)
        if lr_scale is not None:
            metrics["lr_scale"] = lr_scale
        return metrics

    def lr_scale(self) -> float:
        """The factor on ``actor_lr`` and ``critic_lr`` at this update (``SACConfig.lr_final_fraction``)."""
        if self.cfg.lr_decay_updates <= 0:
            return 1.0
        return linear_decay(self.num_updates / self.cfg.lr_decay_updates, self.cfg.lr_final_fraction)

    def _decay_learning_rates(self) -> float:
        """Set this update's rates; returns their scale (logged as ``lr_scale``)."""
        scale = self.lr_scale()
        # Group 0 is the actor's, group 1 the critics', encoder's and head's (see __init__).
        self.optimizer.param_groups[0]["lr"] = self.cfg.actor_lr * scale
        self.optimizer.param_groups[1]["lr"] = self.cfg.critic_lr * scale
        return scale

    def _losses(
        self,
        obs: dict[str, Tensor],
        next_obs: dict[str, Tensor],
        action: Tensor,
        reward: Tensor,
        discount: Tensor,
        weights: Tensor | None,
        next_noise: Tensor,
        pi_noise: Tensor,
        subset: Tensor | None,
        train_actor: bool = True,
        prior: Tensor | None = None,
        teacher_action: Tensor | None = None,
    ) -> tuple[Tensor, Tensor, Tensor]:
        """Critic + actor + temperature loss (one scalar), TD errors [critics, B] and the logged scalars.
        Without ``train_actor`` the actor and temperature losses are left out of the scalar (no gradient
        reaches them, so the optimiser skips them); they are still logged. ``prior`` (float32[B], 1 on the
        prior rows) turns on the behaviour-cloning term (``SACConfig.bc_weight``); ``teacher_action`` (float32[B,
        A], unit actions) the distillation term (``SACConfig.teacher_weight``).

        A pure function of its tensors (the noise comes in), so ``torch.compile`` can trace it.
        """
        alpha = self.log_alpha.detach().exp()

        encoder = self.encoder
        # Critic target: r + discount * (min_{i in subset} Q'_i(s', a') - alpha * log pi(a'|s')), a' ~ pi(s');
        # without backup_entropy the entropy term is left out.
        with torch.no_grad():
            next_features = encoder(next_obs)
            next_mean, next_log_std = self.actor(next_features)
            next_action, next_log_prob = squash(next_mean, next_log_std, next_noise)
            next_critic_in = self._critic_input(next_features, self._privileged(next_obs))

            def target_value(candidate: Tensor) -> Tensor:  # min over the target subset's critics
                qs = self.critic_target(next_critic_in, candidate)
                return (qs if subset is None else qs[subset]).min(dim=0).values

            next_q = target_value(next_action)
            if self.cfg.backup_entropy:
                next_q = next_q - alpha * next_log_prob
            if self.proposer is not None:  # IBRL: the proposer's action where the critics value it more
                next_q = torch.maximum(next_q, target_value(torch.tanh(self._proposal(next_obs)[0])))
            target = reward + discount * next_q

        # Critic loss, importance-weighted (PER); the encoder learns from this loss only.
        if self.encoder_trains and not self.encoder_held:
            features = encoder(obs)
        else:
            with torch.no_grad():
                features = encoder(obs)
        privileged = self._privileged(obs)  # once for the critic and the actor losses
        q = self.critic(self._critic_input(features, privileged), action)
        td = q - target.unsqueeze(0)
        squared_td = td.pow(2) if weights is None else weights * td.pow(2)
        critic_loss = 0.5 * squared_td.mean(dim=1).sum()
        loss = critic_loss
        aux_loss = self._zero
        if self.privileged_head is not None and privileged is not None:
            aux_loss = (self.privileged_head(features) - privileged).pow(2).mean()
            loss = loss + self.cfg.privileged_aux_weight * aux_loss

        # Actor loss through the critics with detached weights, on detached features: the minimum of a
        # twin, the ensemble mean of more critics (REDQ).
        actor_features = features.detach()
        actor_critic_in = self._critic_input(actor_features, privileged)
        mean, log_std = self.actor(features if self.cfg.actor_trains_encoder else actor_features)
        pi_action, log_prob = squash(mean, log_std, pi_noise)
        q_pi = self._policy_value(self.critic(actor_critic_in, pi_action, detach_params=True))
        actor_loss = (alpha * log_prob - q_pi).mean()
        bc_loss = self._zero
        if prior is not None:
            # Clone the data's action on prior rows, where the critics prefer it to the policy's (Q-filter).
            mode = torch.tanh(mean)
            keep = prior
            if self.cfg.bc_q_filter:  # the policy's own action is its mode, not a noisy sample
                with torch.no_grad():
                    q_data = self._policy_value(q.detach())
                    q_mode = self._policy_value(self.critic(actor_critic_in, mode))
                keep = prior * (q_data > q_mode).float()
            squared = (mode - action).pow(2).sum(dim=-1)
            bc_loss = (keep * squared).sum() / prior.sum().clamp(min=1.0)
            actor_loss = actor_loss + self.cfg.bc_weight * q_pi.detach().abs().mean() * bc_loss
        teacher_loss = self._zero
        if teacher_action is not None:  # every row: the teacher labels the states the student visits
            teacher_loss = (torch.tanh(mean) - teacher_action).pow(2).sum(dim=-1).mean()
            actor_loss = actor_loss + self.cfg.teacher_weight * q_pi.detach().abs().mean() * teacher_loss
        alpha_loss = -(self.log_alpha * (log_prob.detach() + self.target_entropy)).mean()
        if train_actor:
            loss = loss + actor_loss
            if self.cfg.autotune_alpha:
                loss = loss + alpha_loss
        stats = torch.stack(
            [
                critic_loss,
                actor_loss,
                alpha_loss,
                alpha,
                -log_prob.mean(),
                q.mean(),
                aux_loss,
                bc_loss,
                teacher_loss,
            ]
        ).detach()
        return loss, td.detach(), stats

    def _policy_value(self, q: Tensor) -> Tensor:
        """The value the actor maximises from the critics' [critics, B] estimates: the minimum of a twin,
        the ensemble mean of more critics (REDQ)."""
        return q.min(dim=0).values if self.cfg.num_critics <= 2 else q.mean(dim=0)

    def _privileged(self, obs: dict[str, Tensor]) -> Tensor | None:
        """The privileged part of the critics' input (asymmetric critic), or None without privileged keys."""
        return self.encoder.privileged(obs) if self.encoder.privileged_keys else None

    @staticmethod
    def _critic_input(features: Tensor, privileged: Tensor | None) -> Tensor:
        """The critics' observation input: the actor's features, then the privileged part if any."""
        return features if privileged is None else torch.cat([features, privileged], dim=-1)

    # ------------------------------------------------------------------------------------- checkpoint
    def retune(self, *, actor_lr: float | None = None, bc_weight: float | None = None) -> None:
        """Change the actor's learning rate or behaviour-cloning weight from now on (None: keep it); a loaded
        state brings its own learning rates, so retune after loading. Raises AgentError out of range."""
        if actor_lr is not None:
            if not actor_lr > 0:
                raise AgentError(f"actor learning rate {actor_lr:g}: expected a positive number")
            self.cfg = dataclasses.replace(self.cfg, actor_lr=float(actor_lr))
            self.optimizer.param_groups[0]["lr"] = float(actor_lr)  # group 0: the actor's (see __init__)
        if bc_weight is not None:
            if not bc_weight >= 0:
                raise AgentError(f"bc_weight {bc_weight:g}: expected 0 or more")
            self.cfg = dataclasses.replace(self.cfg, bc_weight=float(bc_weight))

    def constant_rates(self) -> None:
        """From now on update at ``cfg.actor_lr`` and ``cfg.critic_lr`` as they are, ending a decay of
        ``lr_final_fraction`` that a loaded run had (`vlmrl finetune`: the rates on the robot are the ones it
        states, not a sim run's decayed ones)."""
        self.cfg = dataclasses.replace(self.cfg, lr_final_fraction=1.0, lr_decay_updates=0)
        self.optimizer.param_groups[0]["lr"] = self.cfg.actor_lr  # groups as in _decay_learning_rates
        self.optimizer.param_groups[1]["lr"] = self.cfg.critic_lr

    def state_dict(self) -> dict[str, Any]:
        """A snapshot (deep copy) of everything needed to continue training exactly.

        Networks, targets, normaliser statistics, optimizer moments, temperature and the agent's RNG.
        """
        state = {
            "encoder": self.encoder.state_dict(),
            "actor": self.actor.state_dict(),
            "critic": self.critic.state_dict(),
            "critic_target": self.critic_target.state_dict(),
            "log_alpha": self.log_alpha.detach().clone(),
            "optimizer": self.optimizer.state_dict(),
            "generator": self.generator.get_state(),
            "num_updates": self.num_updates,
            "critic_only_until": self.critic_only_until,
            "encoder_frozen": self.encoder_frozen,
        }
        if self.privileged_head is not None:
            state["privileged_head"] = self.privileged_head.state_dict()
        if self.eval_actor is not self.actor:
            state["eval_actor"] = self.eval_actor.state_dict()
        if self.proposer is not None:
            state["proposer_encoder"] = self.proposer[0].state_dict()
            state["proposer_actor"] = self.proposer[1].state_dict()
        # A copy, so the snapshot neither changes as training goes on nor shares optimizer moments
        # with an agent that loads it (Optimizer.load_state_dict may keep the given tensors).
        return copy.deepcopy(state)

    def load_state_dict(self, state: dict[str, Any]) -> None:
        """Restore a ``state_dict()``; raises AgentError when it comes from a differently shaped agent."""
        try:
            encoder_state = dict(state["encoder"])
            if not self.encoder.privileged_keys:  # checkpoints from before asymmetric critics
                for name, value in self.encoder.privileged_normalizer.state_dict().items():
                    encoder_state.setdefault(f"privileged_normalizer.{name}", value)
            self.encoder.load_state_dict(encoder_state)
            self.actor.load_state_dict(state["actor"])
            # A state without an averaged actor (another agent's) starts the average at the actor.
            if self.eval_actor is not self.actor:
                self.eval_actor.load_state_dict(state.get("eval_actor", state["actor"]))
            self.critic.load_state_dict(state["critic"])
            self.critic_target.load_state_dict(state["critic_target"])
            if self.privileged_head is not None:
                self.privileged_head.load_state_dict(state["privileged_head"])
            if "proposer_actor" in state:
                self.freeze_proposer()
                assert self.proposer is not None
                self.proposer[0].load_state_dict(state["proposer_encoder"])
                self.proposer[1].load_state_dict(state["proposer_actor"])
            self.optimizer.load_state_dict(state["optimizer"])
        except (KeyError, RuntimeError, ValueError) as exc:
            first_line = str(exc).strip().splitlines()[0] if str(exc).strip() else repr(exc)
            raise AgentError(f"agent checkpoint does not match this agent: {first_line}") from None
        with torch.no_grad():
            self.log_alpha.copy_(state["log_alpha"])
        self.generator.set_state(state["generator"])
        self.num_updates = int(state["num_updates"])
        self.critic_only_until = int(state.get("critic_only_until", 0))  # absent before the warm-up existed
        self.encoder_frozen = bool(state.get("encoder_frozen", False))
