"""Domain randomisation of the SO-101 twin: per-episode perturbations of the scene and the robot.

Sim-to-real transfer (OpenAI's dexterous hand, DeXtreme) trains under randomised cameras, light, colours,
textures, dynamics, latency and sensor noise so that the real arm looks like one more draw. Here every
factor is a symmetric range around the nominal (calibrated) value (``Ranges``); ``draw`` turns ranges and a
generator into one episode's ``Perturbation``; ``Randomizer`` writes a perturbation into a compiled model
and restores the nominal values first, so perturbations never accumulate.

The texture of the table and the cube (``texture``) is the one factor that changes pixels of texture
images rather than numbers of the model: ``Randomizer.apply`` returns the textures it rewrote, and whoever
renders the model must upload them to each of its GL contexts (``SO101Sim.upload_textures``). The nominal
table and cube have no material at all, so the nominal twin renders exactly as before the factor existed.

Draws come from a generator seeded by the episode seed (``episode_generator``), so a run that resets
with explicit seeds (every vlmrl pipeline does) gets the same perturbations again, on ``--resume`` too.
The held-out grid of ``vlmrl evaluate`` draws magnitudes outside the training ranges
(``HELD_OUT_MAGNITUDE``) from its own seed stream.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from sim.config import RandomizeConfig, SimConfig
from sim.errors import SimError


@dataclass(frozen=True, kw_only=True)
class Ranges:
    """Resolved per-factor ranges (``RandomizeConfig`` with the preset applied); 0 turns a factor off."""

    camera_pos_m: float = 0.0
    camera_rot_deg: float = 0.0
    camera_fovy_deg: float = 0.0
    light_frac: float = 0.0
    color: float = 0.0
    texture: float = 0.0
    cube_mass_frac: float = 0.0
    cube_size_frac: float = 0.0
    friction_frac: float = 0.0
    joint_damping_frac: float = 0.0
    gripper_force_frac: float = 0.0
    max_latency_steps: int = 0
    joint_noise_deg: float = 0.0

    def active(self) -> bool:
        """Whether any factor perturbs anything."""
        return any(getattr(self, name) for name in FACTORS)

    def only(self, factor: str) -> Ranges:
        """These ranges with every factor but ``factor`` off (the per-factor rows of the evaluation)."""
        return Ranges(**{factor: getattr(self, factor)})


FACTORS: tuple[str, ...] = tuple(f.name for f in dataclasses.fields(Ranges))
"""Names of the randomised factors (the fields of ``Ranges`` and of ``RandomizeConfig``)."""

PRESETS: dict[str, Ranges] = {
    "none": Ranges(),
    "light": Ranges(
        camera_pos_m=0.01,
        camera_rot_deg=1.5,
        camera_fovy_deg=2.0,
        light_frac=0.15,
        color=0.04,
        texture=0.15,
        cube_mass_frac=0.2,
        cube_size_frac=0.05,
        friction_frac=0.2,
        joint_damping_frac=0.2,
        gripper_force_frac=0.1,
        max_latency_steps=1,
        joint_noise_deg=0.5,
    ),
    "medium": Ranges(
        camera_pos_m=0.02,
        camera_rot_deg=3.0,
        camera_fovy_deg=4.0,
        light_frac=0.25,
        color=0.08,
        texture=0.3,
        cube_mass_frac=0.4,
        cube_size_frac=0.1,
        friction_frac=0.3,
        joint_damping_frac=0.4,
        gripper_force_frac=0.2,
        max_latency_steps=2,
        joint_noise_deg=1.0,
    ),
    "strong": Ranges(
        camera_pos_m=0.04,
        camera_rot_deg=5.0,
        camera_fovy_deg=6.0,
        light_frac=0.4,
        color=0.12,
        texture=0.5,
        cube_mass_frac=0.6,
        cube_size_frac=0.15,
        friction_frac=0.5,
        joint_damping_frac=0.6,
        gripper_force_frac=0.3,
        max_latency_steps=2,
        joint_noise_deg=2.0,
    ),
}
"""Named presets. The real SO-101's front camera is placed by hand to about 1-2 cm and a few degrees;
STS3215 servos answer within one or two 20 Hz periods; their position readout has about 0.1-1 degree of
backlash and quantisation."""

MAX_LATENCY_STEPS = 2
"""Largest action latency the twin models, control periods."""
_FRACTION_FACTORS = ("light_frac", "cube_mass_frac", "cube_size_frac", "friction_frac", "joint_damping_frac")
"""Relative factors that would flip a sign or vanish at 1 or more."""

TRAINING_MAGNITUDE = (0.0, 1.0)
"""Training draws each factor's magnitude uniformly in [0, 1] x its range."""
HELD_OUT_MAGNITUDE = (1.0, 1.5)
"""The evaluation grid draws magnitudes in [1, 1.5] x the range, which training never samples (latency,
an integer capped at ``MAX_LATENCY_STEPS``, is held at its maximum instead)."""


