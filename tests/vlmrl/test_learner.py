"""The learner loop on its own (no simulator): its order, update schedules, warm-up and TD feedback."""

from __future__ import annotations

import numpy as np
import pytest

from buffer import BufferConfig, PERSamplerConfig, make_buffer
from vlmrl.loop.learner import Learner, LoopState, UpdatePlan
from vlmrl.loop.replays import REPLAYS, takes_td_errors

EPISODE_STEPS = 4


class CountingAgent:
    """Acts with ones; each update returns a loss and TD errors 0.5, 1.5, ..., and counts itself."""

    def __init__(self) -> None:
        self.num_updates = 0
        self.batch_keys: list[list[str]] = []
        self.last_indices = np.zeros(0, np.int64)
        self.obs_keys: list[list[str]] = []

    def act(self, obs):
        self.obs_keys.append(sorted(obs))
        return np.ones(2, np.float32)

    def update(self, batch):
        self.num_updates += 1
        self.batch_keys.append(sorted(batch.obs))
        self.last_indices = batch.indices
        td_error = np.arange(len(batch.indices), dtype=np.float32) + 0.5
        return {"critic_loss": float(self.num_updates), "td_error": td_error}


class Steps:
    """An experience source of fixed-length episodes; records the actions it was given. Observations also
    carry ``extra``, a key the policy does not read."""

    def __init__(self, buffer, log: list[str], steps: int = EPISODE_STEPS) -> None:
        self.buffer, self.log, self.actions, self.steps = buffer, log, [], steps

    def collect(self, episode, act, after_step):
        self.log.append(f"collect {episode}")
        for t in range(self.steps):
            obs = {"state": np.full(3, t, np.float32), "extra": np.zeros(1, np.float32)}
            action = act(obs)
            self.actions.append(action)
            last = t == self.steps - 1
            nxt = {"state": np.full(3, t + 1, np.float32), "extra": np.zeros(1, np.float32)}
            self.buffer.add_step(obs, action, 1.0, False, last, {"success": 0.0, "progress": 0.0}, nxt)
            after_step()
        return {"return": float(self.steps), "length": float(self.steps), "success": 0.0}


def learner_for(plan: UpdatePlan, tmp_buffer_cfg: BufferConfig | None = None):
    spec = {"state": ((3,), np.float32), "extra": ((1,), np.float32)}
    buffer = make_buffer(tmp_buffer_cfg or BufferConfig(capacity_steps=200), spec, 2)
    agent, state = CountingAgent(), LoopState()
    low, high = -np.full(2, 0.5, np.float32), np.full(2, 0.5, np.float32)
    return (
        Learner(agent, buffer, None, plan, state, np.random.default_rng(0), low, high),
        agent,
        buffer,
        state,
    )


def run(learner, source, episodes: int, log: list[str]) -> list[dict[str, float]]:
    stats_seen: list[dict[str, float]] = []

    def after(stats):
        log.append(f"after {learner.state.episode}")
        stats_seen.append(stats)

    learner.run(source, until=lambda: learner.state.episode >= episodes, after_episode=after)
    return stats_seen


def test_per_step_updates_start_after_learning_starts_and_the_warm_up_acts_at_random():
    plan = UpdatePlan(batch_size=4, random_steps=6, learning_starts=6, policy_keys=("state",))
    learner, agent, buffer, state = learner_for(plan)
    log: list[str] = []
    source = Steps(buffer, log)
    stats = run(learner, source, 3, log)
    assert log == ["collect 0", "after 1", "collect 1", "after 2", "collect 2", "after 3"]
    assert state.step == 12 and state.episode == 3
    assert agent.num_updates == 12 - 6 + 1  # steps 6..12, each once the first episode is stored
    assert "critic_loss" not in stats[0] and stats[2]["critic_loss"] == agent.num_updates  # the last update's
    random, policy = np.array(source.actions[:6]), np.array(source.actions[6:])
    assert np.all(np.abs(random) <= 0.5) and not np.allclose(random, random[0])  # uniform in the bounds
    assert all(action.dtype == np.float32 for action in source.actions[:6])
    assert np.all(policy == 1.0)  # the agent's
    assert agent.obs_keys == [["state"]] * 6  # it reads the policy's keys only
    assert all(keys == ["state"] for keys in agent.batch_keys)
    buffer.close()


