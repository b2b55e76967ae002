"""`vlmrl view PATH`: replay recorded episodes in a browser, compare their scores, label them.

    vlmrl view runs/rec/episodes.zarr              # a recording (or any vlmrl zarr store)
    vlmrl view runs/<train-run>                    # a run directory: its buffer.zarr (or saved buffer)
    vlmrl view runs/rec/lerobot --port 8800        # a LeRobotDataset folder (read into RAM)

Serves one page on 127.0.0.1 (it opens nothing itself: open the printed address): the episode list
(length, success, mean and max clip score per scorer, labels; sortable, filterable), every camera's
frames with a scrubber and playback at the control rate, plots of clip scores (two scorers side by
side), aux reward, reward, joints and actions with the clip under the cursor marked, and success/failure
labels per episode and per step range, saved to ``<store>.labels.json`` beside the store
(``vlmrl.scorers.labels``), which ``vlmrl scorer fit --labels FILE`` trains on. Press ? on the page for its keys.
Frames are read from the store when asked for, encoded once and cached, so stores of thousands of
episodes open in about a second; damaged episodes are listed as damaged.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Annotated, Any

import tyro

from buffer.storage.integrity import describe_skipped
from vlmrl.errors import ConfigError
from vlmrl.scorers.labels import LabelFile, default_annotator
from vlmrl.view.frames import FrameFormat, FrameImages
from vlmrl.view.server import Server, build_app
from vlmrl.view.source import EpisodeStore, clip_settings, locate


@dataclass(frozen=True, kw_only=True)
class Config:
    """vlmrl view: episodes, frames and scores in a browser; labels written back for scorer fit."""

    path: Annotated[Path, tyro.conf.Positional]
    """A vlmrl zarr store, a LeRobotDataset folder, or a run directory holding one."""
    port: int = 8765
    """Port on 127.0.0.1 to serve on (0: any free one; the address is printed)."""
    host: str = "127.0.0.1"
    """Interface to listen on; the page has no login, so keep it on loopback unless the network is yours."""
    annotator: str | None = None
    """Name recorded with every label (None: the OS user)."""
    labels: Path | None = None
    """Labels file to read and write (None: ``<store>.labels.json`` beside the store)."""
    clip_length: int | None = None
    """Frames per scored clip, for the clip marked under the cursor (None: the run's buffer setting, else 8)."""
    clip_stride: int | None = None
    """Steps between a clip's frames (None: the run's buffer setting, else 2)."""
    frame_format: FrameFormat = "auto"
    """How frames are sent: png, jpeg, or auto (PNG up to 128x128 px, JPEG above)."""
    cache_mb: int = 128
    """Memory for encoded frames (least recently used go first)."""


def open_viewer(cfg: Config) -> tuple[Any, Any]:
    """(the FastAPI app, the EpisodeStore it serves), checked; nothing is written yet.

    Raises:
        ConfigError, BufferError: a bad path or option, or a store that cannot be opened (one line).
    """
    if any(v is not None and v < 1 for v in (cfg.clip_length, cfg.clip_stride)):
        raise ConfigError("--clip-length and --clip-stride must be at least 1")
    if cfg.cache_mb < 1:
        raise ConfigError(f"--cache-mb {cfg.cache_mb}: expected at least 1")
    if not 0 <= cfg.port <= 65535:
        raise ConfigError(f"--port {cfg.port}: expected 0..65535")
    located = locate(cfg.path)
    run_length, run_stride = clip_settings(located) or (8, 2)
    labels_path = cfg.labels or located.labels
    if not labels_path.parent.is_dir():
        raise ConfigError(f"--labels {labels_path}: folder {labels_path.parent} does not exist")
    labels = LabelFile(labels_path, located.store)  # a malformed file fails here, in one line
    store = EpisodeStore(located, cfg.clip_length or run_length, cfg.clip_stride or run_stride)
    try:
        if not store.cameras:
            raise ConfigError(f"{located.store}: the episodes hold no camera frames to show")
        frames = FrameImages(store, cfg.frame_format, cache_bytes=cfg.cache_mb * 2**20)
        app = build_app(store, frames, labels, cfg.annotator or default_annotator())
    except BaseException:
        store.close()
        raise
    return app, store


def main(cfg: Config) -> int:
    """Serve until Ctrl-C; returns 0."""
    app, store = open_viewer(cfg)
    try:
        n = len(store.episode_ids())
        print(
            f"view: {store.located.store} ({store.located.kind}, {n} episode(s), cameras {', '.join(store.cameras)}, "
            f"scorers {', '.join(store.scorers()) or 'none'})"
        )
        if store.damaged:
            print(f"view: warning: {describe_skipped(store.damaged, 'damaged')}; shown as damaged")
        if store.skipped:
            print(f"view: warning: {describe_skipped(store.skipped, 'not readable, left out')}")
        server = Server(app, cfg.host, cfg.port).start()
        print(
            f"view: serving at {server.url} (Ctrl-C stops); labels go to {app.state.labels_path}", flush=True
        )
        try:
            server.wait()
        except KeyboardInterrupt:
            print("view: stopped")  # Ctrl-C is how a viewer ends, not an interruption
        finally:
            server.stop()
    finally:
        store.close()
    return 0
