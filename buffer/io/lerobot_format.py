"""Reading LeRobotDataset directories, format v2.1 (one parquet + mp4 per episode) and v3.0 (episodes
concatenated into chunked files, located through meta/episodes/*.parquet). Local directories only.

Frames come from mp4 (decoded with PyAV, any codec FFmpeg has, AV1 included) or, for `image` features,
PNG bytes inside the parquet.
"""

from __future__ import annotations

import io
import json
from collections.abc import Iterator
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
        self.version = str(self.info.get("codebase_version", ""))
        if self.version not in ("v2.1", "v3.0"):
            raise BufferError(
                f"{info_path}: codebase_version {self.version!r} is not supported (v2.1 or v3.0)"
            )
        self.fps = float(self.info["fps"])
        self.features: dict[str, dict[str, Any]] = self.info["features"]

    @property
    def frame_keys(self) -> list[str]:
        """Features holding camera frames (`video` or `image`)."""
        return [k for k, f in self.features.items() if f["dtype"] in ("video", "image")]

    def episodes(self) -> Iterator[LeRobotEpisode]:
        """Every episode in index order."""
        if self.version == "v2.1":
            yield from self._episodes_v21()
        else:
            yield from self._episodes_v30()

    def _episodes_v21(self) -> Iterator[LeRobotEpisode]:
        import pyarrow.parquet as pq

        chunks_size = int(self.info.get("chunks_size", 1000))
        lines = (self.root / "meta" / "episodes.jsonl").read_text().splitlines()
        for line in lines:
            if not line.strip():
                continue
            e = int(json.loads(line)["episode_index"])
            chunk = e // chunks_size
            data_path = self.root / self.info["data_path"].format(episode_chunk=chunk, episode_index=e)
            table = pq.read_table(data_path).to_pandas()
            columns = self._columns(table, data_path)
            for key in self.frame_keys:
                if self.features[key]["dtype"] == "video":
                    video = self.root / self.info["video_path"].format(
                        episode_chunk=chunk, video_key=key, episode_index=e
                    )
                    columns[key] = self._decode_video(video, 0, len(table))
            yield LeRobotEpisode(e, columns)

    def _episodes_v30(self) -> Iterator[LeRobotEpisode]:
        import pandas as pd

        meta_files = sorted((self.root / "meta" / "episodes").glob("chunk-*/file-*.parquet"))
        if not meta_files:
            raise BufferError(f"{self.root}: no meta/episodes/chunk-*/file-*.parquet")
        meta = pd.concat([pd.read_parquet(p) for p in meta_files]).sort_values("episode_index")
        data_cache: dict[Path, Any] = {}
        for _, ep in meta.iterrows():
            e = int(ep["episode_index"])
            data_path = self.root / self.info["data_path"].format(
                chunk_index=int(ep["data/chunk_index"]), file_index=int(ep["data/file_index"])
            )
            if data_path not in data_cache:
                data_cache.clear()
                data_cache[data_path] = pd.read_parquet(data_path)
            table = data_cache[data_path]
            table = table[table["episode_index"] == e].sort_values("frame_index")
            columns = self._columns(table, data_path)
            for key in self.frame_keys:
                if self.features[key]["dtype"] == "video":
                    video = self.root / self.info["video_path"].format(
                        video_key=key,
                        chunk_index=int(ep[f"videos/{key}/chunk_index"]),
                        file_index=int(ep[f"videos/{key}/file_index"]),
                    )
                    first = round(float(ep[f"videos/{key}/from_timestamp"]) * self.fps)
                    columns[key] = self._decode_video(video, first, len(table))
            yield LeRobotEpisode(e, columns)

    def _columns(self, table: Any, path: Path) -> dict[str, np.ndarray]:
        columns: dict[str, np.ndarray] = {}
        for key, feature in self.features.items():
            if feature["dtype"] == "video":
                continue
            if key not in table.columns:
                raise BufferError(f"{path}: column {key!r} declared in meta/info.json is missing")
            values = table[key].tolist()
            if feature["dtype"] == "image":
                columns[key] = np.stack([_decode_png(v, path, key) for v in values])
            else:
                arr = np.asarray([np.asarray(v) for v in values])
                columns[key] = arr.astype(np.dtype(feature["dtype"])).reshape(len(values), -1)
        return columns

    def _decode_video(self, path: Path, first_frame: int, n_frames: int) -> np.ndarray:
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
            raise BufferError(f"{path}: cannot decode video ({exc})") from None
        missing = [i for i in range(n_frames) if i not in frames]
        if missing:
            raise BufferError(f"{path}: frames {missing[:5]}... of the episode are missing from the video")
        return np.stack([frames[i] for i in range(n_frames)])


def _decode_png(value: Any, path: Path, key: str) -> np.ndarray:
    from PIL import Image

    data = value.get("bytes") if isinstance(value, dict) else None
    if not data:
        raise BufferError(f"{path}: column {key!r} holds an image without embedded bytes")
    return np.asarray(Image.open(io.BytesIO(data)).convert("RGB"))
