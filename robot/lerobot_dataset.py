"""LeRobotDataset (format v3.0) I/O for recorded robot episodes.

Writing goes through LeRobot's own ``LeRobotDataset.create``/``add_frame``/``save_episode``, so any LeRobot
tool reads the result. Reading does not use LeRobot's torch decoders (its torchvision backend needs
``VideoReader``, gone from torchvision 0.29, and torchcodec needs system FFmpeg 7): tables come from
pyarrow, video frames from PyAV, which bundles its own FFmpeg.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from robot.errors import RobotError

IMAGE_PREFIX = "observation.images."


@dataclass
class EpisodeArrays:
    """One episode in memory: T steps, each an observation and the action taken from it."""

    state: np.ndarray
    """float32[T, n] joint positions (LeRobot units)."""
    action: np.ndarray
    """float32[T, n] commands sent."""
    frames: dict[str, np.ndarray]
    """camera -> uint8[T, H, W, 3]."""
    reward: np.ndarray
    """float32[T] reward of each step."""
    success: np.ndarray
    """bool[T]."""
    task: str
    """Task sentence."""
    extra: dict[str, np.ndarray] = field(default_factory=dict)
    """Other per-step float32 arrays (written as features of their own)."""


def write_lerobot_dataset(
    root: str | Path,
    episodes: Iterable[EpisodeArrays],
    fps: int,
    joint_keys: Sequence[str],
    robot_type: str,
    repo_id: str = "local/vlmrl",
    use_videos: bool = True,
) -> Path:
    """Write episodes as a new LeRobotDataset v3.0 directory ``root`` (which must not exist yet).

    Raises:
        RobotError: ``root`` exists, no episodes, or episodes of different shapes.
    """
    from lerobot.datasets.lerobot_dataset import LeRobotDataset

    root = Path(root)
    if root.exists():
        raise RobotError(f"{root} already exists; LeRobotDataset export writes a new directory")
    dataset = None
    names = [k.removesuffix(".pos") for k in joint_keys]
    for ep in episodes:
        if dataset is None:
            features: dict[str, Any] = {
                "observation.state": {"dtype": "float32", "shape": (len(names),), "names": names},
                "action": {"dtype": "float32", "shape": (len(names),), "names": names},
                "next.reward": {"dtype": "float32", "shape": (1,), "names": None},
                "next.success": {"dtype": "bool", "shape": (1,), "names": None},
            }
            for cam, frames in ep.frames.items():
                features[IMAGE_PREFIX + cam] = {
                    "dtype": "video" if use_videos else "image",
                    "shape": tuple(frames.shape[1:]),
                    "names": ["height", "width", "channels"],
                }
            for key in ep.extra:
                features[key] = {"dtype": "float32", "shape": (1,), "names": None}
            dataset = LeRobotDataset.create(
                repo_id=repo_id,
                fps=fps,
                features=features,
                root=root,
                robot_type=robot_type,
                use_videos=use_videos,
            )
        for t in range(len(ep.action)):
            frame: dict[str, Any] = {
                "observation.state": np.asarray(ep.state[t], np.float32),
                "action": np.asarray(ep.action[t], np.float32),
                "next.reward": np.array([ep.reward[t]], np.float32),
                "next.success": np.array([bool(ep.success[t])]),
                "task": ep.task,
            }
            frame |= {IMAGE_PREFIX + cam: frames[t] for cam, frames in ep.frames.items()}
            frame |= {key: np.array([values[t]], np.float32) for key, values in ep.extra.items()}
            dataset.add_frame(frame)
        dataset.save_episode()
    if dataset is None:
        raise RobotError("no episodes to export")
    dataset.finalize()
    return root


def is_lerobot_dataset(path: str | Path) -> bool:
    """True for a directory holding ``meta/info.json``."""
    return (Path(path) / "meta" / "info.json").is_file()


class LeRobotEpisodes:
    """Read-only view of a LeRobotDataset v3.0 directory, episode by episode.

    Raises:
        RobotError: not a v3.0 dataset directory.
    """

    def __init__(self, root: str | Path) -> None:
        import pyarrow as pa
        import pyarrow.parquet as pq

        self.root = Path(root)
        info_path = self.root / "meta" / "info.json"
        if not info_path.is_file():
            raise RobotError(f"{self.root}: not a LeRobotDataset directory (no meta/info.json)")
        self.info = json.loads(info_path.read_text())
        version = str(self.info.get("codebase_version", ""))
        if not version.startswith("v3"):
            raise RobotError(
                f"{self.root}: LeRobotDataset {version or 'of unknown version'}; this reads v3.x"
            )
        self.fps = int(self.info["fps"])
        self.features: dict[str, Any] = self.info["features"]
        self.cameras = [
            k.removeprefix(IMAGE_PREFIX) for k, f in self.features.items() if f["dtype"] in ("video", "image")
        ]
        episode_files = sorted((self.root / "meta" / "episodes").glob("*/*.parquet"))
        data_files = sorted((self.root / "data").glob("*/*.parquet"))
        if not episode_files or not data_files:
            raise RobotError(f"{self.root}: LeRobotDataset without episode metadata or data files")
        self._episodes = {
            int(r["episode_index"]): r
            for r in pa.concat_tables(map(pq.read_table, episode_files)).to_pylist()
        }
        self._data = pa.concat_tables([pq.read_table(f) for f in data_files])
        self._episode_of_row = np.asarray(self._data.column("episode_index").to_numpy())

    @property
    def episodes(self) -> list[int]:
        """Episode indices, ascending."""
        return sorted(self._episodes)

    def length(self, episode: int) -> int:
        """Frames in an episode."""
        return int(self._meta(episode)["length"])

    def task(self, episode: int) -> str:
        """The episode's (first) task sentence."""
        tasks = self._meta(episode).get("tasks") or []
        return str(tasks[0]) if tasks else ""

    def column(self, episode: int, name: str) -> np.ndarray:
        """A data column for one episode (rows in frame order), as numpy."""
        if name not in self._data.column_names:
            raise RobotError(f"{self.root}: no column {name!r} (have {self._data.column_names})")
        rows = np.flatnonzero(self._episode_of_row == episode)
        values = self._data.column(name).take(rows).to_pylist()
        return np.asarray(values)

    def frames(self, episode: int, camera: str) -> np.ndarray:
        """uint8[T, H, W, 3] frames of one camera over one episode."""
        key = IMAGE_PREFIX + camera
        if camera not in self.cameras:
            raise RobotError(f"{self.root}: no camera {camera!r} (have {self.cameras})")
        n = self.length(episode)
        if self.features[key]["dtype"] == "image":
            return np.stack([_decode_image(cell) for cell in self.column(episode, key)])
        meta = self._meta(episode)
        path = self.root / self.info["video_path"].format(
            video_key=key,
            chunk_index=int(meta[f"videos/{key}/chunk_index"]),
            file_index=int(meta[f"videos/{key}/file_index"]),
        )
        start = float(meta[f"videos/{key}/from_timestamp"])
        frames = _decode_video(path, start - 0.5 / self.fps, n)
        if len(frames) < n:
            raise RobotError(f"{path}: {len(frames)} frames decoded for episode {episode}, expected {n}")
        return frames

    def _meta(self, episode: int) -> Mapping[str, Any]:
        if episode not in self._episodes:
            raise RobotError(f"{self.root}: no episode {episode} (have {self.episodes})")
        return self._episodes[episode]


def _decode_video(path: Path, from_s: float, n: int) -> np.ndarray:
    import av

    out = []
    with av.open(str(path)) as container:
        for frame in container.decode(video=0):
            if frame.time is None or frame.time < from_s:
                continue
            out.append(frame.to_ndarray(format="rgb24"))
            if len(out) == n:
                break
    return np.stack(out) if out else np.zeros((0, 1, 1, 3), np.uint8)


def _decode_image(cell: Any) -> np.ndarray:
    import cv2

    data = cell["bytes"] if isinstance(cell, dict) else cell
    image = cv2.imdecode(np.frombuffer(data, np.uint8), cv2.IMREAD_COLOR)
    if image is None:
        raise RobotError("an image cell of the LeRobotDataset could not be decoded")
    return cv2.cvtColor(image, cv2.COLOR_BGR2RGB)
