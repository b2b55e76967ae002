"""Board views rendered by MuJoCo with a camera of known intrinsics, shared by the calibration tests."""

from dataclasses import dataclass

import numpy as np
import pytest

from calibration import Board, BoardConfig, CameraIntrinsics
from calibration.synthetic import BoardScene, fovy_intrinsics, random_camera_poses

SIZE = (640, 480)
FOVY_DEG = 45.0


@dataclass
class Views:
    board: Board
    scene: BoardScene
    truth: CameraIntrinsics
    T_world_camera: list[np.ndarray]
    images: list[np.ndarray]

    @property
    def names(self) -> list[str]:
        return [f"view{i:02d}.png" for i in range(len(self.images))]


def _render_views(kind: str) -> Views:
    board = Board(BoardConfig(kind=kind, squares_x=9, squares_y=6, square_size_m=0.025, marker_size_m=0.018))
    scene = BoardScene(board, fovy_deg=FOVY_DEG)
    poses = random_camera_poses(16, np.random.default_rng(7))
    images = [scene.render(SIZE, pose) for pose in poses]
    return Views(board, scene, fovy_intrinsics(FOVY_DEG, *SIZE), poses, images)


@pytest.fixture(scope="session")
def checkerboard_views():
    views = _render_views("checkerboard")
    yield views
    views.scene.close()


@pytest.fixture(scope="session")
def charuco_views():
    views = _render_views("charuco")
    yield views
    views.scene.close()
