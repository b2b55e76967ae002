"""Experience sources of the learner loop (``vlmrl.loop.learner.ExperienceSource``): where episodes come from.

- ``EnvEpisodes``: a gymnasium-style env (the simulated arm of `vlmrl train`); episode e resets with
  seed ``seed_base + e``, so a resumed run repeats the uninterrupted one.
- ``RobotEpisodes``: a ``LeRobotEnv`` (a real arm or its twin) with an operator who marks success or
  failure, resets, or takes over (`vlmrl finetune`); what the arm was really sent is stored, in the agent's units (``agent_action``).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from vlmrl.loop.arm_actions import ActionConverter, agent_action, arm_targets
from vlmrl.loop.learner import Act

INTERVENTION_KEY = "intervention"
"""Per-step info flag (0/1) of the steps someone other than the policy drove: an operator's takeover on a robot,
the scripted expert's under `vlmrl train --takeover-stall-steps`."""
ROBOT_INFO_KEYS = ("success", "progress", INTERVENTION_KEY)
"""Per-step info a robot episode stores (the operator's takeovers included)."""
STORE_ACTIONS = ("sent", "policy")
"""What a policy-driven robot step stores as its action (``RobotEpisodes``' ``store_action``)."""
KEY_EVENTS = ("success", "failure", "rerecord", "intervene")
"""Operator key events a robot episode counts (``robot.teleop.OPERATOR_KEYS``)."""


class StagedSteps:
    """An episode's transitions held back from the buffer (``add_step``, as the buffer's) until it is kept
    (``keep_into``) or dropped (``drop``): demonstrations that fail never reach the buffer."""

    def __init__(self) -> None:
        self.steps: list[tuple[Any, ...]] = []

    def add_step(self, *step: Any) -> None:
        self.steps.append(step)

    def keep_into(self, buffer: Any) -> None:
        for step in self.steps:
            buffer.add_step(*step)
        self.steps.clear()

    def drop(self) -> None:
        self.steps.clear()


class EnvEpisodes:
    """Episodes of an env; the transitions' ``stored_keys`` go to the buffer.

    Args:
        env: gymnasium-style env whose ``info`` carries ``success``.
        buffer: the replay buffer (``add_step``).
        stored_keys: observation keys stored per step.
        seed_base: episode e resets with seed ``seed_base + e``.
        extra_info: values added to every step's info (demonstrations in a run with env actors store
            ``policy_version`` -1).
        reset_options: called before each episode for the env's reset ``options`` (``vlmrl train``'s
            randomisation curriculum); None: no options.
        steps_after_success: an episode ends (truncated, not terminal) this many steps after its first
            success; None: at the env's own end.
        guide: called after each reset with the episode's index: how many first steps of it a guide policy
            drives, and the guide's ``act`` (``vlmrl train --jump-start-steps``: the scripted expert, JSRL);
            its steps are stored as any other. None: ``act`` drives every step.
        takeover: an expert that may take over for the rest of an episode (``vlmrl train
            --takeover-stall-steps``, ``vlmrl.online.takeover.StallTakeover``: ``begin()`` after each reset,
            ``drives(task_holds)`` before each step, ``act(obs)``, ``stepped()`` after each step); every step then
            stores ``info[INTERVENTION_KEY]``, 1 where it drove. None: no takeovers.
    """

    def __init__(
        self,
        env: Any,
        buffer: Any,
        stored_keys: Sequence[str],
        seed_base: int,
        extra_info: dict[str, float] | None = None,
        reset_options: Callable[[], dict[str, Any]] | None = None,
        steps_after_success: int | None = None,
        guide: Callable[[int], tuple[int, Act]] | None = None,
        takeover: Any = None,
    ) -> None:
        self.env, self.buffer, self.stored_keys, self.seed_base = env, buffer, list(stored_keys), seed_base
        self.extra_info = extra_info or {}
        self.reset_options = reset_options
        self.steps_after_success = steps_after_success
        self.guide = guide
        self.takeover = takeover

    def collect(self, episode: int, act: Act, after_step: Callable[[], None]) -> dict[str, float]:
        """One episode with ``act`` choosing actions (see ``ExperienceSource.collect``)."""
        options = self.reset_options() if self.reset_options is not None else None
        obs, _ = self.env.reset(seed=self.seed_base + episode, options=options)
        guided, guide_act = self.guide(episode) if self.guide is not None else (0, act)
        takeover = self.takeover
        if takeover is not None:
            takeover.begin()
        episode_return, length, success, since_success = 0.0, 0, False, 0
        holds, interventions = False, 0
        while True:
            taking = takeover is not None and takeover.drives(holds)
            if taking:
                action = takeover.act(obs)
            else:
                action = guide_act(obs) if length < guided else act(obs)
            next_obs, reward, terminated, truncated, info = self.env.step(action)
            holds = bool(info["success"])
            if takeover is not None:
                takeover.stepped()
                info = {**info, INTERVENTION_KEY: float(taking)}
                interventions += taking
            success = success or bool(info["success"])
            if success and self.steps_after_success is not None:
                truncated = truncated or (not terminated and since_success >= self.steps_after_success)
                since_success += 1
            self.buffer.add_step(
                {k: obs[k] for k in self.stored_keys}, action, reward, terminated, truncated,
                {**info, **self.extra_info},
                {k: next_obs[k] for k in self.stored_keys},
            )  # fmt: skip
            length += 1
            episode_return += float(reward)
            after_step()
            if terminated or truncated:
                break
            obs = next_obs
        stats = {"return": episode_return, "length": float(length), "success": float(success)}
        for key in ("randomize_scale", "difficulty"):  # the curricula's stages, in the logs and curves
            if options and key in options:
                stats[key] = float(options[key])
        if self.guide is not None:
            stats["guide_steps"] = float(min(guided, length))
        if takeover is not None:  # logged as train/interventions and train/takeovers
            stats["interventions"], stats["takeovers"] = float(interventions), float(interventions > 0)
        return stats


