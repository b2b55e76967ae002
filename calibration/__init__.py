"""Camera intrinsics, hand-eye and camera-to-base extrinsics, calibration files."""
