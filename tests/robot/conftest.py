"""A patched Feetech motor bus shared by the robot tests (LeRobot's own tests patch the bus the same way)."""

import pytest
from lerobot.motors.feetech import FeetechMotorsBus

from robot.config import SO101_JOINT_KEYS

MOTORS = [k.removesuffix(".pos") for k in SO101_JOINT_KEYS]


class FakeBus:
    """State behind the patched FeetechMotorsBus: motors reach each goal by the next read."""

    def __init__(self):
        # Per bus instance: a robot left over from another test may be garbage-collected mid-test, and
        # LeRobot's Robot.__del__ disconnects it; that must not disconnect this test's bus.
        self.open_buses = set()
        self.present = dict.fromkeys(MOTORS, 0.0) | {"elbow_flex": 20.0}
        self.calls = []
        self.on_read = None
        self.fail_write = None

    def install(self, monkeypatch):
        fake = self

        def _connect(bus, handshake=True):
            fake.calls.append(("connect", handshake))
            fake.open_buses.add(id(bus))

        def disconnect(bus, disable_torque=True):
            fake.calls.append(("disconnect", disable_torque))
            fake.open_buses.discard(id(bus))

        def sync_read(bus, data_name, motors=None):
            fake.calls.append(("sync_read", data_name))
            if fake.on_read is not None:
                fake.on_read()
            return dict(fake.present)

        def sync_write(bus, data_name, values):
            if fake.fail_write is not None:
                raise fake.fail_write
            fake.calls.append(("sync_write", data_name, dict(values)))
            if data_name == "Goal_Position":
                fake.present.update(values)

        def write(bus, data_name, motor, value):
            fake.calls.append(("write", data_name, motor, value))

        def torque(name):
            return lambda bus, motors=None, num_retry=0: fake.calls.append((name, motors))

        monkeypatch.setattr(FeetechMotorsBus, "_connect", _connect)
        monkeypatch.setattr(FeetechMotorsBus, "set_timeout", lambda bus, *a, **k: None)
        monkeypatch.setattr(
            FeetechMotorsBus, "is_connected", property(lambda bus: id(bus) in fake.open_buses)
        )
        monkeypatch.setattr(FeetechMotorsBus, "is_calibrated", property(lambda bus: True))
        monkeypatch.setattr(FeetechMotorsBus, "disconnect", disconnect)
        monkeypatch.setattr(FeetechMotorsBus, "sync_read", sync_read)
        monkeypatch.setattr(FeetechMotorsBus, "sync_write", sync_write)
        monkeypatch.setattr(FeetechMotorsBus, "write", write)
        monkeypatch.setattr(
            FeetechMotorsBus, "configure_motors", lambda bus, **k: fake.calls.append(("configure",))
        )
        monkeypatch.setattr(FeetechMotorsBus, "disable_torque", torque("disable_torque"))
        monkeypatch.setattr(FeetechMotorsBus, "enable_torque", torque("enable_torque"))
        return self

    def goals(self):
        return [c[2] for c in self.calls if c[:2] == ("sync_write", "Goal_Position")]


@pytest.fixture
def bus(monkeypatch, tmp_path):
    monkeypatch.setenv("HF_LEROBOT_CALIBRATION", str(tmp_path / "calibration"))
    return FakeBus().install(monkeypatch)
