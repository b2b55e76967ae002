"""The SO-101 twin as a plain MuJoCo simulation (no gymnasium): joint targets in, joints and frames out."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence

import numpy as np

from robot.contract import JOINT_NAMES
from sim.errors import SimError
from sim.rendering import FrameRenderer, prepare_gl_backend
from sim.so101 import geometry as g
from sim.so101.scene import PARKED_POS, build_scene_xml

prepare_gl_backend()  # MuJoCo reads MUJOCO_GL once, when first imported: choose EGL/OSMesa before that.

import mujoco  # noqa: E402

CAMERAS: tuple[str, ...] = ("front", "wrist")
"""Cameras of the twin: a fixed one facing the arm and one on the gripper."""


def joint_limits() -> dict[str, tuple[float, float]]:
    """LeRobot-unit range of every joint (degrees for the arm, 0..100 for the gripper)."""
    return {**g.ARM_LIMITS_DEG, "gripper": g.GRIPPER_RANGE}


def _to_sim(name: str, value: float) -> float:
    if name == "gripper":
        return value / 100.0 * g.FINGER_TRAVEL_M
    return math.radians(value)


def _from_sim(name: str, value: float) -> float:
    if name == "gripper":
        return value / g.FINGER_TRAVEL_M * 100.0
    return math.degrees(value)


class SO101Sim:
    """Our SO-101-like arm on a table with a cube, a target marker, a zone and a bin.

    Joint values are in LeRobot units (SO101Follower, ``use_degrees=True``): degrees for the five arm
    joints, 0 (closed) .. 100 (open) for the gripper. Keys may carry LeRobot's ``.pos`` suffix.
    Position actuators track the targets; gravity is compensated like a stiff servo.
    """

    def __init__(self, max_image_size: int = 640, shadows: bool = False, antialias: bool = False) -> None:
        self.model = mujoco.MjModel.from_xml_string(build_scene_xml(max_image_size))
        self.data = mujoco.MjData(self.model)
        self._shadows = shadows
        self._antialias = antialias
        self._qpos = {n: int(self.model.joint(n).qposadr[0]) for n in JOINT_NAMES}
        self._mirror_qpos = int(self.model.joint("gripper_mirror").qposadr[0])
        self._ctrl = {n: int(self.model.actuator(n).id) for n in JOINT_NAMES}
        self._limits = joint_limits()
        self._tcp = int(self.model.site("tcp").id)
        self._cube_body = int(self.model.body("cube").id)
        self._cube_qpos = int(self.model.joint("cube").qposadr[0])
        self._cube_qvel = int(self.model.joint("cube").dofadr[0])
        self._renderers: dict[int, FrameRenderer] = {}
        self.reset()

    @property
    def timestep_s(self) -> float:
        """Physics step length."""
        return float(self.model.opt.timestep)

    def reset(self) -> None:
        """Zero pose, gripper open, objects parked."""
        mujoco.mj_resetData(self.model, self.data)
        self.set_joint_positions({"gripper": 100.0})
        self.park_cube()

    def clip_targets(self, targets: Mapping[str, float]) -> dict[str, float]:
        """``targets`` (LeRobot units, keys with or without ``.pos``) within the joint ranges, keys without
        ``.pos``; SimError for an unknown joint or a value that is not finite."""
        clipped = {}
        for key, value in targets.items():
            name = key.removesuffix(".pos")
            if name not in self._limits:
                raise SimError(f"unknown SO-101 joint {key!r}; expected one of {list(JOINT_NAMES)}")
            if not math.isfinite(value):
                raise SimError(f"joint target {key!r} is {value}; targets must be finite")
            low, high = self._limits[name]
            clipped[name] = min(max(float(value), low), high)
        return clipped

    def set_joint_targets(self, targets: Mapping[str, float]) -> dict[str, float]:
        """Command position targets (LeRobot units, clipped to the joint ranges); returns what was sent."""
        clipped = self.clip_targets(targets)
        for name, value in clipped.items():
            self.data.ctrl[self._ctrl[name]] = _to_sim(name, value)
        return clipped

    def joint_targets(self) -> dict[str, float]:
        """The current position targets, LeRobot units."""
        return {n: _from_sim(n, float(self.data.ctrl[self._ctrl[n]])) for n in JOINT_NAMES}

    def set_joint_positions(self, joints: Mapping[str, float]) -> None:
        """Teleport joints (and their targets) to ``joints``, LeRobot units; velocities zeroed."""
        clipped = self.clip_targets(joints)
        for name, value in clipped.items():
            self.data.qpos[self._qpos[name]] = _to_sim(name, value)
            if name == "gripper":
                self.data.qpos[self._mirror_qpos] = _to_sim(name, value)
        self.set_joint_targets(clipped)
        self.data.qvel[:] = 0.0
        mujoco.mj_forward(self.model, self.data)

    def step(self, n_substeps: int = 1) -> None:
        """Advance the physics by ``n_substeps`` timesteps."""
        mujoco.mj_step(self.model, self.data, nstep=n_substeps)

    def joint_positions(self) -> dict[str, float]:
        """Measured joint positions, LeRobot units (within the joint ranges)."""
        out = {}
        for name in JOINT_NAMES:
            low, high = self._limits[name]
            out[name] = min(max(_from_sim(name, float(self.data.qpos[self._qpos[name]])), low), high)
        return out

    def tcp_position(self) -> np.ndarray:
        """Tool centre point (between the finger pads), metres, world = robot base frame."""
        return self.data.site_xpos[self._tcp].copy()

    def cube_position(self) -> np.ndarray:
        """Cube centre, metres."""
        return self.data.xpos[self._cube_body].copy()

    def cube_yaw_rad(self) -> float:
        """Cube heading about the vertical axis."""
        w, x, y, z = self.data.xquat[self._cube_body]
        return math.atan2(2 * (w * z + x * y), 1 - 2 * (y * y + z * z))

    def park_cube(self) -> None:
        """Hide the cube under the table for tasks without it: no contacts, no gravity, at rest."""
        self._set_cube_active(False)
        self._place_cube(np.array(PARKED_POS), 0.0)

    def _set_cube_active(self, active: bool) -> None:
        geom = self.model.body_geomadr[self._cube_body]
        self.model.geom_contype[geom] = self.model.geom_conaffinity[geom] = int(active)
        self.model.body_gravcomp[self._cube_body] = 0.0 if active else 1.0

    def set_cube_pose(self, xyz: np.ndarray, yaw_rad: float) -> None:
        """Teleport the cube (at rest, colliding) to ``xyz`` with heading ``yaw_rad``."""
        self._set_cube_active(True)
        self._place_cube(xyz, yaw_rad)

    def _place_cube(self, xyz: np.ndarray, yaw_rad: float) -> None:
        adr = self._cube_qpos
        self.data.qpos[adr : adr + 3] = xyz
        self.data.qpos[adr + 3 : adr + 7] = [math.cos(yaw_rad / 2), 0.0, 0.0, math.sin(yaw_rad / 2)]
        self.data.qvel[self._cube_qvel : self._cube_qvel + 6] = 0.0
        mujoco.mj_forward(self.model, self.data)

    def set_marker(self, name: str, xyz: np.ndarray) -> None:
        """Place a static object: "target" (reach marker), "zone" (push goal) or "bin" (place goal)."""
        mocap = int(self.model.body(name).mocapid[0])
        self.data.mocap_pos[mocap] = xyz
        mujoco.mj_forward(self.model, self.data)

    def fingers_touch_cube(self) -> tuple[bool, bool]:
        """Whether the left and right finger pads are in contact with the cube."""
        left = right = False
        cube_geom = self.model.body_geomadr[self._cube_body]
        fl = self.model.body("finger_left").id
        fr = self.model.body("finger_right").id
        for i in range(self.data.ncon):
            contact = self.data.contact[i]
            pair = (int(contact.geom1), int(contact.geom2))
            if cube_geom not in pair:
                continue
            other = pair[1] if pair[0] == cube_geom else pair[0]
            body = int(self.model.geom_bodyid[other])
            left |= body == fl
            right |= body == fr
        return left, right

    def render(self, camera: str, size: int) -> np.ndarray:
        """uint8[size, size, 3] frame from ``camera`` ("front" or "wrist"), row 0 at the top."""
        if camera not in CAMERAS:
            raise SimError(f"unknown SO-101 camera {camera!r}; expected one of {list(CAMERAS)}")
        renderer = self._renderers.get(size)
        if renderer is None:
            if size > self.model.vis.global_.offwidth:
                raise SimError(
                    f"image size {size} exceeds this sim's framebuffer ({self.model.vis.global_.offwidth})"
                )
            renderer = self._renderers[size] = FrameRenderer(self.model, size, self._shadows, self._antialias)
            # Every renderer samples the (randomised) textures alike: a late one renders the same frames.
            for texture_id in range(self.model.ntex):
                renderer.upload_texture(texture_id)
        return renderer.render(self.data, camera)

    def upload_textures(self, texture_ids: Sequence[int]) -> None:
        """Send changed texels (``model.tex_data``) to every renderer; renderers made later read them."""
        for renderer in self._renderers.values():
            for texture_id in texture_ids:
                renderer.upload_texture(texture_id)

    def close(self) -> None:
        """Free the renderers."""
        for renderer in self._renderers.values():
            renderer.close()
        self._renderers.clear()
