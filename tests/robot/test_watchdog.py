import threading

import pytest

from robot.config import WatchdogConfig
from robot.errors import RobotError
from robot.estop import EmergencyStop
from robot.rate import RateKeeper
from robot.watchdog import Watchdog

PERIOD = 1 / 30


class Clock:
    def __init__(self):
        self.t = 100.0

    def __call__(self):
        return self.t

    def sleep(self, dt):
        self.t += dt


@pytest.mark.parametrize("stall_at_step", [1, 7])
def test_stalled_observation_stops_within_two_periods(stall_at_step):
    clock, trips = Clock(), []
    dog = Watchdog(WatchdogConfig(), PERIOD, trips.append, clock=clock)
    dog.arm()
    # A healthy loop: observation and tick every period, the watchdog polling every quarter period.
    last_obs = clock.t
    for step in range(200):
        if step < stall_at_step:
            dog.observed()
            last_obs = clock.t
        dog.ticked()
        for _ in range(4):
            clock.sleep(PERIOD / 4)
            dog.check()
        if trips:
            break
    assert len(trips) == 1 and trips[0].startswith("stale observation")
    assert dog.trip_time - last_obs <= 2 * PERIOD


def test_overrunning_loop_trips_and_healthy_loop_does_not():
    clock, trips = Clock(), []
    dog = Watchdog(WatchdogConfig(), PERIOD, trips.append, clock=clock)
    dog.arm()
    for _ in range(100):
        dog.observed()
        dog.ticked()
        clock.sleep(PERIOD)
        dog.check()
    assert trips == []
    # Observations keep coming from a camera thread, but the loop itself hangs.
    last_tick = clock.t
    for _ in range(20):
        dog.observed()
        clock.sleep(PERIOD / 4)
        dog.check()
    assert len(trips) == 1 and trips[0].startswith("control loop overran")
    assert dog.trip_time - last_tick <= 2 * PERIOD


def test_disarmed_watchdog_ignores_idle_time_and_trips_only_once():
    clock, trips = Clock(), []
    dog = Watchdog(WatchdogConfig(), PERIOD, trips.append, clock=clock)
    clock.sleep(10.0)
    assert dog.check() is None
    dog.arm()
    clock.sleep(1.0)
    dog.check()
    dog.check()
    assert len(trips) == 1


def test_watchdog_thread_trips_on_a_real_stall():
    tripped = threading.Event()
    dog = Watchdog(WatchdogConfig(), 0.01, lambda reason: tripped.set())
    dog.start()
    dog.arm()
    assert tripped.wait(timeout=5.0)
    dog.close()
    assert dog.tripped is not None


def test_thresholds_that_cannot_stop_in_two_periods_are_rejected():
    with pytest.raises(RobotError, match="within two control periods"):
        Watchdog(WatchdogConfig(stale_after_periods=2.0), PERIOD, print)


def test_emergency_stop_latches_and_calls_back_once():
    calls = []
    stop = EmergencyStop(on_stop=calls.append)
    assert not stop.triggered
    stop.trigger("operator")
    stop.trigger("again")
    assert stop.triggered and stop.reason == "operator" and calls == ["operator"]


def test_emergency_stop_key_is_off_without_a_display(monkeypatch):
    monkeypatch.delenv("DISPLAY", raising=False)
    monkeypatch.delenv("WAYLAND_DISPLAY", raising=False)
    assert EmergencyStop().listen_keyboard() is False


def test_rate_keeper_sleeps_to_deadlines_and_counts_overruns():
    clock = Clock()
    rate = RateKeeper(10.0, clock=clock, sleep=clock.sleep)
    rate.restart()
    start = clock.t
    for _ in range(3):
        clock.sleep(0.02)  # work shorter than the period
        assert rate.wait() == 0.0
    assert clock.t == pytest.approx(start + 0.3)
    clock.sleep(0.25)  # one long iteration
    assert rate.wait() == pytest.approx(0.15)
    clock.sleep(0.01)
    assert rate.wait() == 0.0
    assert rate.metrics() == {"ticks": 5, "overruns": 1, "max_lateness_s": pytest.approx(0.15)}
