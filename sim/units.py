"""Hardware-like units of the SO-101 twin: fixed offsets that make one twin differ from another like arms do.

A policy trained in the nominal twin meets a real arm that differs from it in ways that stay put: its
servos answer a period or two late, their gears have play, they ignore commands smaller than their dead
band, their calibration puts each joint's zero a few degrees off (the arm reports a position the joint is
not at), the camera is not where the twin has it, the room is lit otherwise, the table and the cube are
another material. A *unit* is one such arm: a set of offsets drawn once from a seed (``draw_unit``), the
same in every episode, so fine-tuning on it is fine-tuning on one arm (``vlmrl finetune --robot.unit b``);
domain randomisation (``sim.randomization``) draws a new twin every episode instead.

The offsets reach a policy only as a real arm's would, through the joints the arm reports and the frames
its camera gives (``sim.lerobot_twin.SimSO101``); no observation key names the unit. Camera, light,
friction and mass are a fixed ``sim.randomization.Perturbation`` written once by the randomiser
(``Randomizer.apply``); latency, backlash, the dead band and the zero offsets are the twin robot's
(``UnitDrive``): what it reports and how it moves.

The units (``UNITS``; ``units_table()`` writes this table, and a test keeps it and docs/twin-units.md equal):

| unit | seed | latency (periods) | backlash (deg) | dead band (deg) | zero offsets (deg; gripper 0..100) | camera front: shift (mm), turn (deg), fov (deg) | light | cube friction | table friction | cube mass |
|---|---|---|---|---|---|---|---|---|---|---|
| nominal | - | 0 | 0 | 0 | 0 | 0, 0, 0 | x1.00 | x1.00 | x1.00 | x1.00 |
| a | 101 | 2 | 0.8-1.3 | 0.5-0.7 | -2.4 -2.1 +3.2 -2.7 -3.0 +1.1 | 16, 2.8, +1.7 | x0.92 | x0.66 | x1.15 | x0.72 |
| b | 102 | 1 | 0.5-1.3 | 0.2-0.5 | -1.2 -1.6 -3.1 -1.2 +1.5 -3.2 | 15, 2.1, +2.3 | x1.10 | x0.84 | x0.83 | x0.76 |
| c | 103 | 1 | 1.0-1.5 | 0.3-0.6 | +2.7 +2.4 +2.7 -2.8 +2.5 -1.3 | 21, 3.4, +2.6 | x1.09 | x1.18 | x1.15 | x0.75 |
| d | 104 | 2 | 0.4-1.4 | 0.2-0.8 | -2.6 +1.7 -1.4 -2.5 +1.7 -3.2 | 25, 3.2, +2.8 | x0.92 | x0.81 | x0.80 | x1.29 |
| e | 105 | 2 | 0.5-1.5 | 0.4-0.8 | +2.9 -2.8 +2.7 +3.3 +3.1 -1.9 | 18, 2.5, +2.4 | x0.93 | x1.17 | x0.83 | x0.68 |

(The wrist camera's offsets are drawn too, from the same ranges; ``Unit.describe()`` lists every value.)
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np

from robot.contract import JOINT_NAMES
from sim.errors import SimError
from sim.randomization import Perturbation, Randomizer, Ranges, draw
from sim.so101.arm import CAMERAS

ARM_JOINTS: tuple[str, ...] = JOINT_NAMES[:5]
"""Joints with gears (backlash, dead band); the gripper has a zero offset only."""

UNIT_SEEDS: dict[str, int] = {"a": 101, "b": 102, "c": 103, "d": 104, "e": 105}
"""Unit name -> the seed its offsets are drawn from (``draw_unit``)."""
NOMINAL = "nominal"
"""The unit without offsets: the twin the policies train in."""

UNIT_SALT = 0x0A12_5EED
"""Seed stream of the units' draws (apart from the randomisation's episode draws and the held-out grid)."""

LIGHT_FRAC = 0.1
"""Light: x(1 +- 0.04..0.1). Small on purpose: the deployable lift policy (trained without randomisation, 50%
in the nominal twin over 10 episodes) fell to 10-20% at x0.92 and x1.04-1.08 and to 0% at x0.85 and x1.15;
with the first range (+-0.14..0.35) every unit was at 0% from the light alone, a gap no other factor came near."""
CAMERA_RANGES = Ranges(camera_pos_m=0.025, camera_rot_deg=4.0, camera_fovy_deg=4.0, light_frac=LIGHT_FRAC)
"""Camera pose and field of view, light: each drawn at 40-100% of these (``UNIT_MAGNITUDE``), random sign
or direction, with ``sim.randomization.draw``. A camera mounted by hand: 1-2.5 cm, 1.6-4 degrees."""
UNIT_MAGNITUDE = (0.4, 1.0)
"""Share of each range a unit's offset takes: never close to nominal, never beyond the range."""
MASS_FRICTION_FRAC = 0.35
"""Cube mass, cube (and finger pad) friction, table friction: each x(1 +- 0.4..1 of this)."""
LATENCY_STEPS = (1, 2)
"""Control periods a unit's servos answer late (STS3215 servos on a USB bus: one or two 20-30 Hz periods)."""
BACKLASH_DEG = (0.4, 1.5)
"""Range of each arm joint's gear play, degrees (total width of the play)."""
DEAD_BAND_DEG = (0.2, 0.8)
"""Range of each arm joint's dead band, degrees: a command this close to the servo's goal is ignored."""
ZERO_OFFSET = (1.0, 3.5)
"""Size of each joint's calibration error (random sign): degrees; for the gripper, its 0..100 units."""


