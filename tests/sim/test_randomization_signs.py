"""Signed randomisation draws go both ways (issue #36, item 7: the mutant "every signed draw positive"
survived the non-pixel tests): each factor's offset is negative about as often as positive, in every
training and held-out draw, and stays within its magnitude band."""

from __future__ import annotations

import numpy as np

from sim.randomization import HELD_OUT_MAGNITUDE, PRESETS, TRAINING_MAGNITUDE, draw, episode_generator

SIGNED = {
    "camera_fovy_deg": lambda p: p.camera_fovy_deg["front"],
    "light_frac": lambda p: p.light_scale - 1.0,
    "color": lambda p: p.cube_rgb_delta[0],
    "color (table, blue)": lambda p: p.table_rgb_delta[2],
    "cube_mass_frac": lambda p: p.cube_mass_scale - 1.0,
    "cube_size_frac": lambda p: p.cube_size_scale - 1.0,
    "friction_frac": lambda p: p.friction_scale - 1.0,
    "joint_damping_frac": lambda p: p.joint_damping_scale - 1.0,
    "gripper_force_frac": lambda p: p.gripper_force_scale - 1.0,
}
"""Factor -> its signed offset in a Perturbation."""


def test_every_signed_factor_is_drawn_below_and_above_its_nominal_value() -> None:
    ranges = PRESETS["strong"]
    for magnitude in (TRAINING_MAGNITUDE, HELD_OUT_MAGNITUDE):
        draws = [draw(ranges, episode_generator(seed, 0), ("front",), magnitude) for seed in range(200)]
        for factor, offset in SIGNED.items():
            scale = getattr(ranges, factor.split(" ")[0])
            values = np.array([offset(p) for p in draws])
            negative = float(np.mean(values < 0))
            assert 0.35 <= negative <= 0.65, (factor, magnitude, negative)
            sizes = np.abs(values)
            assert np.all(sizes <= magnitude[1] * scale + 1e-9), factor
            assert np.all(sizes >= magnitude[0] * scale - 1e-9), factor


def test_camera_offsets_point_in_every_direction() -> None:
    ranges = PRESETS["strong"]
    draws = [draw(ranges, episode_generator(seed, 0), ("front",)) for seed in range(200)]
    for key in ("camera_offset_m", "camera_rotation"):
        vectors = np.array([getattr(p, key)["front"] for p in draws])
        negative = np.mean(vectors < 0, axis=0)
        assert np.all((negative > 0.3) & (negative < 0.7)), (key, negative)