class RobotEpisodes:
    """Episodes on a robot env with an operator: the policy acts unless the operator takes over.

    Operator events (``robot.teleop.OPERATOR_KEYS``): success/failure mark the outcome, rerecord ends
    the episode now (not terminal; the data stays), intervening hands the arm to ``teleop``. A person at the
    keyboard and the twin's scripted operator (``sim.scripted_operator``) take this one path: an operator
    with ``begin_episode()`` is told when an episode starts (else its stale presses are dropped), and one with
    ``end_episode()`` gives its own log of the episode (the stats' ``operator``).

    Args:
        env: a ``LeRobotEnv`` (``measured``, ``action_keys``, ``mark_outcome``, ``truncate_now``).
        buffer: the replay buffer; its info keys are ``ROBOT_INFO_KEYS``.
        keys: the operator's keys (``poll()``, ``intervening``).
        teleop: drives during a takeover (``action(measured)``; optional ``sync(measured)``).
        seed_base: episode e resets with seed ``seed_base + e``.
        convert: a joint-delta or end-effector policy's converter (``vlmrl.loop.arm_actions``): its actions go
            through ``arm_targets`` and the buffer stores ``agent_action`` of what was sent; None (a policy on
            joint targets) stores what was sent.
        store_action: what a step the policy drove stores: ``sent``, what the arm was sent (after the safety
            layer), or ``policy``, the policy's own action, the safety layer then part of the robot as the
            twin's clipping is part of the sim (what `vlmrl train` stores). Takeovers always store what was
            sent.
    """

    def __init__(
        self,
        env: Any,
        buffer: Any,
        keys: Any,
        teleop: Any,
        seed_base: int,
        convert: ActionConverter | None = None,
        store_action: str = "sent",
    ) -> None:
        if store_action not in STORE_ACTIONS:
            raise ValueError(f"store_action {store_action!r}: expected one of {STORE_ACTIONS}")
        self.env, self.buffer, self.keys, self.teleop, self.seed_base = env, buffer, keys, teleop, seed_base
        self.convert = convert
        self.store_action = store_action

    def collect(self, episode: int, act: Act, after_step: Callable[[], None]) -> dict[str, Any]:
        """One episode (see ``ExperienceSource.collect``); also counts the operator's takeover steps
        (``interventions``) and takeovers, its key presses (``keys/<event>``) and the episode's safety clips
        (``safety_clips``, by reason)."""
        env, keys = self.env, self.keys
        obs, info = env.reset(seed=self.seed_base + episode)
        begin = getattr(keys, "begin_episode", None)
        if callable(begin):
            begin()
        else:
            keys.poll()  # presses made between episodes do not count
        total, steps, interventions, takeovers, done = 0.0, 0, 0, 0, False
        presses: Counter[str] = Counter()
        clips: Counter[str] = Counter()
        was_intervening = False
        while not done:
            for event in keys.poll():
                presses[event] += 1
                if event in ("success", "failure"):
                    env.mark_outcome(event == "success")
                elif event == "rerecord":
                    env.truncate_now()  # "reset now": the data stays, the episode is not terminal
            if keys.intervening:
                targets = self.teleop.action(env.measured)
                action = np.array([targets[k] for k in env.action_keys], np.float32)
                interventions += 1
                takeovers += not was_intervening
            else:
                teleop_sync = getattr(self.teleop, "sync", None)
                if callable(teleop_sync):
                    teleop_sync(env.measured)  # a takeover starts where the arm is
                proposed = np.asarray(act(obs), np.float32)
                action = arm_targets(env, proposed, self.convert)
            was_intervening = bool(keys.intervening)
            previous = env.last_sent() if self.convert is not None else None
            next_obs, reward, terminated, truncated, info = env.step(action)
            clips.update(reason.split(":")[0] for reason in info.get("safety", ()))
            step_info = {
                "success": info["success"],
                "progress": info["progress"],
                "intervention": float(was_intervening),
            }
            if self.store_action == "policy" and not was_intervening:
                stored = np.clip(proposed, -1.0, 1.0) if self.convert is not None else action
            else:
                stored = agent_action(info["sent_action"], previous, self.convert, env.action_keys)
            self.buffer.add_step(obs, stored, reward, terminated, truncated, step_info, next_obs)
            obs, total, steps = next_obs, total + float(reward), steps + 1
            done = terminated or truncated
            after_step()
        stats: dict[str, Any] = {
            "return": total,
            "length": float(steps),
            "success": float(bool(info["success"])),
            "interventions": float(interventions),
            "takeovers": float(takeovers),
            **{f"keys/{event}": float(presses[event]) for event in KEY_EVENTS},
            "safety_clips": dict(sorted(clips.items())),
        }
        end = getattr(keys, "end_episode", None)
        if callable(end):
            stats["operator"] = end()
        return stats