@dataclass(frozen=True, kw_only=True)
class Unit:
    """One hardware-like unit of the twin; every field at its default is the nominal twin."""

    name: str = NOMINAL
    seed: int | None = None
    """Seed of the draw (None: the nominal unit)."""
    latency_steps: int = 0
    """The servos receive each command this many control periods late."""
    backlash_deg: dict[str, float] = dataclasses.field(default_factory=dict)
    """Arm joint -> width of its gear play, degrees: after a reversal the joint stays behind its command by up
    to half of it (the command must cross the play before the joint follows)."""
    dead_band_deg: dict[str, float] = dataclasses.field(default_factory=dict)
    """Arm joint -> its dead band, degrees: a new goal closer than this to the servo's present goal is ignored."""
    zero_offset: dict[str, float] = dataclasses.field(default_factory=dict)
    """Joint -> calibration error (degrees; gripper: 0..100 units): the arm reports ``true + offset`` and a
    command ``c`` moves the joint to ``c - offset``."""
    perturbation: Perturbation = dataclasses.field(default_factory=Perturbation)
    """Camera pose and field of view, light, cube mass and cube/finger friction (``Randomizer.apply``)."""
    table_friction_scale: float = 1.0
    """Table's sliding friction x this (MuJoCo takes the larger coefficient of two touching geoms: a table
    rougher than the cube slows what slides on it)."""

    def describe(self) -> dict[str, Any]:
        """Every value of the unit as plain data (for reports and ``config.json``)."""
        return dataclasses.asdict(self)


def draw_unit(name: str, seed: int) -> Unit:
    """The unit ``name`` drawn from ``seed``: every factor at 40-100% of its range, random signs."""
    rng = np.random.default_rng([UNIT_SALT, int(seed)])
    scene = draw(
        dataclasses.replace(
            CAMERA_RANGES, cube_mass_frac=MASS_FRICTION_FRAC, friction_frac=MASS_FRICTION_FRAC
        ),
        rng,
        CAMERAS,
        UNIT_MAGNITUDE,
    )
    latency = int(rng.integers(LATENCY_STEPS[0], LATENCY_STEPS[1] + 1))
    low, high = UNIT_MAGNITUDE

    def signed(size_range: tuple[float, float]) -> float:
        size = float(rng.uniform(*size_range))
        return size if rng.random() < 0.5 else -size

    table = 1.0 + signed((low * MASS_FRICTION_FRAC, high * MASS_FRICTION_FRAC))
    return Unit(
        name=name,
        seed=int(seed),
        latency_steps=latency,
        backlash_deg={j: round(float(rng.uniform(*BACKLASH_DEG)), 2) for j in ARM_JOINTS},
        dead_band_deg={j: round(float(rng.uniform(*DEAD_BAND_DEG)), 2) for j in ARM_JOINTS},
        zero_offset={j: round(signed(ZERO_OFFSET), 2) for j in JOINT_NAMES},
        perturbation=dataclasses.replace(scene, latency_steps=latency, joint_noise_std=0.0),
        table_friction_scale=table,
    )


