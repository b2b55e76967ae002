import json
import subprocess
import sys

import cv2
import numpy as np
import pytest
import tyro
from scipy.spatial.transform import Rotation

from calibration import Board, BoardConfig, load_camera, load_hand_eye
from calibration.synthetic import BoardScene, random_camera_poses
from calibration.transforms import invert, make_transform, pose_difference
from sim import make_env
from vlmrl import cli
from vlmrl.pipelines import train

BOARD_ARGS = ["--board.kind", "charuco", "--board.squares-x", "9", "--board.squares-y", "6"]
BOARD_ARGS += ["--board.square-size-m", "0.025", "--board.marker-size-m", "0.018"]
X_GRIPPER_CAMERA = make_transform(
    Rotation.from_euler("xyz", [2, -3, 88], degrees=True).as_matrix(), [0.03, -0.02, 0.07]
)


@pytest.fixture(scope="module")
def captures(tmp_path_factory):
    """A folder of rendered board photos (plus one without the board) and the robot poses behind them."""
    root = tmp_path_factory.mktemp("captures")
    board = Board(
        BoardConfig(kind="charuco", squares_x=9, squares_y=6, square_size_m=0.025, marker_size_m=0.018)
    )
    scene = BoardScene(board)
    poses = random_camera_poses(16, np.random.default_rng(3))
    images = root / "images"
    images.mkdir()
    robot_poses = {}
    for i, T_world_camera in enumerate(poses):
        name = f"img_{i:02d}.png"
        cv2.imwrite(
            str(images / name), cv2.cvtColor(scene.render((640, 480), T_world_camera), cv2.COLOR_RGB2BGR)
        )
        robot_poses[name] = (T_world_camera @ invert(X_GRIPPER_CAMERA)).tolist()
    cv2.imwrite(str(images / "img_99.png"), np.full((480, 640, 3), 120, np.uint8))
    robot_poses["img_99.png"] = np.eye(4).tolist()
    (root / "poses.json").write_text(json.dumps({"poses": robot_poses}))
    scene.close()
    return root


def test_camera_then_handeye_then_sim_camera(captures, tmp_path, capsys):
    cal, out = tmp_path / "calibration", tmp_path / "runs"
    common = ["--calibration-dir", str(cal)]
    code = cli.main(
        [
            "calibrate",
            "camera",
            "--images",
            str(captures / "images"),
            "--camera-id",
            "wrist",
            *BOARD_ARGS,
            *common,
            "--out-dir",
            str(out / "camera"),
        ]
    )
    assert code == 0
    shown = capsys.readouterr().out
    assert "rejected: board not found" in shown and "RMS reprojection" in shown
    camera = load_camera("wrist", cal, image_size=(640, 480))
    assert camera.rms_px < 0.5
    assert camera.intrinsics.fy == pytest.approx(579.41, rel=0.01)
    for name in ("corners.png", "reprojection_error.png", "report.json", "config.json"):
        assert (out / "camera" / name).stat().st_size > 0
    report = json.loads((out / "camera" / "report.json").read_text())
    rejected = [row["image"] for row in report["images"] if not row["accepted"]]
    assert rejected == ["img_99.png"]
    assert json.loads((out / "camera" / "config.json").read_text())["camera_id"] == "wrist"

    # One robot pose logged wrongly (4 cm off): the hand-eye step must leave that view out.
    poses = json.loads((captures / "poses.json").read_text())
    poses["poses"]["img_04.png"][0][3] += 0.04
    poses_file = tmp_path / "poses.json"
    poses_file.write_text(json.dumps(poses))
    code = cli.main(
        [
            "calibrate",
            "handeye",
            "--images",
            str(captures / "images"),
            "--poses",
            str(poses_file),
            "--camera-id",
            "wrist",
            "--robot-id",
            "so101_a",
            *BOARD_ARGS,
            *common,
            "--out-dir",
            str(out / "he"),
        ]
    )
    assert code == 0
    assert "daniilidis" in capsys.readouterr().out
    hand_eye = load_hand_eye("so101_a", "wrist", cal)
    mm, deg = pose_difference(hand_eye.transform, X_GRIPPER_CAMERA)
    assert mm < 2.0 and deg < 0.5
    assert (out / "he" / "corners.png").is_file() and (out / "he" / "reprojection_error.png").is_file()
    rows = json.loads((out / "he" / "report.json").read_text())["images"]
    rejected = {row["image"]: row["reason"] for row in rows if not row["accepted"]}
    assert set(rejected) == {"img_04.png", "img_99.png"}
    assert rejected["img_04.png"].startswith("hand-eye outlier")

    scene_xml = tmp_path / "scene.xml"
    scene_xml.write_text(
        '<mujoco><worldbody><light pos="0 0 2"/><geom type="box" size="0.1 0.1 0.02" rgba="0.8 0.2 0.2 1"/>'
        '<body name="hand" pos="0.3 0 0.3"><camera name="wrist" pos="0 0 0"/></body></worldbody></mujoco>'
    )
    code = cli.main(
        [
            "calibrate",
            "sim-camera",
            "--camera-id",
            "wrist",
            "--robot-id",
            "so101_a",
            "--method",
            "crop",
            *common,
            "--mjcf",
            str(scene_xml),
            "--camera",
            "wrist",
            "--out-dir",
            str(out / "sim"),
        ]
    )
    assert code == 0
    assert "principal point residual" in capsys.readouterr().out
    summary = json.loads((out / "sim" / "sim_camera.json").read_text())
    np.testing.assert_allclose(summary["pos"], hand_eye.transform[:3, 3], atol=1e-9)
    preview = cv2.imread(str(out / "sim" / "preview.png"))
    assert preview.shape == (480, 640, 3)
    assert (out / "sim" / "camera.xml").read_text().startswith('<camera name="wrist"')

    # Train on the twin with this camera: `vlmrl train --sim.cameras wrist --sim.camera-calibration wrist wrist ...`.
    args = ["--sim.cameras", "wrist", "--sim.camera-calibration", "wrist", "wrist", "--sim.image-size", "48"]
    args += ["--sim.calibration-robot-id", "so101_a", "--sim.calibration-dir", str(cal)]
    sim_cfg = tyro.cli(train.Config, args=args).sim
    assert sim_cfg.camera_calibration == {"wrist": "wrist"}
    env = make_env(sim_cfg)
    env.reset(seed=0)
    model, data = env.unwrapped.sim.model, env.unwrapped.sim.data
    tcp, wrist = model.site("tcp").id, model.camera("wrist").id
    T_world_camera = (
        make_transform(data.site_xmat[tcp].reshape(3, 3), data.site_xpos[tcp]) @ hand_eye.transform
    )
    np.testing.assert_allclose(data.cam_xpos[wrist], T_world_camera[:3, 3], atol=1e-9)
    observed = camera.intrinsics.crop_and_resize((80, 0, 480, 480), (48, 48))  # the real env's centre crop
    np.testing.assert_allclose(
        env.unwrapped.calibrated_cameras["wrist"].camera_matrix, observed.camera_matrix
    )
    env.close()


