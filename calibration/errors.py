"""The calibration package's error type."""


class CalibrationError(Exception):
    """Bad calibration input (no board, too few images, mixed sizes) or a missing/stale calibration file."""