UNITS: dict[str, Unit] = {NOMINAL: Unit(), **{n: draw_unit(n, s) for n, s in UNIT_SEEDS.items()}}
"""The named units: ``nominal`` and ``a``..``e`` (``UNIT_SEEDS``)."""


FACTORS: dict[str, tuple[tuple[str, ...], tuple[str, ...]]] = {
    "latency": (("latency_steps",), ("latency_steps",)),
    "gears": (("backlash_deg", "dead_band_deg"), ()),
    "offsets": (("zero_offset",), ()),
    "camera": ((), ("camera_offset_m", "camera_rotation", "camera_fovy_deg")),
    "light": ((), ("light_scale",)),
    "physics": (("table_friction_scale",), ("cube_mass_scale", "friction_scale")),
}
"""A unit's factors, each as (its ``Unit`` fields, its ``Perturbation`` fields): what ``unit_named("a/only-light")``
keeps alone and ``unit_named("a/no-light")`` takes away (docs/twin-units.md's table, one row per factor)."""


def with_factors(unit: Unit, factors: set[str] | frozenset[str], name: str | None = None) -> Unit:
    """``unit`` with only ``factors`` (names in ``FACTORS``) kept; every other factor at its nominal value."""
    unknown = sorted(set(factors) - set(FACTORS))
    if unknown:
        raise SimError(f"unit factor {unknown[0]!r} unknown; expected some of {list(FACTORS)}")
    nominal, unit_fields, scene_fields = Unit(), {}, {}
    for factor, (own, scene) in FACTORS.items():
        source = unit if factor in factors else nominal
        unit_fields.update({f: getattr(source, f) for f in own})
        scene_fields.update({f: getattr(source.perturbation, f) for f in scene})
    perturbation = dataclasses.replace(unit.perturbation, **scene_fields)
    return dataclasses.replace(unit, name=name or unit.name, perturbation=perturbation, **unit_fields)


def factor_names(name: str) -> list[str]:
    """``UNIT/factors``: the unit, then each of its factors alone and the unit without each (the names
    ``unit_named`` takes: which difference costs a policy its success); another name as it is."""
    base, _, variant = name.partition("/")
    if variant != "factors":
        return [name]
    return [base, *(f"{base}/only-{f}" for f in FACTORS), *(f"{base}/no-{f}" for f in FACTORS)]


def unit_named(name: str) -> Unit:
    """The unit called ``name``: a named unit (``UNITS``), or one of its factors alone (``a/only-light``) or the
    unit without one factor (``a/no-light``), factors from ``FACTORS``; SimError (one line) for another."""
    base, _, variant = name.partition("/")
    if base not in UNITS:
        raise SimError(f"sim_so101 unit {name!r} unknown; expected one of {list(UNITS)}")
    if not variant:
        return UNITS[base]
    mode, _, factor = variant.partition("-")
    if mode not in ("only", "no") or factor not in FACTORS or base == NOMINAL:
        raise SimError(
            f"sim_so101 unit {name!r} unknown: a unit's variant is UNIT/only-FACTOR or UNIT/no-FACTOR, UNIT one of "
            f"{[u for u in UNITS if u != NOMINAL]}, FACTOR one of {list(FACTORS)}"
        )
    keep = {factor} if mode == "only" else set(FACTORS) - {factor}
    return with_factors(UNITS[base], keep, name)


def apply_scene(unit: Unit, model: Any, data: Any) -> tuple[int, ...]:
    """Write the unit's camera, light, mass and friction into a freshly built twin model (once, on
    connect); returns the texture ids to upload (none: units keep the nominal textures)."""
    changed = Randomizer(model, CAMERAS).apply(unit.perturbation, data)
    table = int(model.geom("table").id)
    model.geom_friction[table][0] *= unit.table_friction_scale
    return changed


