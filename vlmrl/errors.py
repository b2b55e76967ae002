"""Errors the CLI prints as one line, without a traceback."""

from agents.errors import AgentError
from buffer.errors import BufferError
from calibration.errors import CalibrationError
from robot.errors import RobotError
from sim.errors import SimError
from vlm.errors import VLMError


class ConfigError(Exception):
    """A pipeline config that cannot run (conflicting options, a missing run directory...)."""


USER_ERRORS: tuple[type[Exception], ...] = (
    ConfigError,
    AgentError,
    BufferError,
    CalibrationError,
    RobotError,
    SimError,
    VLMError,
)