def test_between_episode_updates_run_utd_per_collected_step_and_feed_td_errors_to_a_td_sampler(monkeypatch):
    plan = UpdatePlan(
        batch_size=4, utd_ratio=2, between_episodes=True, td_priorities=True, policy_keys=("state",)
    )
    learner, agent, buffer, _ = learner_for(
        plan, BufferConfig(capacity_steps=200, sampler=PERSamplerConfig())
    )
    fed: list[np.ndarray] = []
    monkeypatch.setattr(buffer, "update_priorities", lambda indices, errors: fed.append(np.asarray(errors)))
    log: list[str] = []
    stats = run(learner, Steps(buffer, log), 2, log)
    assert [s["updates"] for s in stats] == [2.0 * EPISODE_STEPS] * 2
    assert [s["return"] for s in stats] == [float(EPISODE_STEPS)] * 2  # the episode's stats are kept
    assert agent.num_updates == 2 * 2 * EPISODE_STEPS and len(fed) == agent.num_updates
    assert all(np.array_equal(errors, np.arange(4) + 0.5) for errors in fed)  # the agent's TD errors
    assert stats[0]["critic_loss"] == pytest.approx(np.mean(np.arange(1, 9)))  # the mean over the updates
    buffer.close()


def test_the_replay_mode_decides_td_feedback_once():
    assert {mode for mode, replay in REPLAYS.items() if replay.td_priorities} == {"per", "vlm_td"}
    assert takes_td_errors(PERSamplerConfig()) and not takes_td_errors(BufferConfig().sampler)


class FakeLink:
    """A scoring link that counts its submissions and reports one statistic."""

    def __init__(self, log: list[str]) -> None:
        self.log = log

    def submit_new_clips(self) -> int:
        self.log.append("score")
        return 1

    def score_stats(self) -> dict[str, float]:
        return {"clips": 3.0}


@pytest.mark.parametrize("between_episodes", [False, True])
def test_the_samplers_learner_step_follows_the_agents_updates(between_episodes):
    """PER's beta and the VLM mix's lambda anneal with the sampler's step: it must be the update count."""
    plan = UpdatePlan(batch_size=4, between_episodes=between_episodes, policy_keys=("state",))
    learner, agent, buffer, _ = learner_for(
        plan, BufferConfig(capacity_steps=200, sampler=PERSamplerConfig())
    )
    steps: list[tuple[int, int]] = []
    run_one = learner.update

    def update(n_updates):
        out = run_one(n_updates)
        steps.append((buffer.sampler.state_dict()["step"], agent.num_updates))
        return out

    learner.update = update
    run(learner, Steps(buffer, []), 3, [])
    assert steps and all(sampler == updates for sampler, updates in steps)
    assert steps[-1][1] == (3 * EPISODE_STEPS if between_episodes else 3 * EPISODE_STEPS - EPISODE_STEPS + 1)
    buffer.close()


def test_each_episode_is_scored_after_it_is_collected_and_the_stats_carry_the_scorers():
    plan = UpdatePlan(batch_size=32, policy_keys=("state",))
    learner, agent, buffer, state = learner_for(plan)
    log: list[str] = []
    learner.link = FakeLink(log)  # type: ignore[assignment]
    state.demo_rows = EPISODE_STEPS + 1  # the first episode's rows (4 transitions and its last observation)
    stats = run(learner, Steps(buffer, log), 2, log)
    assert log == ["collect 0", "score", "after 1", "collect 1", "score", "after 2"]
    assert stats[1]["scorer/clips"] == 3.0
    assert stats[1]["weight_mean"] == 1.0  # uniform replay
    # the demonstrations' share of the last batch: its rows below demo_rows
    assert EPISODE_STEPS + 1 in agent.last_indices  # the first row after them was drawn
    assert stats[1]["demo_share"] == pytest.approx(np.mean(agent.last_indices < EPISODE_STEPS + 1))
    assert 0.0 < stats[1]["demo_share"] < 1.0
    buffer.close()


def test_per_step_updates_start_with_the_first_stored_transition():
    plan = UpdatePlan(batch_size=2, policy_keys=("state",))
    learner, agent, buffer, state = learner_for(plan)
    run(learner, Steps(buffer, [], steps=1), 3, [])  # one-transition episodes
    assert state.step == 3 and agent.num_updates == 3
    assert learner.update(0) == {}
    buffer.close()
