"""Success/failure labels of recorded episodes, made by people (``vlmrl view``) and read by ``vlmrl scorer fit
--labels FILE``.

A labels file is one JSON document beside the store it labels, ``<store>.labels.json`` (``runs/rec/
episodes.zarr.labels.json``; for a training run whose buffer lives in its checkpoint, ``<run>/buffer.labels
.json``), so the store itself is never written::

    {"format": "vlmrl-labels", "version": 1, "store": "episodes.zarr",
     "labels": [
       {"episode": 3, "start": null, "stop": null, "label": "success",
        "annotator": "ana", "time": "2026-12-04T10:31:07.250Z"},
       {"episode": 3, "start": 12, "stop": 20, "label": "failure",
        "annotator": "ana", "time": "2026-12-04T10:31:40.008Z"}]}

``store`` is the store's path relative to the file's folder. ``episode`` is the store's episode id (a
LeRobotDataset's ``episode_index``); ``start``/``stop`` null label the whole episode, otherwise the steps
[start, stop). An episode has at most one whole-episode record and one record per range; labelling again
replaces it (the newest ``time`` wins where ranges overlap). The file is rewritten whole, atomically
(temporary file, fsync, rename), so a reader never sees half of it.

What a label means for a scorer's training window (``window_targets``): a whole-episode ``success`` says
the episode ends in success, exactly as a ``success`` info set on its final observation would (the window
is positive when its score's span reaches the end: ``buffer.clips``' clip rule); ``failure`` says it never
succeeds. A range label sets the target of every window whose last frame (the observation its score
judges) lies in the range, overriding the episode's label.
"""

from __future__ import annotations

import dataclasses
import getpass
import json
import os
import threading
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Literal

import numpy as np

from vlmrl.errors import ConfigError

FORMAT = "vlmrl-labels"
VERSION = 1
SUFFIX = ".labels.json"

Verdict = Literal["success", "failure"]


@dataclass(frozen=True, kw_only=True)
class Label:
    """One person's verdict on an episode or on a range of its steps."""

    episode: int
    """The store's episode id (a LeRobotDataset's ``episode_index``)."""
    label: Verdict
    """success or failure."""
    start: int | None = None
    """First labelled step; None with ``stop`` None: the whole episode."""
    stop: int | None = None
    """One past the last labelled step."""
    annotator: str = ""
    """Who labelled it (``vlmrl view --annotator``, default the OS user)."""
    time: str = ""
    """When, as ISO 8601 UTC to the millisecond (``2026-12-04T10:31:07.250Z``)."""

    @property
    def whole_episode(self) -> bool:
        """Whether it labels the whole episode rather than a range of steps."""
        return self.start is None

    @property
    def key(self) -> tuple[int, int | None, int | None]:
        """What it labels: (episode, start, stop); labelling the same again replaces the record."""
        return (self.episode, self.start, self.stop)


def labels_path_for(store: Path) -> Path:
    """The labels file beside a store: ``<store>.labels.json``."""
    return store.parent / f"{store.name}{SUFFIX}"


def default_annotator() -> str:
    """The OS user name ("unknown" when the system cannot tell)."""
    try:
        return getpass.getuser()
    except Exception:
        return "unknown"