class UnitDrive:
    """How a unit's servos turn goals into motion and what they report (see ``Unit``), in LeRobot units.

    ``command`` maps a goal in the arm's frame (what the arm reports) to the physical actuator targets of
    this control period: minus the zero offset, through the latency queue, the dead band and the gear play.
    ``report`` maps physical joint positions to the arm's frame. The nominal unit is the identity.
    """

    def __init__(self, unit: Unit) -> None:
        self.unit = unit
        self._pending: list[dict[str, float]] = []
        self._goal: dict[str, float] = {}
        self._output: dict[str, float] = {}

    def reset(self, physical_targets: Mapping[str, float]) -> None:
        """Start from the servos holding ``physical_targets`` (after the scene was placed)."""
        start = {k: float(v) for k, v in physical_targets.items()}
        self._pending = [dict(start) for _ in range(self.unit.latency_steps)]
        self._goal = dict(start)
        self._output = dict(start)

    def command(self, goal: Mapping[str, float]) -> dict[str, float]:
        """Physical actuator targets for the arm-frame ``goal`` sent this period."""
        offsets = self.unit.zero_offset
        physical = {k: float(v) - offsets.get(k, 0.0) for k, v in goal.items()}
        if self.unit.latency_steps:
            self._pending.append(physical)
            physical = {**physical, **self._pending.pop(0)}
        out = {}
        for joint, value in physical.items():
            band = self.unit.dead_band_deg.get(joint, 0.0)
            held = self._goal.get(joint, value)
            goal_now = held if abs(value - held) < band else value
            self._goal[joint] = goal_now
            half = self.unit.backlash_deg.get(joint, 0.0) / 2.0
            shaft = self._output.get(joint, goal_now)
            # The play operator: the output moves only once the goal pushes past either side of the play.
            shaft = min(max(shaft, goal_now - half), goal_now + half)
            self._output[joint] = shaft
            out[joint] = shaft
        return out

    def report(self, physical: Mapping[str, float]) -> dict[str, float]:
        """What the arm reports for the physical joint positions (or targets): plus the zero offsets."""
        offsets = self.unit.zero_offset
        return {k: float(v) + offsets.get(k, 0.0) for k, v in physical.items()}


def units_table() -> str:
    """The markdown table of ``UNITS`` (the module docstring and docs/twin-units.md hold it)."""
    lines = [
        "| unit | seed | latency (periods) | backlash (deg) | dead band (deg) | zero offsets (deg; gripper 0..100) "
        "| camera front: shift (mm), turn (deg), fov (deg) | light | cube friction | table friction | cube mass |",
        "|---|---|---|---|---|---|---|---|---|---|---|",
    ]

    def spread(values: Mapping[str, float]) -> str:
        if not values:
            return "0"
        return f"{min(values.values()):.1f}-{max(values.values()):.1f}"

    for unit in UNITS.values():
        p = unit.perturbation
        offsets = " ".join(f"{unit.zero_offset[j]:+.1f}" for j in JOINT_NAMES) if unit.zero_offset else "0"
        if p.camera_offset_m:
            shift = 1000 * float(np.linalg.norm(p.camera_offset_m["front"]))
            turn = math.degrees(float(np.linalg.norm(p.camera_rotation["front"])))
            camera = f"{shift:.0f}, {turn:.1f}, {p.camera_fovy_deg['front']:+.1f}"
        else:
            camera = "0, 0, 0"
        lines.append(
            f"| {unit.name} | {unit.seed if unit.seed is not None else '-'} | {unit.latency_steps} | "
            f"{spread(unit.backlash_deg)} | {spread(unit.dead_band_deg)} | {offsets} | {camera} | "
            f"x{p.light_scale:.2f} | x{p.friction_scale:.2f} | x{unit.table_friction_scale:.2f} | "
            f"x{p.cube_mass_scale:.2f} |"
        )
    return "\n".join(lines)
