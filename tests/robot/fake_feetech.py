"""A chain of simulated Feetech STS3215 servos behind a fake serial port, for hardware-free robot tests.

It replaces ``serial.Serial`` (what scservo_sdk's ``PortHandler`` opens) and speaks the Feetech (SCS)
packet protocol: PING, READ, WRITE, SYNC_READ and SYNC_WRITE on a 256-byte register table per servo. So
everything above the serial port runs for real: scservo_sdk's packet handler, checksums and group sync
reads/writes, LeRobot's ``FeetechMotorsBus`` (sign-magnitude encoding, the calibration's tick <-> degree
conversion, the handshake and the calibration check), ``SO101Follower`` and our ``LeRobotEnv``. A servo
with torque on moves to its goal at once (Present_Position := Goal_Position).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from lerobot.motors.encoding_utils import encode_sign_magnitude
from lerobot.motors.feetech.tables import MODEL_NUMBER_TABLE, STS_SMS_SERIES_CONTROL_TABLE

TABLE = STS_SMS_SERIES_CONTROL_TABLE
SO101_MOTORS = ("shoulder_pan", "shoulder_lift", "elbow_flex", "wrist_flex", "wrist_roll", "gripper")
"""SO-101 follower motor names; ids 1..6 in this order."""
RESOLUTION = 4096
PING, READ, WRITE, SYNC_WRITE, SYNC_READ = 0x01, 0x02, 0x03, 0x83, 0x82
BROADCAST = 0xFE


def checksum(body: list[int]) -> int:
    return ~sum(body) & 0xFF


class Servo:
    """One servo's register table (little-endian words, as scservo_sdk with SCS_END = 0)."""

    def __init__(self, model: str = "sts3215") -> None:
        self.memory = bytearray(256)
        self.set("Model_Number", MODEL_NUMBER_TABLE[model])
        self.set("Firmware_Major_Version", 3)
        self.set("Firmware_Minor_Version", 10)
        self.set("Present_Position", RESOLUTION // 2)
        self.set("Goal_Position", RESOLUTION // 2)

    def set(self, name: str, value: int) -> None:
        address, length = TABLE[name]
        self.memory[address : address + length] = int(value).to_bytes(length, "little")

    def get(self, name: str) -> int:
        address, length = TABLE[name]
        return int.from_bytes(self.memory[address : address + length], "little")

    def write(self, address: int, data: list[int]) -> None:
        self.memory[address : address + len(data)] = bytes(data)
        goal, _ = TABLE["Goal_Position"]
        if address <= goal < address + len(data) and self.get("Torque_Enable"):
            self.set("Present_Position", self.get("Goal_Position"))


class FakeServoPort:
    """What ``serial.Serial(...)`` returns: bytes written are instruction packets, bytes read are replies."""

    def __init__(self, servos: dict[int, Servo]) -> None:
        self.servos = servos
        self.replies = bytearray()
        self.is_open = True
        self.goal_writes: list[dict[int, int]] = []
        """Goal_Position ticks per servo id of every SYNC_WRITE to it, in order."""

    # -- pyserial's interface, as PortHandler uses it ---------------------------------------------------
    def write(self, packet: Any) -> int:
        data = list(packet)
        assert data[:2] == [0xFF, 0xFF], data
        length = data[3]
        body = data[2 : 4 + length]
        assert checksum(body[:-1]) == body[-1], "bad checksum from the host"
        self._handle(data[2], data[4], data[5 : 3 + length])
        return len(data)

    def read(self, size: int) -> bytes:
        out, self.replies = bytes(self.replies[:size]), self.replies[size:]
        return out

    @property
    def in_waiting(self) -> int:
        return len(self.replies)

    def flush(self) -> None:
        pass

    def reset_input_buffer(self) -> None:
        self.replies.clear()

    def close(self) -> None:
        self.is_open = False

    # -- the servos' side ---------------------------------------------------------------------------------
    def _reply(self, servo_id: int, params: list[int]) -> None:
        body = [servo_id, len(params) + 2, 0, *params]
        self.replies += bytes([0xFF, 0xFF, *body, checksum(body)])

    def _handle(self, servo_id: int, instruction: int, params: list[int]) -> None:
        if instruction == SYNC_READ:
            address, length, ids = params[0], params[1], params[2:]
            for i in ids:
                if i in self.servos:
                    self._reply(i, list(self.servos[i].memory[address : address + length]))
            return
        if instruction == SYNC_WRITE:
            address, length, rest = params[0], params[1], params[2:]
            goals = {}
            for k in range(0, len(rest), length + 1):
                i, chunk = rest[k], rest[k + 1 : k + 1 + length]
                if i in self.servos:
                    self.servos[i].write(address, chunk)
                    if address == TABLE["Goal_Position"][0]:
                        goals[i] = int.from_bytes(bytes(chunk[:2]), "little")
            if goals:
                self.goal_writes.append(goals)
            return
        servo = self.servos.get(servo_id)
        if servo is None:
            return  # no reply: the host times out, as with a missing motor
        if instruction == PING:
            self._reply(servo_id, [])
        elif instruction == READ:
            address, length = params
            self._reply(servo_id, list(servo.memory[address : address + length]))
        elif instruction == WRITE:
            servo.write(params[0], params[1:])
            if servo_id != BROADCAST:
                self._reply(servo_id, [])
        else:
            raise AssertionError(f"instruction {instruction:#x} not simulated")


def so101_servos(calibration: dict[str, dict[str, int]]) -> dict[int, Servo]:
    """Servos whose EEPROM holds ``calibration`` (LeRobot's file format), as after lerobot-calibrate."""
    servos = {}
    for cal in calibration.values():
        servo = Servo()
        servo.set("Homing_Offset", encode_sign_magnitude(cal["homing_offset"], 11))
        servo.set("Min_Position_Limit", cal["range_min"])
        servo.set("Max_Position_Limit", cal["range_max"])
        servos[cal["id"]] = servo
    return servos


def write_calibration(directory: Path, robot_id: str, calibration: dict[str, dict[str, int]]) -> Path:
    """LeRobot's calibration file ``<directory>/<robot_id>.json``."""
    directory.mkdir(parents=True, exist_ok=True)
    path = directory / f"{robot_id}.json"
    path.write_text(json.dumps(calibration, indent=2))
    return path


def install(monkeypatch: Any, servos: dict[int, Servo]) -> FakeServoPort:
    """Make every ``serial.Serial`` that scservo_sdk opens talk to ``servos``; returns the port."""
    import scservo_sdk.port_handler

    port = FakeServoPort(servos)
    monkeypatch.setattr(scservo_sdk.port_handler.serial, "Serial", lambda *a, **k: port)
    return port