CAMERA_FACTORS = ("camera_pos_m", "camera_rot_deg", "camera_fovy_deg")
"""The factors a calibration file's uncertainty can size, per camera."""
_CAMERA_LIMITS = {"camera_pos_m": 0.1, "camera_rot_deg": 30.0, "camera_fovy_deg": 20.0}
"""Largest camera ranges: the camera stays near its calibrated pose."""


@dataclass(frozen=True, kw_only=True)
class CameraUncertainty:
    """One standard deviation of a calibrated camera's pose and field of view (None: not calibrated)."""

    pos_m: float | None = None
    rot_deg: float | None = None
    fovy_deg: float | None = None

    def std(self, factor: str) -> float | None:
        """The standard deviation behind ``factor`` (one of ``CAMERA_FACTORS``)."""
        return {"camera_pos_m": self.pos_m, "camera_rot_deg": self.rot_deg, "camera_fovy_deg": self.fovy_deg}[
            factor
        ]


def camera_ranges(
    ranges: Ranges,
    randomize: RandomizeConfig,
    cameras: Sequence[str],
    uncertainty: Mapping[str, CameraUncertainty],
) -> dict[str, Ranges]:
    """Per camera, the ranges its draws use: ``ranges``, except that a camera factor which ``ranges``
    turns on, which ``randomize`` does not set explicitly, and whose calibration uncertainty is known is
    ``randomize.calibration_sigmas`` standard deviations wide (capped at the camera limits)."""
    sigmas = float(getattr(randomize, "calibration_sigmas", 0.0))
    if not math.isfinite(sigmas) or sigmas < 0:
        raise SimError(f"randomize.calibration_sigmas must be a finite number >= 0, got {sigmas}")
    out = {}
    for camera in cameras:
        known = uncertainty.get(camera, CameraUncertainty())
        sized: dict[str, Any] = {}
        for factor in CAMERA_FACTORS:
            std = known.std(factor)
            if (
                sigmas > 0
                and std is not None
                and getattr(ranges, factor)
                and getattr(randomize, factor) is None
            ):
                sized[factor] = min(sigmas * std, _CAMERA_LIMITS[factor])
        out[camera] = dataclasses.replace(ranges, **sized)
    return out


def resolve_ranges(cfg: SimConfig) -> Ranges:
    """The ranges ``cfg.randomize`` asks for; ``SimError`` (one line naming the field) for bad settings."""
    randomize = cfg.randomize
    if not isinstance(randomize, RandomizeConfig):
        raise SimError(f"randomize must be a RandomizeConfig, got {type(randomize).__name__}")
    if randomize.preset not in PRESETS:
        raise SimError(f"unknown randomize preset {randomize.preset!r}; expected one of {list(PRESETS)}")
    values = dataclasses.asdict(PRESETS[randomize.preset])
    for name in FACTORS:
        given = getattr(randomize, name)
        if given is None:
            continue
        if isinstance(given, bool) or not isinstance(given, int | float) or not math.isfinite(given):
            raise SimError(f"randomize.{name} must be a finite number, got {given!r}")
        if given < 0:
            raise SimError(
                f"randomize.{name} is a range around the nominal value: expected >= 0, got {given}"
            )
        values[name] = given
    if int(values["max_latency_steps"]) != values["max_latency_steps"]:
        raise SimError(
            f"randomize.max_latency_steps must be a whole number, got {values['max_latency_steps']}"
        )
    if values["max_latency_steps"] > MAX_LATENCY_STEPS:
        raise SimError(
            f"randomize.max_latency_steps must be at most {MAX_LATENCY_STEPS} control periods, "
            f"got {values['max_latency_steps']}"
        )
    for name in (*_FRACTION_FACTORS, "gripper_force_frac"):
        # The held-out grid goes up to 1.5x the range: keep every scale positive there too.
        if values[name] * HELD_OUT_MAGNITUDE[1] >= 1.0:
            raise SimError(
                f"randomize.{name} must be below {1 / HELD_OUT_MAGNITUDE[1]:.3f}, got {values[name]}"
            )
    if values["texture"] > 1.0:
        raise SimError(
            f"randomize.texture must be at most 1 (1: the darkest texels take the tint), got {values['texture']}"
        )
    if values["color"] > 0.5:
        raise SimError(f"randomize.color must be at most 0.5 (RGB channels are 0..1), got {values['color']}")
    if any(values[name] > limit for name, limit in _CAMERA_LIMITS.items()):
        raise SimError(
            "randomize camera ranges must stay near the calibrated camera: camera_rot_deg <= 30, "
            f"camera_fovy_deg <= 20, camera_pos_m <= 0.1 (got {values['camera_rot_deg']}, "
            f"{values['camera_fovy_deg']}, {values['camera_pos_m']})"
        )
    values["max_latency_steps"] = int(values["max_latency_steps"])
    ranges = Ranges(**values)
    if ranges.active() and cfg.suite != "so101":
        raise SimError(
            f"randomize is supported by the so101 suite only, not {cfg.suite!r} (use preset 'none')"
        )
    return ranges


