import numpy as np
import pytest

from robot.config import SO101_JOINT_KEYS
from robot.errors import RobotError
from robot.lerobot_dataset import EpisodeArrays, LeRobotEpisodes, is_lerobot_dataset, write_lerobot_dataset


def episode(t, shade, task="pick up the cube"):
    frames = np.zeros((t, 32, 32, 3), np.uint8)
    frames[:] = np.linspace(0, 250, t).astype(np.uint8)[:, None, None, None] // 2 + shade
    state = np.arange(t * 6, dtype=np.float32).reshape(t, 6)
    success = np.zeros(t, bool)
    success[-1] = True
    return EpisodeArrays(
        state=state,
        action=state + 1,
        frames={"front": frames},
        reward=success.astype(np.float32),
        success=success,
        task=task,
        extra={"progress": np.linspace(0, 1, t, dtype=np.float32)},
    )


@pytest.mark.parametrize("use_videos", [True, False])
def test_episodes_round_trip_through_lerobots_writer(tmp_path, use_videos):
    root = write_lerobot_dataset(
        tmp_path / "ds",
        [episode(12, 0), episode(7, 100)],
        fps=10,
        joint_keys=SO101_JOINT_KEYS,
        robot_type="sim_so101",
        use_videos=use_videos,
    )
    assert is_lerobot_dataset(root) and not is_lerobot_dataset(tmp_path)
    ds = LeRobotEpisodes(root)
    assert ds.episodes == [0, 1] and ds.cameras == ["front"] and ds.fps == 10
    assert [ds.length(e) for e in ds.episodes] == [12, 7]
    assert ds.task(1) == "pick up the cube"
    np.testing.assert_allclose(ds.column(1, "action"), episode(7, 100).action)
    np.testing.assert_allclose(ds.column(0, "progress").reshape(-1), np.linspace(0, 1, 12), atol=1e-6)
    for e, ref in ((0, episode(12, 0)), (1, episode(7, 100))):
        frames = ds.frames(e, "front")
        assert frames.shape == (ref.action.shape[0], 32, 32, 3) and frames.dtype == np.uint8
        # Video is lossy (AV1); flat grey frames come back within a few levels.
        tol = 6 if use_videos else 0
        assert np.abs(frames.mean(axis=(1, 2, 3)) - ref.frames["front"].mean(axis=(1, 2, 3))).max() <= tol


def test_bad_directories_are_refused(tmp_path):
    with pytest.raises(RobotError, match="not a LeRobotDataset"):
        LeRobotEpisodes(tmp_path)
    (tmp_path / "x").mkdir()
    with pytest.raises(RobotError, match="already exists"):
        write_lerobot_dataset(
            tmp_path / "x", [episode(3, 0)], fps=10, joint_keys=SO101_JOINT_KEYS, robot_type="t"
        )
