"""The robot package's error type."""


class RobotError(Exception):
    """Bad robot config, a contract violation, or a safety stop that the caller must hear about."""
