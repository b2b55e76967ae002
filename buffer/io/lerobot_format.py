"""Reading LeRobotDataset directories, format v2.1 (one parquet + mp4 per episode) and v3.0 (episodes
concatenated into chunked files, located through meta/episodes/*.parquet). Local directories only.

Frames come from mp4 (decoded with PyAV, any codec FFmpeg has, AV1 included) or, for `image` features,
PNG bytes inside the parquet.
"""

from __future__ import annotations

import contextlib
import io
import json
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from buffer.errors import BufferError


@dataclass(frozen=True)
class LeRobotEpisode:
    """One episode's columns: feature name -> array with one row per frame."""

    index: int
    columns: dict[str, np.ndarray]

    @property
    def length(self) -> int:
        """Frames in the episode."""
        return len(next(iter(self.columns.values())))


class LeRobotReader:
    """Iterates a local LeRobotDataset's episodes as numpy arrays."""

    def __init__(self, root: str | Path):
        self.root = Path(root)
        info_path = self.root / "meta" / "info.json"
        try:
            self.info: dict[str, Any] = json.loads(info_path.read_text())
        except (OSError, ValueError) as exc:
            raise BufferError(f"{info_path}: not a LeRobotDataset ({exc})") from None
        if not isinstance(self.info, dict):
            raise BufferError(f"{info_path}: expected a JSON object, got {type(self.info).__name__}")
        self.version = str(self.info.get("codebase_version", ""))
        if self.version not in ("v2.1", "v3.0"):
            raise BufferError(
                f"{info_path}: codebase_version {self.version!r} is not supported (v2.1 or v3.0)"
            )
        fps = self.info.get("fps")
        if isinstance(fps, bool) or not isinstance(fps, (int, float)) or not fps > 0:
            raise BufferError(f"{info_path}: 'fps' must be a positive number, got {fps!r}")
        self.fps = float(fps)
        self.features: dict[str, dict[str, Any]] = _check_features(self.info.get("features"), info_path)
        # LeRobot leaves video_path null when every camera is stored as images (PNG in the parquet files).
        has_videos = any(f["dtype"] == "video" for f in self.features.values())
        for key in ("data_path", *(("video_path",) if has_videos else ())):
            if not isinstance(self.info.get(key), str):
                raise BufferError(f"{info_path}: {key!r} must be a path template string")

    @property
    def frame_keys(self) -> list[str]:
        """Features holding camera frames (`video` or `image`)."""
        return [k for k, f in self.features.items() if f["dtype"] in ("video", "image")]

    def first_task(self) -> str:
        """The dataset's first task sentence (v3.0 meta/tasks.parquet, v2.1 meta/tasks.jsonl); "" if none."""
        import pandas as pd

        try:
            if (self.root / "meta" / "tasks.parquet").is_file():
                return str(pd.read_parquet(self.root / "meta" / "tasks.parquet").index[0])
            lines = (self.root / "meta" / "tasks.jsonl").read_text().splitlines()
            return str(json.loads(lines[0])["task"]) if lines else ""
        except (OSError, ValueError, IndexError, KeyError):
            return ""

    def episodes(self, skipped: dict[int, str] | None = None) -> Iterator[LeRobotEpisode]:
        """Every episode in index order.

        Args:
            skipped: when given, an episode whose files are missing or unreadable is left out and its
                problem recorded here (episode index -> one line); otherwise it raises.

        Raises:
            BufferError: one line naming the file (and episode) that is missing or unreadable.
        """
        loaders = self._episodes_v21() if self.version == "v2.1" else self._episodes_v30()
        for index, load in loaders:
            try:
                yield load()
            except BufferError as exc:
                if skipped is None:
                    raise
                skipped[index] = str(exc)

    def _episodes_v21(self) -> Iterator[tuple[int, Callable[[], LeRobotEpisode]]]:
        import pyarrow.parquet as pq

        chunks_size = int(self.info.get("chunks_size", 1000))
        episodes_path = self.root / "meta" / "episodes.jsonl"
        with _named(episodes_path):
            lines = episodes_path.read_text().splitlines()
            indices = [int(json.loads(line)["episode_index"]) for line in lines if line.strip()]

        def load(e: int) -> LeRobotEpisode:
            chunk = e // chunks_size
            data_path = self.root / self.info["data_path"].format(episode_chunk=chunk, episode_index=e)
            with _named(data_path, e):
                table = pq.read_table(data_path).to_pandas()
            columns = self._columns(table, data_path, e)
            for key in self.frame_keys:
                if self.features[key]["dtype"] == "video":
                    video = self.root / self.info["video_path"].format(
                        episode_chunk=chunk, video_key=key, episode_index=e
                    )
                    columns[key] = self._decode_video(video, 0, len(table), e)
            return LeRobotEpisode(e, columns)

        for e in indices:
            yield e, lambda e=e: load(e)  # type: ignore[misc]

    def _episodes_v30(self) -> Iterator[tuple[int, Callable[[], LeRobotEpisode]]]:
        import pandas as pd

        meta_files = sorted((self.root / "meta" / "episodes").glob("chunk-*/file-*.parquet"))
        if not meta_files:
            raise BufferError(f"{self.root}: no meta/episodes/chunk-*/file-*.parquet")
        frames = []
        for path in meta_files:
            with _named(path):
                frames.append(pd.read_parquet(path))
        meta = pd.concat(frames)
        with _named(meta_files[0]):
            meta = meta.sort_values("episode_index")
        data_cache: dict[Path, Any] = {}

        def load(ep: Any) -> LeRobotEpisode:
            e = int(ep["episode_index"])
            with _named(meta_files[0], e):
                data_path = self.root / self.info["data_path"].format(
                    chunk_index=int(ep["data/chunk_index"]), file_index=int(ep["data/file_index"])
                )
            if data_path not in data_cache:
                data_cache.clear()
                with _named(data_path, e):
                    data_cache[data_path] = pd.read_parquet(data_path)
            table = data_cache[data_path]
            with _named(data_path, e):
                table = table[table["episode_index"] == e].sort_values("frame_index")
            if not len(table):
                raise BufferError(f"{data_path}: episode {e} has no frames in it")
            columns = self._columns(table, data_path, e)
            for key in self.frame_keys:
                if self.features[key]["dtype"] == "video":
                    with _named(meta_files[0], e):
                        video = self.root / self.info["video_path"].format(
                            video_key=key,
                            chunk_index=int(ep[f"videos/{key}/chunk_index"]),
                            file_index=int(ep[f"videos/{key}/file_index"]),
                        )
                        first = round(float(ep[f"videos/{key}/from_timestamp"]) * self.fps)
                    columns[key] = self._decode_video(video, first, len(table), e)
            return LeRobotEpisode(e, columns)

        for _, ep in meta.iterrows():
            yield int(ep["episode_index"]), lambda ep=ep: load(ep)  # type: ignore[misc]

    def _columns(self, table: Any, path: Path, episode: int) -> dict[str, np.ndarray]:
        columns: dict[str, np.ndarray] = {}
        for key, feature in self.features.items():
            if feature["dtype"] == "video":
                continue
            if key not in table.columns:
                raise BufferError(
                    f"{path}: episode {episode}: column {key!r} declared in meta/info.json is missing"
                )
            values = table[key].tolist()
            if feature["dtype"] == "image":
                columns[key] = np.stack(
                    [_decode_png(v, path, f"episode {episode}: column {key!r}") for v in values]
                )
            else:
                try:
                    arr = np.asarray([np.asarray(v) for v in values])
                    columns[key] = arr.astype(np.dtype(feature["dtype"])).reshape(len(values), -1)
                except (ValueError, TypeError) as exc:
                    raise BufferError(
                        f"{path}: episode {episode}: column {key!r} does not hold {feature['dtype']} values ({exc})"
                    ) from None
        return columns

    def _decode_video(self, path: Path, first_frame: int, n_frames: int, episode: int) -> np.ndarray:
        """Frames [first_frame, first_frame + n_frames) of an mp4, by presentation time."""
        import av

        frames: dict[int, np.ndarray] = {}
        try:
            with av.open(str(path)) as container:
                stream = container.streams.video[0]
                for frame in container.decode(stream):
                    index = round(float(frame.time or 0.0) * self.fps)
                    if first_frame <= index < first_frame + n_frames:
                        frames[index - first_frame] = frame.to_ndarray(format="rgb24")
        except (OSError, av.error.FFmpegError) as exc:
            raise BufferError(f"{path}: episode {episode}: cannot decode video ({exc})") from None
        missing = [i for i in range(n_frames) if i not in frames]
        if missing:
            raise BufferError(
                f"{path}: episode {episode}: frames {missing[:5]}... of the episode are missing from the video"
            )
        return np.stack([frames[i] for i in range(n_frames)])


