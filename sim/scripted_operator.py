"""`ScriptedOperator`: the person at the twin's arm, scripted: presses the keys a person watching would press and
takes over with the twin's expert when the policy is stuck (`vlmrl finetune --operator scripted`).

It watches what a person at the arm sees: whether the task holds (the twin's success) and where the tool
really is (not where the reported joints put it on a unit with zero offsets). It acts only as a person
does: through the operator keys (``robot.teleop.OperatorKeys``, pressed programmatically: ``right`` success,
``left`` failure, ``space`` takeover on and off) and, during a takeover, by proposing absolute joint targets as
a leader arm does (the twin's ``ScriptedPolicy``, ``SimSO101.scripted_expert``). So the learner gets its
success only as a key press, and its takeovers are stored and learned from as a person's.

Per step (``poll``, called before each action):

- the task holds: press success (once; the episode ends at that step, as a keyboard press ends it);
- the expert drives: hand back after ``takeover_steps`` or when the episode's ``budget_steps`` are spent;
- the policy drives and the tool left the workspace box (drift) or moved less than ``stall_m`` over the
  last ``stall_steps`` steps (stall): take over while budget is left, else press failure (``give_up``);
- with ``demonstrate``, take over at the first step: the expert drives the episode (demonstrations).

Each episode's signals (step, key, reason) and counts come back from ``end_episode``. One operator is both
the keys and the teleop of ``vlmrl.loop.sources.RobotEpisodes``. Between episodes the twin puts the scene back
itself (``LeRobotEnv.reset`` calls ``SimSO101.reset_scene``), what the person resets by hand on a real arm.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

import numpy as np

from robot.teleop import OperatorKeys
from sim.config import ScriptedOperatorConfig
from sim.errors import SimError

SIGNAL_COUNTS = ("success", "failure", "takeovers", "intervention_steps", "stalls", "drifts")
"""Per-episode counts in ``end_episode`` (besides the list of signals)."""


class ScriptedOperator:
    """The scripted operator of one twin robot (see the module doc).

    Args:
        robot: the twin (``SimSO101``): ``task_status()``, ``tool_position_m()``, ``scripted_expert()``.
        cfg: when to press and when to take over.

    Raises:
        SimError: settings that cannot work (a stall window under 2 steps, a negative budget, an empty box).
    """

    def __init__(self, robot: Any, cfg: ScriptedOperatorConfig) -> None:
        if cfg.stall_steps < 2:
            raise SimError(f"scripted operator stall_steps {cfg.stall_steps}: expected at least 2")
        if cfg.budget_steps < 0 or cfg.takeover_steps < 1:
            raise SimError(
                f"scripted operator budget_steps {cfg.budget_steps} / takeover_steps {cfg.takeover_steps}: "
                "expected a budget of 0 or more and takeovers of at least 1 step"
            )
        if not np.all(np.asarray(cfg.workspace_min_m) < np.asarray(cfg.workspace_max_m)):
            raise SimError(
                f"scripted operator workspace {cfg.workspace_min_m}..{cfg.workspace_max_m}: each lower corner "
                "coordinate must be below the upper one"
            )
        self.robot, self.cfg = robot, cfg
        self.keys = OperatorKeys(listen=False)
        self._low, self._high = np.asarray(cfg.workspace_min_m), np.asarray(cfg.workspace_max_m)
        self._expert: Callable[[], dict[str, float]] | None = None
        self.begin_episode()

    @property
    def intervening(self) -> bool:
        """True while the expert drives (the takeover key's toggle)."""
        return self.keys.intervening

    def begin_episode(self) -> None:
        """Forget the last episode: budget, tool history, signals (call after the env's reset)."""
        if self.keys.intervening:
            self.keys.press("space")  # a takeover does not outlast its episode
        self.keys.poll()
        self._step = 0
        self._budget = self.cfg.budget_steps
        self._takeover_left = 0
        self._outcome_pressed = False
        self._tool: list[np.ndarray] = []
        self._expert = None
        self.signals: list[dict[str, Any]] = []
        self.counts = dict.fromkeys(SIGNAL_COUNTS, 0)

    def poll(self) -> list[str]:
        """Look at the arm, press what a person would press now; the key events since the last poll."""
        success, _ = self.robot.task_status()
        tool = np.asarray(self.robot.tool_position_m(), dtype=np.float64)
        if success and not self._outcome_pressed:
            self._press("right", "success", "the task holds")
        elif not self._outcome_pressed:
            if self.keys.intervening:
                self._while_driving()
            else:
                self._while_watching(tool)
        self._tool.append(tool)
        self._step += 1
        return self.keys.poll()

    def action(self, measured: Mapping[str, float]) -> dict[str, float]:
        """The expert's joint targets (absolute, the arm's units) for this step of a takeover."""
        if self._expert is None:
            self._expert = self.robot.scripted_expert()
        self._budget -= 1
        self._takeover_left -= 1
        self.counts["intervention_steps"] += 1
        return self._expert()

    def sync(self, measured: Mapping[str, float]) -> None:
        """Nothing to follow: the expert reads the twin's state when it drives."""

    def end_episode(self) -> dict[str, Any]:
        """The episode's counts (``SIGNAL_COUNTS``) and its signals, each ``{"step", "key", "reason"}``."""
        return {**self.counts, "signals": list(self.signals)}

    def close(self) -> None:
        """Nothing to release (the keys do not listen to a keyboard)."""
        self.keys.close()

    def _while_driving(self) -> None:
        if self._budget <= 0:
            self._press("space", "takeover_off", "intervention budget spent")
        elif self._takeover_left <= 0:
            self._press("space", "takeover_off", "hands back")
        else:
            return
        self._tool.clear()  # the policy gets a whole window before the next stall

    def _while_watching(self, tool: np.ndarray) -> None:
        reason = None
        if self.cfg.demonstrate and self._step == 0 and self._budget > 0:
            self._press("space", "takeover", "demonstration: the expert drives from the first step")
            self.counts["takeovers"] += 1
            self._takeover_left = min(self.cfg.takeover_steps, self._budget)
            return
        if np.any(tool < self._low) or np.any(tool > self._high):
            reason, kind = "the tool left the workspace", "drifts"
        elif len(self._tool) >= self.cfg.stall_steps:
            window = np.stack([*self._tool[-self.cfg.stall_steps + 1 :], tool])
            if float(np.max(np.linalg.norm(window - window[0], axis=1))) < self.cfg.stall_m:
                reason, kind = (
                    f"the tool moved under {self.cfg.stall_m:g} m in {self.cfg.stall_steps} steps",
                    "stalls",
                )
        if reason is None:
            return
        self.counts[kind] += 1
        if self._budget > 0:
            self._press("space", "takeover", reason)
            self.counts["takeovers"] += 1
            self._takeover_left = min(self.cfg.takeover_steps, self._budget)
            self._expert = None  # each takeover starts the expert's phases afresh from where things are
        elif self.cfg.give_up:
            self._press("left", "failure", f"{reason}, no intervention budget left")
        else:
            self._tool.clear()

    def _press(self, key: str, signal: str, reason: str) -> None:
        self.keys.press(key)
        if signal in ("success", "failure"):
            self._outcome_pressed = True
            self.counts[signal] += 1
        self.signals.append({"step": self._step, "key": signal, "reason": reason})