@dataclass(frozen=True)
class Perturbation:
    """One episode's draw; every field at its default is the nominal twin."""

    camera_offset_m: dict[str, tuple[float, ...]] = dataclasses.field(default_factory=dict)
    """Camera name -> position offset (in its parent body's frame), metres."""
    camera_rotation: dict[str, tuple[float, ...]] = dataclasses.field(default_factory=dict)
    """Camera name -> rotation vector (axis x angle, radians) applied in the camera's own frame."""
    camera_fovy_deg: dict[str, float] = dataclasses.field(default_factory=dict)
    """Camera name -> field-of-view change, degrees."""
    light_scale: float = 1.0
    cube_rgb_delta: tuple[float, float, float] = (0.0, 0.0, 0.0)
    table_rgb_delta: tuple[float, float, float] = (0.0, 0.0, 0.0)
    texture_contrast: float = 0.0
    """Strength of the texture pattern of the table and the cube in [0, 1]; 0: no texture (nominal). The
    texture multiplies their colours by ``1 - contrast x pattern x (1 - tint)``; each cube face shows the
    table's whole tile."""
    texture_mix: tuple[float, float, float] = (0.0, 0.0, 0.0)
    """Weights of the checker, stripe and smooth-noise patterns (they sum to 1)."""
    texture_checker_cells: int = 0
    """Checker squares along one side of the texture tile (``sim.so101.scene.TABLE_TEXTURE_TILE_M``), even."""
    texture_stripe_waves: tuple[int, int] = (0, 0)
    """Stripe pairs across the tile along x and y (whole numbers: the tile repeats seamlessly)."""
    texture_noise_cells: int = 0
    """Highest spatial frequency of the smooth noise, waves per tile."""
    texture_noise_seed: int = 0
    texture_tint: tuple[float, float, float] = (1.0, 1.0, 1.0)
    """RGB the pattern darkens the table's colour towards (0..1)."""
    cube_mass_scale: float = 1.0
    cube_size_scale: float = 1.0
    friction_scale: float = 1.0
    joint_damping_scale: float = 1.0
    gripper_force_scale: float = 1.0
    latency_steps: int = 0
    joint_noise_std: float = 0.0
    """Standard deviation of the joint observation noise (degrees; gripper units for the gripper)."""


_TEXTURE_TINT_MAX = 0.6
"""Tint channels are drawn in [0, this]: far enough from white that the pattern shows at any hue."""


def _draw_texture(ranges: Ranges, rng: np.random.Generator, low: float, high: float) -> dict[str, Any]:
    """The texture fields of a ``Perturbation`` (none when the factor is off)."""
    contrast = min(rng.uniform(low, high) * ranges.texture, 1.0)
    mix = rng.dirichlet((1.0, 1.0, 1.0))
    checker = 2 * int(rng.integers(1, 5))  # even: the repeated tile continues the checker board
    stripes = (int(rng.integers(-6, 7)), int(rng.integers(1, 7)))
    noise = int(rng.integers(2, 9))
    seed = int(rng.integers(2**31))
    tint = rng.uniform(0.0, _TEXTURE_TINT_MAX, size=3)
    if contrast <= 0:
        return {}
    return {
        "texture_contrast": float(contrast),
        "texture_mix": tuple(float(x) for x in mix),
        "texture_checker_cells": checker,
        "texture_stripe_waves": stripes,
        "texture_noise_cells": noise,
        "texture_noise_seed": seed,
        "texture_tint": tuple(float(x) for x in tint),
    }


