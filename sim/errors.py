"""The sim package's error type."""


class SimError(Exception):
    """Bad simulation config (unknown task, camera, resolution) or a rendering backend that cannot start."""
