"""The one assembly of a learner: agent, replay buffer (its sampler), scoring link, update plan and loop
state, built the same way for every verb that learns, and saved in and restored from one checkpoint format.

`vlmrl train` (``vlmrl.online.trainer``; also the online part of ``--then-online`` and ``--agent-from``) and
`vlmrl finetune` call ``build_agent`` and then ``build_learner``; what differs between them is data they
pass in (where the store lives, the update plan, how a new run's agent starts), not code. Between the two
calls the caller may set up what needs the agent but comes before the buffer (finetune's Ray arms).
``learner_checkpoint`` is the state every such run checkpoints (``vlmrl.loop.checkpoint`` writes and reads it).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import zarr

from agents.config import SACConfig
from agents.sac import SAC
from buffer import BufferConfig, ReplayBuffer, make_buffer
from vlm import Scorer
from vlm.config import AuxRewardConfig, WorkerConfig
from vlmrl.loop.learner import Learner, LoopState, UpdatePlan
from vlmrl.loop.replays import takes_td_errors
from vlmrl.loop.scoring import ScoringLink, aux_reward_for


def build_agent(
    cfg: SACConfig,
    obs_spec: dict[str, Any],
    action_space: Any,
    *,
    privileged_keys: tuple[str, ...] = (),
    estimate_dim: int | None = None,
    checkpoint: dict[str, Any] | None = None,
    start: Callable[[SAC], None] | None = None,
) -> SAC:
    """The run's SAC: restored from ``checkpoint`` (a resume), else new and handed to ``start`` (a new run's
    initial weights: an offline agent, a sim run's; None: fresh networks).

    Args:
        cfg: the agent's config (its seed included).
        obs_spec: what the agent reads (the policy's keys and the critics' privileged ones).
        action_space: the bounded Box its actions are in.
        privileged_keys: the keys only the critics read (``--asymmetric-critic``).
        estimate_dim: size of the actor's state-estimate head (a sim run's, when fine-tuning from it).
        checkpoint: a ``learner_checkpoint`` state to resume from.
        start: sets a new run's initial weights.
    """
    agent = SAC(cfg, obs_spec, action_space, privileged_keys=privileged_keys, estimate_dim=estimate_dim)
    if checkpoint is not None:
        agent.load_state_dict(checkpoint["agent"])
    elif start is not None:
        start(agent)
    return agent


@dataclass(frozen=True, kw_only=True)
class StoreSpec:
    """The replay buffer of a run: its resolved config and what it stores."""

    cfg: BufferConfig
    """Resolved: storage, sampler, aux-reward wiring, seed."""
    obs_spec: dict[str, Any]
    """The observation arrays stored (key -> (shape, dtype))."""
    action_dim: int
    info_keys: tuple[str, ...]
    """The per-step info stored (``success``, ``progress``, ...)."""
    path: Path | None = None
    """Where a zarr store lives, or a saved in-RAM buffer to reload; None: a new in-RAM buffer."""
    record: dict[str, Any] | None = None
    """``vlmrl_record`` attributes of a store that is a recording (``vlmrl record``, a fine-tuning run)."""


def open_episode_store(
    store: Path,
    buffer_cfg: Any,
    obs_spec: dict[str, Any],
    action_dim: int,
    info_keys: tuple[str, ...],
    record_attrs: dict[str, Any],
) -> ReplayBuffer:
    """Open (or create) a zarr episode store with ``record_attrs`` under its ``vlmrl_record`` attribute.

    The store keeps its group metadata in memory and rewrites it on every commit, so the attribute is
    written while no buffer holds the store, then the store is reopened (and keeps it from then on).
    """
    make_buffer(buffer_cfg, obs_spec, action_dim, info_keys, path=str(store)).close()
    zarr.open_group(str(store), mode="a").attrs["vlmrl_record"] = record_attrs
    return make_buffer(buffer_cfg, obs_spec, action_dim, info_keys, path=str(store))


def open_store(spec: StoreSpec) -> ReplayBuffer:
    """The replay buffer ``spec`` describes."""
    if spec.record is not None:
        assert spec.path is not None, "a recording needs a path"
        return open_episode_store(
            spec.path, spec.cfg, spec.obs_spec, spec.action_dim, spec.info_keys, spec.record
        )
    path = str(spec.path) if spec.path is not None else None
    return make_buffer(spec.cfg, spec.obs_spec, spec.action_dim, spec.info_keys, path=path)


@dataclass(frozen=True, kw_only=True)
class ScoringSpec:
    """How clip scores reach the buffer (``vlmrl.loop.scoring.ScoringLink``)."""

    worker: WorkerConfig
    """The async scoring worker."""
    aux_reward: AuxRewardConfig
    """The aux reward's shape (its discount is the buffer's)."""
    aux_weight: float
    """The pipeline's one aux-reward weight (0: no aux reward)."""
    sync: bool = False
    """Score each episode's clips before the next episode (exact resumes with VLM replay)."""
    wait_s: float = 0.0
    """After each episode, wait up to this long for its clips' scores."""