@contextlib.contextmanager
def _named(path: Path, episode: int | None = None) -> Iterator[None]:
    """Turn a missing or unreadable file (or a malformed table in it) into one BufferError line."""
    import pyarrow as pa

    where = f"{path}" + (f": episode {episode}" if episode is not None else "")
    try:
        yield
    except FileNotFoundError:
        raise BufferError(f"{where}: file is missing") from None
    except (OSError, ValueError, KeyError, TypeError, pa.ArrowException) as exc:
        raise BufferError(f"{where}: unreadable ({type(exc).__name__}: {exc})") from None


def _check_features(features: Any, info_path: Path) -> dict[str, dict[str, Any]]:
    """meta/info.json's features: name -> {dtype: str, shape: [int, ...], ...}."""
    if not isinstance(features, dict) or not features:
        raise BufferError(f"{info_path}: 'features' must be a non-empty object")
    for name, feature in features.items():
        if not isinstance(feature, dict) or not isinstance(feature.get("dtype"), str):
            raise BufferError(f"{info_path}: feature {name!r} needs a 'dtype' string")
        shape = feature.get("shape")
        if not isinstance(shape, list | tuple) or not all(isinstance(n, int) and n > 0 for n in shape):
            raise BufferError(f"{info_path}: feature {name!r} 'shape' must be a list of positive ints")
    return features


def _decode_png(value: Any, path: Path, what: str) -> np.ndarray:
    from PIL import Image

    data = value.get("bytes") if isinstance(value, dict) else None
    if not data:
        raise BufferError(f"{path}: {what} holds an image without embedded bytes")
    try:
        return np.asarray(Image.open(io.BytesIO(data)).convert("RGB"))
    except (OSError, ValueError) as exc:
        raise BufferError(f"{path}: {what} holds an unreadable image ({exc})") from None