def texture_image(p: Perturbation, size_px: int) -> np.ndarray:
    """uint8[size_px, size_px, 3] texels of ``p``'s texture: one tile, periodic, so it repeats
    seamlessly; all white (255) when ``p.texture_contrast`` is 0."""
    u = (np.arange(size_px) + 0.5) / size_px  # texel centres, in tiles
    cells = np.floor(u * p.texture_checker_cells)
    checker = (cells[:, None] + cells[None, :]) % 2
    kx, ky = p.texture_stripe_waves
    stripes = np.floor(2 * (kx * u[None, :] + ky * u[:, None])) % 2
    # Smooth noise: white noise low-passed in the frequency domain, periodic over the tile by construction.
    white = np.random.default_rng(p.texture_noise_seed).normal(size=(size_px, size_px))
    freq = np.fft.fftfreq(size_px, 1.0 / size_px)
    keep = np.hypot(freq[:, None], freq[None, :]) <= p.texture_noise_cells
    noise = np.real(np.fft.ifft2(np.fft.fft2(white) * keep))
    noise = (noise - noise.min()) / max(float(np.ptp(noise)), 1e-12)
    w = p.texture_mix
    pattern = w[0] * checker + w[1] * stripes + w[2] * noise
    shade = 1.0 - p.texture_contrast * pattern[..., None] * (1.0 - np.asarray(p.texture_tint))
    return np.round(255 * np.clip(shade, 0.0, 1.0)).astype(np.uint8)


_TEXTURE_FIELDS = tuple(f.name for f in dataclasses.fields(Perturbation) if f.name.startswith("texture_"))


def _same_texture(a: Perturbation, b: Perturbation) -> bool:
    return all(getattr(a, name) == getattr(b, name) for name in _TEXTURE_FIELDS)


def episode_generator(episode_key: int, salt: int) -> np.random.Generator:
    """The generator of one episode's perturbation and per-step noise, from a key the env draws from its
    seeded generator and the config's ``seed_salt``."""
    return np.random.default_rng([int(salt) & 0xFFFFFFFF, int(episode_key)])


def draw(
    ranges: Ranges,
    rng: np.random.Generator,
    cameras: Sequence[str],
    magnitude: tuple[float, float] = TRAINING_MAGNITUDE,
    per_camera: Mapping[str, Ranges] | None = None,
) -> Perturbation:
    """One perturbation: each factor's size is uniform in ``magnitude`` x its range, with a random sign
    (or direction); the same number of draws whatever the ranges, so one factor's draw does not depend on
    which others are on. ``per_camera`` (``camera_ranges``) gives a camera ranges of its own."""
    low, high = magnitude

    def signed(scale: float) -> float:
        size = rng.uniform(low, high) * scale
        return float(size if rng.random() < 0.5 else -size)

    def vector(scale: float) -> tuple[float, ...]:
        v = rng.normal(size=3)
        v *= rng.uniform(low, high) * scale / max(float(np.linalg.norm(v)), 1e-12)
        return tuple(float(x) for x in v)  # plain floats: perturbations compare with ==

    offsets, rotations, fovy = {}, {}, {}
    for camera in cameras:
        own = (per_camera or {}).get(camera, ranges)
        offsets[camera] = vector(own.camera_pos_m)
        rotations[camera] = vector(math.radians(own.camera_rot_deg))
        fovy[camera] = signed(own.camera_fovy_deg)
    light = 1.0 + signed(ranges.light_frac)
    cube_rgb = tuple(signed(ranges.color) for _ in range(3))
    table_rgb = tuple(signed(ranges.color) for _ in range(3))
    mass = 1.0 + signed(ranges.cube_mass_frac)
    size = 1.0 + signed(ranges.cube_size_frac)
    friction = 1.0 + signed(ranges.friction_frac)
    damping = 1.0 + signed(ranges.joint_damping_frac)
    force = 1.0 + signed(ranges.gripper_force_frac)
    latency_draw = int(rng.integers(0, ranges.max_latency_steps + 1))
    # Held out: the most latency; a curriculum's cap below 1 (``high``) shortens the drawn one alike.
    latency = ranges.max_latency_steps if low >= 1.0 else round(latency_draw * min(high, 1.0))
    noise = rng.uniform(low, high) * ranges.joint_noise_deg
    # The texture draws from a child generator: ``rng``'s stream (the other factors, and the per-step
    # joint noise the env draws from it next) stays what it was before the texture factor existed.
    texture = _draw_texture(ranges, rng.spawn(1)[0], low, high)
    return Perturbation(
        camera_offset_m=offsets,
        camera_rotation=rotations,
        camera_fovy_deg=fovy,
        light_scale=light,
        cube_rgb_delta=cube_rgb,  # type: ignore[arg-type]
        table_rgb_delta=table_rgb,  # type: ignore[arg-type]
        cube_mass_scale=mass,
        cube_size_scale=size,
        friction_scale=friction,
        joint_damping_scale=damping,
        gripper_force_scale=force,
        latency_steps=latency,
        joint_noise_std=noise,
        **texture,
    )


