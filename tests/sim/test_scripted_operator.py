"""The scripted operator (sim.scripted_operator): when it presses which key, on a stand-in twin."""

import numpy as np
import pytest

from sim.config import ScriptedOperatorConfig
from sim.errors import SimError
from sim.scripted_operator import ScriptedOperator

TARGETS = {"shoulder_pan.pos": 1.0, "gripper.pos": 50.0}


class StandInTwin:
    """What the operator reads of the twin: the task's success, the tool position, the expert."""

    def __init__(self) -> None:
        self.success = False
        self.tool = np.array([0.2, 0.0, 0.1])
        self.experts = 0

    def task_status(self):
        return self.success, float(self.success)

    def tool_position_m(self):
        return self.tool.copy()

    def scripted_expert(self):
        self.experts += 1
        return lambda: dict(TARGETS)


def run(operator, twin, steps, move=None):
    """``steps`` control steps as ``vlmrl.loop.sources.RobotEpisodes`` makes them: poll, then the operator drives
    (``action``) or the tool moves by ``move(t)``; returns the events and the takeover flag per step."""
    events, driving = [], []
    for t in range(steps):
        events.append(operator.poll())
        driving.append(operator.intervening)
        if operator.intervening:
            assert operator.action({}) == TARGETS
        elif move is not None:
            twin.tool = twin.tool + move(t)
    return events, driving


def test_a_stalled_policy_is_taken_over_for_a_while_then_given_back_within_the_budget():
    twin = StandInTwin()
    cfg = ScriptedOperatorConfig(stall_steps=3, stall_m=0.01, takeover_steps=4, budget_steps=6)
    operator = ScriptedOperator(twin, cfg)
    events, driving = run(operator, twin, 20)
    # steps 0-2 watched, 3: take over (space), 4 steps driven, 7: handed back; 3 steps watched, 10: take over
    # for the 2 steps of budget left, 12: handed back; 15: stalled without budget: failure (give_up).
    assert [t for t, e in enumerate(events) if e] == [3, 7, 10, 12, 15]
    assert events[3] == events[7] == events[10] == events[12] == ["intervene"]
    assert events[15] == ["failure"]
    assert driving[3:7] == [True] * 4 and driving[7:10] == [False] * 3 and driving[10:12] == [True] * 2
    log = operator.end_episode()
    assert (log["takeovers"], log["intervention_steps"], log["stalls"], log["failure"]) == (2, 6, 3, 1)
    assert [(s["step"], s["key"]) for s in log["signals"]] == [
        (3, "takeover"), (7, "takeover_off"), (10, "takeover"), (12, "takeover_off"), (15, "failure"),
    ]  # fmt: skip
    assert log["signals"][1]["reason"] == "hands back" and "budget spent" in log["signals"][3]["reason"]
    assert "no intervention budget left" in log["signals"][4]["reason"]
    assert twin.experts == 2  # each takeover starts the expert afresh


def test_a_moving_policy_is_left_alone_and_a_drift_out_of_the_workspace_is_taken_over():
    twin = StandInTwin()
    operator = ScriptedOperator(twin, ScriptedOperatorConfig(stall_steps=3, stall_m=0.01))
    events, _ = run(operator, twin, 10, move=lambda t: np.array([0.0, 0.02 * (-1) ** t, 0.0]))
    assert not any(events)  # 2 cm a step is no stall
    twin.tool = np.array([0.2, 0.0, -0.01])  # below the table
    assert operator.poll() == ["intervene"]
    assert operator.end_episode()["signals"][0]["reason"] == "the tool left the workspace"


def test_success_is_pressed_once_and_the_next_episode_starts_afresh():
    twin = StandInTwin()
    operator = ScriptedOperator(twin, ScriptedOperatorConfig(stall_steps=3, budget_steps=10))
    run(operator, twin, 4)
    assert operator.intervening  # the expert drives after the stall at step 3
    twin.success = True
    assert operator.poll() == ["success"] and operator.poll() == []
    assert operator.end_episode()["success"] == 1
    twin.success = False  # the next episode's scene
    operator.begin_episode()  # the takeover does not outlast the episode, nor do its counts
    assert not operator.intervening and operator.poll() == []
    assert operator.end_episode() | {"signals": None} == {
        "success": 0, "failure": 0, "takeovers": 0, "intervention_steps": 0, "stalls": 0, "drifts": 0,
        "signals": None,
    }  # fmt: skip


def test_keys_only_without_a_budget_and_no_give_up_lets_the_episode_run_out():
    twin = StandInTwin()
    cfg = ScriptedOperatorConfig(stall_steps=2, budget_steps=0, give_up=False)
    operator = ScriptedOperator(twin, cfg)
    events, driving = run(operator, twin, 10)
    assert not any(events) and not any(driving)
    assert operator.end_episode()["stalls"] == 4  # seen every other step, nothing pressed


@pytest.mark.parametrize(
    ("fields", "message"),
    [
        ({"stall_steps": 1}, "stall_steps 1: expected at least 2"),
        ({"budget_steps": -1}, "budget_steps -1"),
        ({"workspace_min_m": (0.5, 0.0, 0.0)}, "each lower corner coordinate must be below the upper one"),
    ],
)
def test_settings_that_cannot_work_are_refused_in_one_line(fields, message):
    with pytest.raises(SimError, match=message):
        ScriptedOperator(StandInTwin(), ScriptedOperatorConfig(**fields))


def test_demonstrate_takes_over_at_the_first_step_of_every_episode_within_the_budget():
    twin = StandInTwin()
    cfg = ScriptedOperatorConfig(demonstrate=True, takeover_steps=5, budget_steps=5, give_up=False)
    operator = ScriptedOperator(twin, cfg)
    events, driving = run(operator, twin, 8)
    assert events[0] == ["intervene"] and driving[:5] == [True] * 5 and events[5] == ["intervene"]
    log = operator.end_episode()
    assert (log["takeovers"], log["intervention_steps"], log["stalls"]) == (1, 5, 0)
    assert "demonstration" in log["signals"][0]["reason"]
    operator.begin_episode()  # the next episode is demonstrated too
    assert operator.poll() == ["intervene"] and operator.intervening
