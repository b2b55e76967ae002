"""MJCF of the SO-101 twin scene, built from primitives: table, arm, cube, target marker, zone and bin.

Generated from ``geometry`` so the MuJoCo model and the closed-form kinematics share one set of numbers.
"""

from __future__ import annotations

import math

import numpy as np

from sim.so101 import geometry as g

FRONT_CAMERA_POS = (0.48, 0.0, 0.36)
FRONT_CAMERA_LOOKAT = (0.15, 0.0, 0.05)
PARKED_POS = (0.0, 0.0, -0.5)
"""Where objects a task does not use are parked: under the table, hidden by it from every camera (the
parked cube has its contacts off and gravity compensated, so it stays put)."""
BIN_INNER_HALF_M = 0.045
BIN_WALL_HEIGHT_M = 0.03
ZONE_RADIUS_M = 0.035
TABLE_TEXTURE_PX = 128
"""Side of the table's texture image (``sim.randomization`` draws it per episode), texels."""
TABLE_TEXTURE_TILE_M = 0.32
"""Side of the table area one texture image covers; the image repeats across the table."""
CUBE_TEXTURE_PX = 32
"""Side of each face of the cube's texture, texels: every face shows the whole pattern tile, 10x smaller."""


def _xyaxes(pos: tuple[float, ...], lookat: tuple[float, ...], up: tuple[float, ...] = (0, 0, 1)) -> str:
    """MuJoCo camera ``xyaxes`` for a camera at ``pos`` looking at ``lookat`` (cameras look along -z)."""
    forward = np.subtract(lookat, pos)
    forward = forward / np.linalg.norm(forward)
    right = np.cross(forward, up)
    right = right / np.linalg.norm(right)
    cam_up = np.cross(right, forward)
    return " ".join(f"{v:.6f}" for v in (*right, *cam_up))


def _range(name: str) -> str:
    low, high = g.ARM_LIMITS_DEG[name]
    return f"{math.radians(low):.6f} {math.radians(high):.6f}"