ChangedStore = Callable[[int, int], None]
"""Called on resume when the store holds another number of episodes (stored, checkpointed) than the
checkpoint: warn (the buffer's sampler is then rebuilt, not restored) or raise."""


def build_learner(
    agent: SAC,
    store: StoreSpec,
    plan: UpdatePlan,
    seed: int,
    *,
    scorer: tuple[Scorer, str] | None = None,
    scoring: ScoringSpec | None = None,
    state: LoopState | None = None,
    checkpoint: dict[str, Any] | None = None,
    changed_store: ChangedStore | None = None,
    action_bounds: tuple[np.ndarray, np.ndarray] | None = None,
) -> Learner:
    """The learner of a run: ``agent`` (``build_agent``), its replay buffer, the scoring link that feeds
    ``scorer`` and writes its scores and aux rewards back, the loop state and RNG, restored from
    ``checkpoint`` on a resume.

    Whether the sampler takes the learner's TD errors is decided here, from the buffer's sampler
    (``replays.takes_td_errors``), whatever ``plan.td_priorities`` says.

    Args:
        agent: the run's SAC.
        store: the replay buffer to open.
        plan: when to act at random and when to update.
        seed: seeds the loop's RNG (random warm-up actions) of a new run.
        scorer: a ready scorer and its prompt (``vlmrl.scorers.choice.ready_scorer``); None: no scoring.
            The learner's link owns it from here (closed with the link, or here when building fails).
        scoring: how the link scores (required with ``scorer``).
        state: a new run's loop state (default: all counters at zero).
        checkpoint: a ``learner_checkpoint`` state to resume from (the agent is restored by ``build_agent``).
        changed_store: see ``ChangedStore``; None: warn-free rebuild.
        action_bounds: bounds of the random warm-up actions (``plan.random_steps`` > 0).
    """
    try:
        buffer = open_store(store)
    except BaseException:
        if scorer is not None:
            scorer[0].close()
        raise
    link = None
    if scorer is not None:
        assert scoring is not None, "a scorer needs its ScoringSpec"
        aux = aux_reward_for(scoring.aux_reward, scoring.aux_weight, store.cfg.gamma)
        link = ScoringLink(
            buffer, scorer[0], scorer[1], scoring.worker, aux, sync=scoring.sync, wait_s=scoring.wait_s
        )
    state = state if state is not None else LoopState()
    rng = np.random.default_rng(seed)
    if checkpoint is not None:
        try:
            state = restore(checkpoint, buffer, link, rng, changed_store)
        except BaseException:
            if link is not None:
                link.close()
            buffer.close()
            raise
    plan = dataclasses.replace(plan, td_priorities=takes_td_errors(store.cfg.sampler))
    low, high = action_bounds if action_bounds is not None else (None, None)
    return Learner(agent, buffer, link, plan, state, rng, low, high)


def restore(
    checkpoint: dict[str, Any],
    buffer: ReplayBuffer,
    link: ScoringLink | None,
    rng: np.random.Generator,
    changed_store: ChangedStore | None,
) -> LoopState:
    """Restore the buffer's sampler, the link's scores and the RNG from ``checkpoint``; its loop state."""
    if buffer.num_episodes == checkpoint["num_episodes_committed"]:
        buffer.load_state_dict(checkpoint["buffer"])
    elif changed_store is not None:
        changed_store(buffer.num_episodes, checkpoint["num_episodes_committed"])
    if link is not None and checkpoint.get("scoring") is not None:
        link.load_state_dict(checkpoint["scoring"])
    state = dataclasses.replace(checkpoint["loop"])
    if state.rng_state:
        rng.bit_generator.state = state.rng_state
    return state


def learner_checkpoint(
    learner: Learner, config: Any, policy_obs_spec: dict[str, Any], **extra: Any
) -> dict[str, Any]:
    """What a run that learns checkpoints (``vlmrl.loop.checkpoint.save_checkpoint``): its ``config``, the
    agent, the buffer's sampler and RNG, the loop's counters, RNG and history, the scoring link's scores,
    the resolved buffer config (for reading only) and what the policy reads (for `vlmrl finetune` and
    `deploy`: key -> (shape, dtype name)); ``extra`` entries beside them (finetune: ``train_config``)."""
    state, buffer = learner.state, learner.buffer
    return {
        "config": config,
        **extra,
        "agent": learner.agent.state_dict(),
        "buffer": buffer.state_dict(),
        "loop": dataclasses.replace(
            state,
            rng_state=dict(learner.rng.bit_generator.state),
            evals=list(state.evals),
            train_log=list(state.train_log),
        ),
        "num_episodes_committed": buffer.num_episodes,
        "scoring": learner.link.state_dict() if learner.link is not None else None,
        "buffer_config": buffer.cfg,  # as resolved (sampler, aux-reward weight): for reading only
        "policy_obs_spec": {
            k: (tuple(shape), np.dtype(dt).name) for k, (shape, dt) in policy_obs_spec.items()
        },
    }