def now_utc() -> str:
    """The current time as ISO 8601 UTC, to the millisecond (the newest of overlapping ranges wins)."""
    return datetime.now(UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")


def parse_label(record: Any, where: str) -> Label:
    """A Label from one JSON record; one-line ConfigError naming ``where`` when it is malformed."""
    if not isinstance(record, dict):
        raise ConfigError(f"{where}: expected an object, got {type(record).__name__}")
    episode, start, stop = record.get("episode"), record.get("start"), record.get("stop")
    verdict = record.get("label")
    if not isinstance(episode, int) or isinstance(episode, bool) or episode < 0:
        raise ConfigError(f"{where}: 'episode' must be an episode id (an integer >= 0), got {episode!r}")
    if verdict not in ("success", "failure"):
        raise ConfigError(f"{where}: 'label' must be 'success' or 'failure', got {verdict!r}")
    if (start is None) != (stop is None):
        raise ConfigError(f"{where}: 'start' and 'stop' are both null (whole episode) or both steps")
    if start is not None:
        ok = all(isinstance(v, int) and not isinstance(v, bool) for v in (start, stop))
        if not ok or not 0 <= start < stop:
            raise ConfigError(f"{where}: expected steps 0 <= start < stop, got start={start!r} stop={stop!r}")
    annotator, time = record.get("annotator", ""), record.get("time", "")
    if not isinstance(annotator, str) or not isinstance(time, str):
        raise ConfigError(f"{where}: 'annotator' and 'time' must be strings")
    return Label(episode=episode, label=verdict, start=start, stop=stop, annotator=annotator, time=time)


def read_labels(path: Path) -> tuple[str, list[Label]]:
    """(the labelled store's path relative to the file's folder, the labels) of a labels file.

    Raises:
        ConfigError: one line naming the file and what is wrong (missing, not JSON, another format or a
            newer version, a malformed record).
    """
    try:
        doc = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise ConfigError(f"labels file {path}: no such file") from None
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise ConfigError(
            f"labels file {path}: cannot be read as JSON ({type(exc).__name__}: {exc})"
        ) from None
    if not isinstance(doc, dict) or doc.get("format") != FORMAT:
        raise ConfigError(f'labels file {path}: not a vlmrl labels file (expected "format": "{FORMAT}")')
    version = doc.get("version")
    if not isinstance(version, int) or version > VERSION:
        raise ConfigError(f"labels file {path}: version {version!r}; this code reads <= {VERSION}")
    records = doc.get("labels")
    if not isinstance(records, list):
        raise ConfigError(f"labels file {path}: 'labels' must be a list")
    store = doc.get("store", "")
    return (store if isinstance(store, str) else ""), [
        parse_label(r, f"labels file {path}: labels[{i}]") for i, r in enumerate(records)
    ]


class LabelFile:
    """The labels of one store, kept in RAM and written back whole (atomically) on every change.

    Thread-safe: the viewer's request threads share one instance.
    """

    def __init__(self, path: Path, store: Path):
        self.path = path
        self.store_name = os.path.relpath(store, path.parent)
        self._lock = threading.Lock()
        self._labels: dict[tuple[int, int | None, int | None], Label] = {}
        if path.exists():
            _, labels = read_labels(path)
            self._labels = {label.key: label for label in labels}

    def all(self) -> list[Label]:
        """Every label, oldest first."""
        with self._lock:
            return sorted(self._labels.values(), key=lambda x: (x.time, x.episode, x.start or -1))

    def of_episode(self, episode: int) -> list[Label]:
        """The labels of one episode, the whole-episode one first, then ranges by start."""
        return sorted(
            (x for x in self.all() if x.episode == episode), key=lambda x: (x.start is not None, x.start or 0)
        )

    def put(self, label: Label) -> Label:
        """Add or replace (same episode and range) a label, stamped now if it has no time; then save."""
        if not label.time:
            label = dataclasses.replace(label, time=now_utc())
        with self._lock:
            self._labels[label.key] = label
            self._save()
        return label

    def remove(self, episode: int, start: int | None, stop: int | None) -> bool:
        """Remove the label of (episode, range); returns whether there was one. Saves."""
        with self._lock:
            found = self._labels.pop((episode, start, stop), None) is not None
            if found:
                self._save()
        return found

    def _save(self) -> None:
        records = sorted(self._labels.values(), key=lambda x: (x.episode, x.start is not None, x.start or 0))
        head = {"format": FORMAT, "version": VERSION, "store": self.store_name}
        lines = ",\n".join(f"  {json.dumps(dataclasses.asdict(x))}" for x in records)  # one record a line
        text = json.dumps(head)[:-1] + ', "labels": [\n' + lines + ("\n" if lines else "") + "]}\n"
        tmp = self.path.with_name(f".{self.path.name}.tmp")
        with open(tmp, "w", encoding="utf-8") as f:
            f.write(text)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, self.path)


def labels_for_store(files: Sequence[Path], store: Path, only_store: bool) -> list[Label]:
    """The labels among ``files`` that belong to ``store``: those of files whose ``store`` entry names it
    (relative to the file's folder), or, when ``only_store`` (one store is being read), every file's."""
    out: list[Label] = []
    for file in files:
        name, labels = read_labels(file)
        names_it = bool(name) and (file.parent / name).resolve() == store.resolve()
        if names_it or only_store:
            out += labels
    return out


def window_targets(
    n_rows: int,
    starts: np.ndarray,
    length: int,
    stride: int,
    labels: Sequence[Label],
    base: np.ndarray | None,
    reverse: bool = False,
) -> np.ndarray | None:
    """Targets (float32, 0 or 1) of an episode's windows from people's labels, or None when nothing
    labels them.

    Args:
        n_rows: the episode's observations (transitions + 1).
        starts: first step of each window; a window has ``length`` frames ``stride`` apart (fewer at the
            episode's end, never past its final observation).
        labels: this episode's labels.
        base: the windows' targets without labels (the success info's), or None when there is none: then
            windows that no label covers get NaN (to be left out).
        reverse: the windows are played backwards (rewound): their last frame is their first step.
    """
    if not labels:
        return None
    starts = np.asarray(starts, np.int64)
    frames = np.minimum(length, -(-(n_rows - starts) // stride))
    last = starts + (frames - 1) * stride
    judged = starts if reverse else last  # the observation the window's score judges
    span_end = np.minimum(starts + length * stride, n_rows - 1)
    out = np.full(len(starts), np.nan, np.float32) if base is None else np.asarray(base, np.float32).copy()
    whole = [x for x in labels if x.whole_episode]
    if whole and whole[-1].label == "failure":
        out[:] = 0.0
    elif whole:
        # As a success info on the final observation (scorer fit's rule for it): a forward window is
        # positive when its score's span reaches the end, a rewound one when its last frame is the end.
        reached_by = starts if reverse else span_end
        out[:] = reached_by >= n_rows - 1
    for x in sorted((x for x in labels if not x.whole_episode), key=lambda x: x.time):
        assert x.start is not None and x.stop is not None
        inside = (judged >= x.start) & (judged < x.stop)
        out[inside] = 1.0 if x.label == "success" else 0.0
    return out
