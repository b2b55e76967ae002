"""The robot package's error type."""


class RobotError(Exception):
    """Bad robot config, a contract violation, or a safety stop that the caller must hear about."""


class ActionError(ValueError):
    """An action a robot env refuses (wrong shape, NaN or inf); the arm keeps its last safe command.

    A ``ValueError`` rather than a ``RobotError`` because ``robot.contract.check_env`` re-raises
    ``RobotError`` as a contract violation, while an env must refuse such actions with its own error.
    """
