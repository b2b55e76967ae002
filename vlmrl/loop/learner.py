"""The one learner loop: collect -> store -> score -> update -> evaluate/checkpoint.

Every pipeline that learns runs ``Learner.run``: `vlmrl train` with episodes from a simulated env,
`vlmrl finetune` with episodes from a robot (or its twin) and a human in the loop; offline data and
remote actors are the next sources. What varies is the ``ExperienceSource`` (where episodes come from,
who acts) and the ``UpdatePlan`` (when updates run); the agent, the replay buffer, the scoring link and
the counters are the same objects everywhere.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Protocol

import numpy as np

from buffer import ReplayBuffer
from vlmrl.loop.scoring import ScoringLink

Observation = dict[str, np.ndarray]
Act = Callable[[Observation], np.ndarray]
"""Chooses the action for an observation (the learner's policy, or a random warm-up action)."""


@dataclasses.dataclass
class LoopState:
    """Counters, RNG and history of the loop (saved in checkpoints)."""

    step: int = 0
    episode: int = 0
    next_eval_step: int = 0
    next_checkpoint_step: int = 0
    rng_state: dict[str, Any] = dataclasses.field(default_factory=dict)
    evals: list[dict[str, float]] = dataclasses.field(default_factory=list)
    train_log: list[dict[str, float]] = dataclasses.field(default_factory=list)
    demo_episodes_added: int = 0
    demo_steps: int = 0
    demo_successes: int = 0
    demo_attempts: int = 0
    """Expert episodes run for demonstrations, the dropped (unsuccessful) ones included."""
    demo_rows: int = 0
    """Global buffer rows [0, demo_rows) hold the demonstrations and the prior data."""
    prior_episodes_added: int = -1
    """Episodes copied from ``--prior-data`` (-1: not added yet; added once per run, before the first step)."""
    best_eval_step: int = -1
    """Env step of the best scheduled evaluation so far (highest success rate, then highest mean return,
    then the latest), whose policy is ``best_policy.pt``; -1: none yet."""
    best_eval_success: float = -1.0
    """That evaluation's success rate."""
    best_eval_return: float = float("-inf")
    """That evaluation's mean return."""


class ExperienceSource(Protocol):
    """Where episodes come from: an env the learner's policy acts in (sim, robot), or recorded data."""

    def collect(self, episode: int, act: Act, after_step: Callable[[], None]) -> dict[str, float]:
        """Run episode number ``episode``, storing each transition in the buffer and calling ``after_step``
        after each; ``act`` chooses actions (a source may override it, e.g. an operator taking over).

        Returns:
            at least ``return``, ``length`` (transitions) and ``success`` (0 or 1) of the episode.
        """
        ...


@dataclass(frozen=True, kw_only=True)
class UpdatePlan:
    """When the learner acts at random and when it updates the agent."""

    batch_size: int
    """Transitions per gradient update."""
    utd_ratio: int = 1
    """Gradient updates per environment step."""
    random_steps: int = 0
    """Env steps of uniform-random actions before the policy acts (train's learning_starts)."""
    learning_starts: int = 0
    """No update before this many env steps (per-step updates) or stored transitions (between episodes)."""
    between_episodes: bool = False
    """Update after each episode (``utd_ratio`` per step it collected) rather than after every step: on a
    robot, learning must never stretch a control period."""
    td_priorities: bool = False
    """Send each batch's TD errors back to the sampler (PER, VLM x TD; ``vlmrl.loop.replays.takes_td_errors``)."""
    policy_keys: tuple[str, ...] = ()
    """Observation keys the agent reads (batches hold these only)."""


class Learner:
    """The agent, its replay buffer and scoring link, and the loop that ties them (see the module doc).

    Args:
        agent: SAC (``act``, ``update``, ``num_updates``).
        buffer: where sources store transitions and batches come from.
        link: feeds new clips to the scorer and writes scores back into the buffer; None: no scoring.
        plan: when to act at random and when to update.
        state: the loop's counters (step, episode, ...), saved with checkpoints by the pipeline.
        rng: draws the random warm-up actions.
        action_low, action_high: bounds of the random warm-up actions.
    """

    def __init__(
        self,
        agent: Any,
        buffer: ReplayBuffer,
        link: ScoringLink | None,
        plan: UpdatePlan,
        state: LoopState,
        rng: np.random.Generator,
        action_low: np.ndarray | None = None,
        action_high: np.ndarray | None = None,
    ) -> None:
        self.agent, self.buffer, self.link, self.plan = agent, buffer, link, plan
        self.state, self.rng = state, rng
        self.action_low, self.action_high = action_low, action_high
        self._episode_metrics: dict[str, float] = {}

    def run(
        self,
        source: ExperienceSource,
        until: Callable[[], bool],
        after_episode: Callable[[dict[str, float]], None],
    ) -> None:
        """One episode per turn until ``until()``: collect and store (updating after each step unless the plan
        says between episodes), score its clips, update, then ``after_episode(stats)`` evaluates/checkpoints."""
        while not until():
            self._episode_metrics = {}
            stats = source.collect(self.state.episode, self.act, self.after_step)
            stats |= self._episode_metrics
            self.state.episode += 1
            if self.link is not None:
                self.link.submit_new_clips()
                stats |= {f"scorer/{k}": v for k, v in self.link.score_stats().items()}
            if self.plan.between_episodes and self.buffer.num_transitions >= max(
                self.plan.learning_starts, self.plan.batch_size
            ):
                n_updates = int(stats["length"]) * self.plan.utd_ratio
                stats |= self.update(n_updates) | {"updates": float(n_updates)}
            stats |= self.buffer.replay_stats(prior_rows=self.state.demo_rows)  # replay/...: issue #35
            after_episode(stats)

    def act(self, obs: Observation) -> np.ndarray:
        """Uniform-random during the plan's warm-up, else the agent's (stochastic) action."""
        if self.state.step < self.plan.random_steps:
            assert self.action_low is not None and self.action_high is not None
            return self.rng.uniform(self.action_low, self.action_high).astype(np.float32)
        return self.agent.act({k: obs[k] for k in self.plan.policy_keys})

    def after_step(self) -> None:
        """Count the step; with per-step updates, run ``utd_ratio`` of them once learning has started."""
        self.state.step += 1
        if (
            not self.plan.between_episodes
            and self.state.step >= self.plan.learning_starts
            and self.buffer.num_transitions > 0
        ):
            self._episode_metrics = self.update(self.plan.utd_ratio)

    def update(self, n_updates: int) -> dict[str, float]:
        """``n_updates`` gradient updates from the buffer (TD errors back to a TD sampler); the scalar
        metrics averaged over them, the mean importance weight and, with demonstrations in the buffer,
        their share of the last batch."""
        sums: dict[str, float] = {}
        batch = None
        for _ in range(n_updates):
            batch = self.buffer.sample(self.plan.batch_size, keys=list(self.plan.policy_keys))
            metrics = self.agent.update(batch)
            if self.plan.td_priorities:
                self.buffer.update_priorities(batch.indices, metrics["td_error"])
            self.buffer.set_learner_step(self.agent.num_updates)
            for key, value in metrics.items():
                if np.ndim(value) == 0:
                    sums[key] = sums.get(key, 0.0) + float(value)
        if batch is None:
            return {}
        out = {key: value / n_updates for key, value in sums.items()}
        out["weight_mean"] = float(batch.weights.mean())
        if self.state.demo_rows:  # how much of the replay the demonstrations get (sampler-dependent)
            out["demo_share"] = float((batch.indices < self.state.demo_rows).mean())
        return out
