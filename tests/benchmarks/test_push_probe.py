"""benchmarks/push_probe.py: where push episodes stop, and the kinds of failure."""

from __future__ import annotations

import numpy as np
import push_probe
import pytest

from sim.config import SimConfig
from sim.experts import make_expert
from sim.factory import make_env

PUSH = SimConfig(task="push", action_mode="delta", cameras=(), terminate_on_success=False)


def test_failure_kinds() -> None:
    assert push_probe.failure_kind(True, 0.0, 0.05, 0.05) == "success"
    assert push_probe.failure_kind(False, 0.002, 0.08, 0.08) == "untouched"
    assert (
        push_probe.failure_kind(False, 0.04, 0.035, 0.04) == "stopped_short"
    )  # ended 5 mm beyond its closest
    assert push_probe.failure_kind(False, 0.2, 0.01, 0.15) == "pushed_away"  # came near, then flung


def test_the_expert_pushes_deep_and_a_still_arm_leaves_the_cube() -> None:
    env = make_env(PUSH)
    try:
        expert = make_expert(env)
        pushed = push_probe.probe_episode(env, expert.act, 3_000_000, reset=expert.reset)
        still = push_probe.probe_episode(env, lambda obs: np.zeros(6, np.float32), 3_000_000)
    finally:
        env.close()
    assert pushed["success"] and pushed["kind"] == "success"
    assert pushed["steps"] == 100  # run on to the time limit, not ended at the first success
    assert pushed["closest_cm"] < 3.0 <= pushed["start_cm"]
    assert still["kind"] == "untouched" and still["closest_cm"] == pytest.approx(still["start_cm"], abs=0.05)
    summary = push_probe.summarise([pushed, still])
    assert summary["kinds"] == {"success": 1, "stopped_short": 0, "pushed_away": 0, "untouched": 1}
    assert summary["success_closest_cm_median"] == pushed["closest_cm"]
    assert "success 1" in push_probe.describe({"policy": "p", "summary": summary})