class Randomizer:
    """Writes perturbations into the twin's compiled model; keeps the nominal values to restore them.

    Create it after the cameras are calibrated (``apply_camera_calibration``): those poses are nominal.
    """

    def __init__(self, model: Any, cameras: Sequence[str]) -> None:
        # MuJoCo is imported here, not with the module: sim.factory imports this module before it picks
        # the GL backend, which MuJoCo reads once, when first imported.
        import mujoco

        self._mujoco = mujoco
        self.model = model
        self.cameras = tuple(cameras)
        self._cam = {c: int(model.camera(c).id) for c in self.cameras}
        self._cube_body = int(model.body("cube").id)
        self._cube_geom = int(model.geom("cube").id)
        self._table_geom = int(model.geom("table").id)
        self._textured = {  # geom -> (material, texture)
            self._table_geom: (int(model.material("table").id), int(model.texture("table").id)),
            self._cube_geom: (int(model.material("cube").id), int(model.texture("cube").id)),
        }
        self._texture_drawn: Perturbation | None = None
        """The perturbation whose texture the texels hold now (None: the model's own, all white)."""
        fingers = [int(model.body(n).id) for n in ("finger_left", "finger_right")]
        self._finger_geoms = [g for g in range(model.ngeom) if int(model.geom_bodyid[g]) in fingers]
        arm_joints = ("shoulder_pan", "shoulder_lift", "elbow_flex", "wrist_flex", "wrist_roll")
        self._arm_dofs = [int(model.joint(n).dofadr[0]) for n in arm_joints]
        self._gripper_actuator = int(model.actuator("gripper").id)
        self._nominal = {
            "cam_pos": model.cam_pos.copy(),
            "cam_quat": model.cam_quat.copy(),
            "cam_fovy": model.cam_fovy.copy(),
            "cam_intrinsic": model.cam_intrinsic.copy(),
            "light_diffuse": model.light_diffuse.copy(),
            "light_ambient": model.light_ambient.copy(),
            "headlight_ambient": model.vis.headlight.ambient.copy(),
            "headlight_diffuse": model.vis.headlight.diffuse.copy(),
            "geom_rgba": model.geom_rgba.copy(),
            "geom_matid": model.geom_matid.copy(),
            "geom_size": model.geom_size.copy(),
            "geom_rbound": model.geom_rbound.copy(),
            "geom_aabb": model.geom_aabb.copy(),
            "geom_friction": model.geom_friction.copy(),
            "body_mass": model.body_mass.copy(),
            "body_inertia": model.body_inertia.copy(),
            "dof_damping": model.dof_damping.copy(),
            "actuator_forcerange": model.actuator_forcerange.copy(),
        }

    @property
    def nominal_cube_half_m(self) -> float:
        """The cube's nominal half side."""
        return float(self._nominal["geom_size"][self._cube_geom][0])

    def apply(self, p: Perturbation, data: Any) -> tuple[int, ...]:
        """Restore the nominal model, write ``p`` into it and recompute ``data``'s derived quantities.

        Returns:
            The ids of the textures whose texels changed: upload them to every GL context that renders
            this model (``SO101Sim.upload_textures``), or frames keep the previous texture.
        """
        m, n, mujoco = self.model, self._nominal, self._mujoco
        m.cam_pos[:] = n["cam_pos"]
        m.cam_quat[:] = n["cam_quat"]
        m.cam_fovy[:] = n["cam_fovy"]
        m.cam_intrinsic[:] = n["cam_intrinsic"]
        for camera, cam in self._cam.items():
            m.cam_pos[cam] = n["cam_pos"][cam] + np.asarray(p.camera_offset_m.get(camera, (0.0, 0.0, 0.0)))
            rotvec = np.asarray(p.camera_rotation.get(camera, (0.0, 0.0, 0.0)))
            angle = float(np.linalg.norm(rotvec))
            if angle > 0:
                dq = np.zeros(4)
                mujoco.mju_axisAngle2Quat(dq, rotvec / angle, angle)
                quat = np.zeros(4)
                mujoco.mju_mulQuat(quat, n["cam_quat"][cam], dq)
                m.cam_quat[cam] = quat
            dfovy = p.camera_fovy_deg.get(camera, 0.0)
            if dfovy:
                fovy = float(n["cam_fovy"][cam])
                new = min(max(fovy + dfovy, 5.0), 170.0)
                m.cam_fovy[cam] = new
                # A camera with a sensor size (a calibrated one) renders from its focal lengths, not fovy.
                m.cam_intrinsic[cam][:2] = n["cam_intrinsic"][cam][:2] * (
                    math.tan(math.radians(fovy) / 2) / math.tan(math.radians(new) / 2)
                )
        m.light_diffuse[:] = np.clip(n["light_diffuse"] * p.light_scale, 0.0, 1.0)
        m.light_ambient[:] = np.clip(n["light_ambient"] * p.light_scale, 0.0, 1.0)
        m.vis.headlight.ambient[:] = np.clip(n["headlight_ambient"] * p.light_scale, 0.0, 1.0)
        m.vis.headlight.diffuse[:] = np.clip(n["headlight_diffuse"] * p.light_scale, 0.0, 1.0)
        m.geom_rgba[:] = n["geom_rgba"]
        m.geom_rgba[self._cube_geom][:3] = np.clip(
            n["geom_rgba"][self._cube_geom][:3] + p.cube_rgb_delta, 0, 1
        )
        m.geom_rgba[self._table_geom][:3] = np.clip(
            n["geom_rgba"][self._table_geom][:3] + p.table_rgb_delta, 0, 1
        )
        changed = self._apply_texture(p)
        cube, body = self._cube_geom, self._cube_body
        m.geom_size[:] = n["geom_size"]
        m.geom_rbound[:] = n["geom_rbound"]
        m.geom_aabb[:] = n["geom_aabb"]
        m.geom_size[cube] = n["geom_size"][cube] * p.cube_size_scale
        m.geom_rbound[cube] = n["geom_rbound"][cube] * p.cube_size_scale
        m.geom_aabb[cube][3:] = n["geom_aabb"][cube][3:] * p.cube_size_scale  # half extents
        m.body_mass[:] = n["body_mass"]
        m.body_inertia[:] = n["body_inertia"]
        m.body_mass[body] = n["body_mass"][body] * p.cube_mass_scale
        # A solid box's inertia scales with mass x side^2.
        m.body_inertia[body] = n["body_inertia"][body] * p.cube_mass_scale * p.cube_size_scale**2
        m.geom_friction[:] = n["geom_friction"]
        for geom in (cube, *self._finger_geoms):
            m.geom_friction[geom][0] = n["geom_friction"][geom][0] * p.friction_scale
        m.dof_damping[:] = n["dof_damping"]
        m.dof_damping[self._arm_dofs] = n["dof_damping"][self._arm_dofs] * p.joint_damping_scale
        m.actuator_forcerange[:] = n["actuator_forcerange"]
        m.actuator_forcerange[self._gripper_actuator] = (
            n["actuator_forcerange"][self._gripper_actuator] * p.gripper_force_scale
        )
        mujoco.mj_forward(m, data)
        return changed

    def _apply_texture(self, p: Perturbation) -> tuple[int, ...]:
        m = self.model
        m.geom_matid[:] = self._nominal["geom_matid"]
        if p.texture_contrast <= 0:
            return ()  # table and cube render without a material, as in the nominal twin
        for geom, (material, _) in self._textured.items():
            m.geom_matid[geom] = material
        if self._texture_drawn is not None and _same_texture(self._texture_drawn, p):
            return ()
        for _, tex in self._textured.values():
            # RGB, square; a cube texture stacks its 6 faces (sim.so101.scene): each face gets the tile.
            texels = texture_image(p, int(m.tex_width[tex]))
            faces = int(m.tex_height[tex]) // int(m.tex_width[tex])
            start = int(m.tex_adr[tex])
            m.tex_data[start : start + faces * texels.size] = np.tile(texels.ravel(), faces)
        self._texture_drawn = p
        return tuple(tex for _, tex in self._textured.values())