def build_scene_xml(max_image_size: int = 640) -> str:
    """The scene as an MJCF string; ``max_image_size`` sizes the offscreen framebuffer."""
    size = max(int(max_image_size), 64)
    finger_y = g.FINGER_GAP_CLOSED_M / 2 + 0.004
    tcp_x = g.TOOL_M - g.WRIST_TO_ROLL_M
    wall = BIN_INNER_HALF_M + 0.004
    wall_z = BIN_WALL_HEIGHT_M / 2
    return f"""
<mujoco model="so101_twin">
  <compiler angle="radian" autolimits="true"/>
  <option timestep="0.004" integrator="implicitfast" impratio="5" cone="elliptic"/>
  <visual>
    <global offwidth="{size}" offheight="{size}"/>
    <!-- coarser tessellation than the default 28x16: 15% cheaper software rendering, invisible at 128 px -->
    <quality shadowsize="1024" numslices="12" numstacks="8"/>
    <map znear="0.01" zfar="10"/>
    <headlight ambient="0.35 0.35 0.35" diffuse="0.45 0.45 0.45"/>
  </visual>
  <asset>
    <!-- Unused by the nominal twin (table and cube have no material, so its frames stay as they were):
         texture randomisation gives them these materials and writes the textures' texels per episode. -->
    <texture name="table" type="2d" builtin="flat" rgb1="1 1 1" width="{TABLE_TEXTURE_PX}"
             height="{TABLE_TEXTURE_PX}"/>
    <material name="table" texture="table" texuniform="true"
              texrepeat="{1 / TABLE_TEXTURE_TILE_M:.6f} {1 / TABLE_TEXTURE_TILE_M:.6f}"/>
    <texture name="cube" type="cube" builtin="flat" rgb1="1 1 1" width="{CUBE_TEXTURE_PX}"
             height="{CUBE_TEXTURE_PX}"/>
    <material name="cube" texture="cube"/>
  </asset>
  <default>
    <joint damping="0.6" armature="0.01"/>
    <geom friction="1.2 0.01 0.001" solref="0.005 1"/>
    <default class="arm">
      <geom contype="2" conaffinity="1" rgba="0.95 0.95 0.92 1" density="600"/>
    </default>
    <default class="marker">
      <geom contype="0" conaffinity="0" density="0"/>
    </default>
    <position kp="30" forcerange="-6 6"/>
  </default>
  <worldbody>
    <light name="sun" pos="0.2 0.3 1.2" dir="-0.1 -0.2 -1" directional="true" diffuse="0.6 0.6 0.6"/>
    <geom name="table" type="plane" size="0.7 0.7 0.01" rgba="0.62 0.52 0.40 1"/>
    <camera name="front" pos="{" ".join(map(str, FRONT_CAMERA_POS))}" fovy="42"
            xyaxes="{_xyaxes(FRONT_CAMERA_POS, FRONT_CAMERA_LOOKAT)}"/>
    <body name="base">
      <geom class="arm" type="cylinder" size="0.045 0.02" pos="0 0 0.02" rgba="0.15 0.15 0.15 1"/>
      <body name="shoulder" gravcomp="1" pos="0 0 0.04">
        <joint name="shoulder_pan" axis="0 0 1" range="{_range("shoulder_pan")}"/>
        <geom class="arm" type="box" size="0.025 0.03 {(g.SHOULDER_HEIGHT_M - 0.04) / 2:.4f}"
              pos="0 0 {(g.SHOULDER_HEIGHT_M - 0.04) / 2:.4f}"/>
        <body name="upper_arm" gravcomp="1" pos="0 0 {g.SHOULDER_HEIGHT_M - 0.04:.4f}">
          <joint name="shoulder_lift" axis="0 1 0" range="{_range("shoulder_lift")}"/>
          <geom class="arm" type="capsule" fromto="0 0 0 0 0 {g.UPPER_ARM_M}" size="0.017"/>
          <body name="forearm" gravcomp="1" pos="0 0 {g.UPPER_ARM_M}">
            <joint name="elbow_flex" axis="0 1 0" range="{_range("elbow_flex")}"/>
            <geom class="arm" type="capsule" fromto="0 0 0 {g.FOREARM_M} 0 0" size="0.014"/>
            <body name="wrist" gravcomp="1" pos="{g.FOREARM_M} 0 0">
              <joint name="wrist_flex" axis="0 1 0" range="{_range("wrist_flex")}"/>
              <geom class="arm" type="box" size="{g.WRIST_TO_ROLL_M / 2} 0.016 0.014"
                    pos="{g.WRIST_TO_ROLL_M / 2} 0 0" rgba="0.15 0.15 0.15 1"/>
              <body name="gripper" gravcomp="1" pos="{g.WRIST_TO_ROLL_M} 0 0">
                <joint name="wrist_roll" axis="1 0 0" range="{_range("wrist_roll")}"/>
                <geom class="arm" type="box" size="0.018 0.03 0.012" pos="0.018 0 0"/>
                <camera name="wrist" pos="0.03 0 0.03" fovy="75"
                        xyaxes="{_xyaxes((0.03, 0.0, 0.03), (tcp_x + 0.06, 0.0, -0.01))}"/>
                <site name="tcp" pos="{tcp_x} 0 0" size="0.004" rgba="1 0 0 0"/>
                <body name="finger_left" gravcomp="1" pos="{tcp_x - 0.008} {finger_y} 0">
                  <joint name="gripper" type="slide" axis="0 1 0" range="0 {g.FINGER_TRAVEL_M}" damping="2"/>
                  <geom class="arm" type="box" size="0.026 0.004 0.011" rgba="0.9 0.35 0.1 1"
                        friction="2 0.02 0.002"/>
                </body>
                <body name="finger_right" gravcomp="1" pos="{tcp_x - 0.008} {-finger_y} 0">
                  <joint name="gripper_mirror" type="slide" axis="0 -1 0" range="0 {g.FINGER_TRAVEL_M}"
                         damping="2"/>
                  <geom class="arm" type="box" size="0.026 0.004 0.011" rgba="0.9 0.35 0.1 1"
                        friction="2 0.02 0.002"/>
                </body>
              </body>
            </body>
          </body>
        </body>
      </body>
    </body>
    <body name="cube" pos="0.2 0 {g.CUBE_HALF_M}">
      <freejoint name="cube"/>
      <geom name="cube" type="box" size="{g.CUBE_HALF_M} {g.CUBE_HALF_M} {g.CUBE_HALF_M}" mass="0.02"
            rgba="0.85 0.1 0.1 1" friction="1.5 0.01 0.001"/>
    </body>
    <body name="target" mocap="true" pos="0 0.1 -0.5">
      <geom class="marker" type="sphere" size="0.012" rgba="0.1 0.8 0.2 0.8"/>
    </body>
    <body name="zone" mocap="true" pos="0 0.2 -0.5">
      <geom class="marker" type="cylinder" size="{ZONE_RADIUS_M} 0.001" pos="0 0 0.001" rgba="0.1 0.5 0.9 1"/>
    </body>
    <body name="bin" mocap="true" pos="0 0.3 -0.5">
      <geom type="box" size="{wall} 0.004 {wall_z}" pos="0 {wall} {wall_z}" rgba="0.2 0.3 0.8 1"/>
      <geom type="box" size="{wall} 0.004 {wall_z}" pos="0 {-wall} {wall_z}" rgba="0.2 0.3 0.8 1"/>
      <geom type="box" size="0.004 {wall} {wall_z}" pos="{wall} 0 {wall_z}" rgba="0.2 0.3 0.8 1"/>
      <geom type="box" size="0.004 {wall} {wall_z}" pos="{-wall} 0 {wall_z}" rgba="0.2 0.3 0.8 1"/>
    </body>
  </worldbody>
  <equality>
    <joint joint1="gripper_mirror" joint2="gripper" polycoef="0 1 0 0 0" solref="0.005 1"/>
  </equality>
  <actuator>
    <position name="shoulder_pan" joint="shoulder_pan" kp="40"/>
    <position name="shoulder_lift" joint="shoulder_lift" kp="60" forcerange="-10 10"/>
    <position name="elbow_flex" joint="elbow_flex" kp="40"/>
    <position name="wrist_flex" joint="wrist_flex" kp="20"/>
    <position name="wrist_roll" joint="wrist_roll" kp="10"/>
    <position name="gripper" joint="gripper" kp="200" forcerange="-4 4"/>
  </actuator>
</mujoco>
"""