def _fails_cleanly(capsys, args, message, *written):
    assert cli.main(["calibrate", *args]) == 1
    err = capsys.readouterr().err.strip()
    assert err.count("\n") == 0 and message in err, err
    for path in written:
        assert not path.exists(), f"{path} was written"


def test_bad_input_is_one_line_and_writes_nothing(captures, tmp_path, capsys):
    cal, out = tmp_path / "calibration", tmp_path / "out"
    common = ["--calibration-dir", str(cal), "--out-dir", str(out), "--camera-id", "front", *BOARD_ARGS]
    empty = tmp_path / "empty"
    empty.mkdir()
    _fails_cleanly(capsys, ["camera", "--images", str(empty), *common], "no images", cal, out)

    few = tmp_path / "few"
    few.mkdir()
    for name in sorted((captures / "images").iterdir())[:5]:
        (few / name.name).write_bytes(name.read_bytes())
    _fails_cleanly(
        capsys,
        ["camera", "--images", str(few), *common],
        "only 5 of 5 images show the board; need at least 10",
        cal,
        out,
    )

    blank = tmp_path / "blank"
    blank.mkdir()
    for i in range(3):
        cv2.imwrite(str(blank / f"{i}.png"), np.full((60, 80, 3), 255, np.uint8))
    _fails_cleanly(
        capsys, ["camera", "--images", str(blank), *common], "no board found in any of the 3 images", cal, out
    )

    mixed = tmp_path / "mixed"
    mixed.mkdir()
    cv2.imwrite(str(mixed / "a.png"), np.zeros((480, 640, 3), np.uint8))
    cv2.imwrite(str(mixed / "b.png"), np.zeros((240, 320, 3), np.uint8))
    _fails_cleanly(
        capsys,
        ["camera", "--images", str(mixed), *common],
        "image b.png is 320x240 but a.png is 640x480",
        cal,
        out,
    )

    handeye = ["handeye", "--images", str(captures / "images"), "--robot-id", "so101", *common]
    _fails_cleanly(
        capsys, [*handeye, "--poses", str(tmp_path / "nope.json")], "nope.json does not exist", cal, out
    )
    partial = tmp_path / "partial.json"
    poses = json.loads((captures / "poses.json").read_text())["poses"]
    partial.write_text(json.dumps({"poses": {k: v for k, v in poses.items() if k != "img_03.png"}}))
    _fails_cleanly(capsys, [*handeye, "--poses", str(partial)], "has no pose for image img_03.png", cal, out)
    _fails_cleanly(
        capsys, [*handeye, "--poses", str(captures / "poses.json")], "no calibration file", cal, out
    )

    _fails_cleanly(
        capsys,
        ["sim-camera", "--camera-id", "front", "--robot-id", "so101", "--calibration-dir", str(cal)],
        "no calibration file",
        cal,
    )


def test_console_error_has_no_traceback(tmp_path):
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "vlmrl",
            "calibrate",
            "camera",
            "--images",
            str(tmp_path / "missing"),
            "--camera-id",
            "x",
        ],
        capture_output=True,
        text=True,
    )
    assert proc.returncode == 1
    assert proc.stderr.strip().splitlines() == [
        f"vlmrl calibrate: error: image folder {tmp_path / 'missing'} does not exist"
    ]


def test_board_prints_at_its_configured_size(tmp_path, capsys):
    from PIL import Image

    out = tmp_path / "board.png"
    assert cli.main(["calibrate", "board", "--out", str(out), *BOARD_ARGS, "--dpi", "127"]) == 0
    assert "squares 25.00 mm" in capsys.readouterr().out
    image = Image.open(out)
    assert image.info["dpi"] == pytest.approx((127, 127), abs=0.01)
    # 9 squares of 25 mm at 5 px/mm plus one square of margin each side.
    assert image.size == (11 * 125, 8 * 125)
    board = Board(
        BoardConfig(kind="charuco", squares_x=9, squares_y=6, square_size_m=0.025, marker_size_m=0.018)
    )
    assert board.detect(np.asarray(image)) is not None
    _fails_cleanly(
        capsys, ["board", "--out", str(tmp_path / "b.png"), "--dpi", "10"], "raise --dpi", tmp_path / "b.png"
    )
