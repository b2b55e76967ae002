"""Verification of sub-task checkers on episodes, and the dense CaR reward (issue #17, VLM-CaR).

Criteria (Venuto et al., 2024): on every successful expert episode each checker is true at the end and
false at the start, and the sub-tasks first become true in their order; on random-policy episodes that
did not succeed, each checker is (almost) never true. The dense reward of a state is the index of the
first sub-task whose checker is false plus that sub-task's progress, divided by the number of sub-tasks
(so in [0, 1], 1 when all are done); it depends on the state alone, so SAC sees a Markov reward.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from vlm.reward_program.sandbox import SubtaskResult

EpisodeResults = Sequence[Sequence[SubtaskResult]]
"""Per step of one episode, one result per sub-task."""


def dense_reward(row: Sequence[SubtaskResult]) -> tuple[float, int]:
    """(reward in [0, 1], stage) for one state: stage = sub-tasks done in order before the first undone."""
    stage = 0
    for result in row:
        if not result.done:
            break
        stage += 1
    if stage == len(row):
        return 1.0, stage
    return (stage + row[stage].progress) / len(row), stage


@dataclass(frozen=True)
class CheckerRow:
    """One checker's rates over the verification episodes."""

    name: str
    true_at_expert_end: float
    true_at_expert_start: float
    true_on_random_steps: float
    in_order: float
    """Share of expert episodes where it first became true no earlier than the sub-task before it."""
    errors: int
    """Views on which its code raised."""


@dataclass(frozen=True)
class Verification:
    """The table and the verdict."""

    rows: tuple[CheckerRow, ...]
    passed: bool
    reason: str
    """One line: why it failed (empty when it passed)."""
    expert_episodes: int
    random_episodes: int

    def table(self) -> str:
        """Markdown table, one row per checker."""
        lines = [
            "| sub-task | true at expert end | true at expert start | true on random steps | in order | errors |",
            "|---|---|---|---|---|---|",
        ]
        for r in self.rows:
            lines.append(
                f"| {r.name} | {r.true_at_expert_end:.0%} | {r.true_at_expert_start:.0%} | "
                f"{r.true_on_random_steps:.1%} | {r.in_order:.0%} | {r.errors} |"
            )
        return "\n".join(lines)

    def verdict(self) -> str:
        """One line."""
        counts = f"{self.expert_episodes} expert and {self.random_episodes} random episodes"
        return f"PASS on {counts}" if self.passed else f"FAIL on {counts}: {self.reason}"

    def as_dict(self) -> dict[str, object]:
        return {
            "passed": self.passed,
            "reason": self.reason,
            "expert_episodes": self.expert_episodes,
            "random_episodes": self.random_episodes,
            "rows": [r.__dict__ for r in self.rows],
        }


def _first_true(episode: EpisodeResults, j: int) -> int:
    for t, row in enumerate(episode):
        if row[j].done:
            return t
    return len(episode)


def verify(
    names: Sequence[str],
    expert: Sequence[EpisodeResults],
    random: Sequence[EpisodeResults],
    max_random_true_frac: float = 0.05,
) -> Verification:
    """Judge the checkers on successful expert episodes and unsuccessful random-policy episodes."""
    if not expert:
        return Verification((), False, "no successful expert episode to verify on", 0, len(random))
    rows, reasons = [], []
    random_steps = [row for episode in random for row in episode]
    for j, name in enumerate(names):
        end = float(np.mean([ep[-1][j].done for ep in expert]))
        start = float(np.mean([ep[0][j].done for ep in expert]))
        on_random = float(np.mean([row[j].done for row in random_steps])) if random_steps else 0.0
        if j == 0:
            order = 1.0
        else:
            order = float(np.mean([_first_true(ep, j - 1) <= _first_true(ep, j) for ep in expert]))
        errors = sum(row[j].error != "" for ep in [*expert, *random] for row in ep)
        rows.append(CheckerRow(name, end, start, on_random, order, errors))
        if errors:
            first = next(row[j].error for ep in [*expert, *random] for row in ep if row[j].error)
            reasons.append(f"{name} raised on {errors} views ({first})")
        if end < 1.0:
            reasons.append(f"{name} is false at the end of {1 - end:.0%} of expert episodes")
        if start > 0.0:
            reasons.append(f"{name} is already true at the start of {start:.0%} of expert episodes")
        if on_random > max_random_true_frac:
            reasons.append(
                f"{name} is true on {on_random:.1%} of random-policy steps (max {max_random_true_frac:.1%})"
            )
        if order < 1.0:
            reasons.append(
                f"{name} completes before the sub-task before it in {1 - order:.0%} of expert episodes"
            )
    return Verification(tuple(rows), not reasons, "; ".join(reasons), len(expert), len(random))
