"""Synthetic board views rendered by MuJoCo from known camera poses: ground truth for tests and for
checking a calibration setup before touching hardware.

The board lies in the world x-y plane, centred on the origin, printed face up (+z). Its board frame
(see ``calibration.board``) has x along world +x, y along world -y, z along world -z.
"""

from __future__ import annotations

import math

import cv2
import numpy as np

from calibration.board import Board
from calibration.intrinsics import CameraIntrinsics
from calibration.transforms import look_at, make_transform, opencv_to_mujoco_camera

CAMERA = "camera"


def fovy_intrinsics(fovy_deg: float, width: int, height: int) -> CameraIntrinsics:
    """Intrinsics of a MuJoCo camera given only fovy: square pixels, principal point at the centre."""
    focal = (height / 2.0) / math.tan(math.radians(fovy_deg) / 2.0)
    matrix = np.array([[focal, 0.0, (width - 1) / 2.0], [0.0, focal, (height - 1) / 2.0], [0.0, 0.0, 1.0]])
    return CameraIntrinsics(matrix, np.zeros(5), (width, height))


class BoardScene:
    """A MuJoCo scene holding one textured board and one camera named ``CAMERA`` on the world body."""

    def __init__(
        self,
        board: Board,
        fovy_deg: float = 45.0,
        max_size: tuple[int, int] = (1280, 960),
        px_per_square: int = 64,
        margin_squares: float = 1.0,
    ) -> None:
        import mujoco  # heavy; only scenes need it

        self.board = board
        texture = board.draw(px_per_square, margin_squares)
        _, png = cv2.imencode(".png", texture)  # encoding a uint8 image in memory cannot fail
        square = board.cfg.square_size_m
        half_x = texture.shape[1] / px_per_square * square / 2.0
        half_y = texture.shape[0] / px_per_square * square / 2.0
        margin_m = round(margin_squares * px_per_square) / px_per_square * square
        xml = f"""
<mujoco model="board_scene">
  <visual>
    <global offwidth="{max_size[0]}" offheight="{max_size[1]}"/>
    <headlight ambient="1 1 1" diffuse="0 0 0" specular="0 0 0"/>
    <map znear="0.01"/>
  </visual>
  <asset>
    <texture name="board" type="2d" file="board.png"/>
    <material name="board" texture="board" texrepeat="1 1" specular="0" shininess="0" reflectance="0"/>
  </asset>
  <worldbody>
    <geom name="board" type="plane" size="{half_x} {half_y} 0.01" material="board"/>
    <camera name="{CAMERA}" pos="0 0 1" fovy="{fovy_deg}"/>
  </worldbody>
</mujoco>"""
        self.model = mujoco.MjModel.from_xml_string(xml, assets={"board.png": png.tobytes()})
        self.data = mujoco.MjData(self.model)
        self.T_world_board = make_transform(
            np.diag([1.0, -1.0, -1.0]), np.array([-half_x + margin_m, half_y - margin_m, 0.0])
        )
        """Board frame in the world (texture row 0 lies towards world +y)."""
        self._renderers: dict[tuple[int, int], mujoco.Renderer] = {}

    @property
    def camera_id(self) -> int:
        import mujoco

        return int(mujoco.mj_name2id(self.model, mujoco.mjtObj.mjOBJ_CAMERA, CAMERA))

    def set_camera_pose(self, T_world_camera: np.ndarray) -> None:
        """Places the camera; the pose is an OpenCV camera frame (z forward, y down) in the world."""
        import mujoco

        T = opencv_to_mujoco_camera(T_world_camera)
        quat = np.zeros(4)
        mujoco.mju_mat2Quat(quat, T[:3, :3].reshape(-1))
        self.model.cam_pos[self.camera_id] = T[:3, 3]
        self.model.cam_quat[self.camera_id] = quat

    def render(self, size: tuple[int, int], T_world_camera: np.ndarray | None = None) -> np.ndarray:
        """Renders uint8[H, W, 3] RGB (row 0 at the top) at size (width, height)."""
        import mujoco

        if T_world_camera is not None:
            self.set_camera_pose(T_world_camera)
        mujoco.mj_forward(self.model, self.data)
        if size not in self._renderers:
            self._renderers[size] = mujoco.Renderer(self.model, height=size[1], width=size[0])
        renderer = self._renderers[size]
        renderer.update_scene(self.data, camera=CAMERA)
        return renderer.render().copy()

    def close(self) -> None:
        """Frees the GL contexts."""
        for renderer in self._renderers.values():
            renderer.close()
        self._renderers.clear()


def random_camera_poses(
    n: int,
    rng: np.random.Generator,
    distance_m: tuple[float, float] = (0.35, 0.6),
    max_tilt_deg: float = 40.0,
) -> list[np.ndarray]:
    """Varied OpenCV camera poses (camera-to-world) looking at the board centre from above.

    Tilted views from several azimuths are what makes focal length and principal point observable.
    """
    centre = np.array([0.0, 0.0, 0.0])
    poses = []
    for i in range(n):
        tilt = math.radians(rng.uniform(10.0, max_tilt_deg))
        azimuth = 2 * math.pi * (i / n) + rng.uniform(-0.3, 0.3)
        distance = rng.uniform(*distance_m)
        eye = distance * np.array(
            [math.sin(tilt) * math.cos(azimuth), math.sin(tilt) * math.sin(azimuth), math.cos(tilt)]
        )
        target = centre + rng.uniform(-0.03, 0.03, size=3) * np.array([1, 1, 0])
        up = np.array([math.cos(rng.uniform(-0.5, 0.5)), math.sin(rng.uniform(-0.5, 0.5)), 0.0])
        poses.append(look_at(eye, target, up=up))
    return poses
