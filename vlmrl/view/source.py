"""The episodes ``vlmrl view`` shows: one store opened for reading, summarised and read an episode at a time.

``locate`` turns what the user typed into a store: a vlmrl zarr store (``vlmrl record``'s
``episodes.zarr``, a run's ``buffer.zarr``), a LeRobotDataset folder (imported into RAM, with the scores
``vlmrl score`` wrote beside it), or a run directory (its ``buffer.zarr``, ``episodes.zarr`` or the
in-RAM buffer its checkpoint saved). A zarr store is opened in place with the buffer's own reader
(``ZarrStorage``, damage recorded rather than fatal): small arrays live in RAM, frames are read per
request with one ``pread`` per frame, so a store of any size opens in the time its small arrays take.
Nothing is written into the store.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

import numpy as np

from buffer import BufferConfig, make_buffer
from buffer.errors import BufferError
from buffer.metadata import read_store_metadata
from buffer.spec import build_specs
from buffer.storage.memory import MemoryStorage
from vlmrl.errors import ConfigError
from vlmrl.loop.checkpoint import load_torch_file
from vlmrl.scorers.labels import SUFFIX, labels_path_for

RUN_STORES = ("buffer.zarr", "episodes.zarr")
"""Stores a run directory may hold: a training/fine-tuning run's buffer, a recording's episodes."""
SNAPSHOT = Path("checkpoint") / "buffer"
"""Where a run with an in-RAM buffer saves it (``vlmrl.loop.checkpoint``: checkpoint/buffer/meta.json)."""
CHECKPOINT_STATE = Path("checkpoint") / "state.pt"
"""A run's checkpoint (``vlmrl.loop.checkpoint``), whose buffer state holds PER's TD priorities."""
PRIORITY = "|TD|+eps (checkpoint)"

Kind = Literal["zarr", "lerobot", "snapshot"]


@dataclass(frozen=True)
class Located:
    """Where the episodes are and where their labels go."""

    kind: Kind
    store: Path
    """The zarr store, LeRobotDataset folder or saved in-RAM buffer."""
    labels: Path
    """The labels file beside it (``vlmrl.scorers.labels``)."""
    run_dir: Path | None = None
    """The run directory the store was found in, if any (its config.json gives the clip settings)."""


def locate(path: Path) -> Located:
    """The store at or in ``path``.

    Raises:
        ConfigError: nothing is there, or nothing there is an episode store (one line naming the path and
            what was looked for).
    """
    if not path.exists():
        raise ConfigError(f"{path}: no such file or directory")
    if (path / "zarr.json").is_file():
        return Located("zarr", path, labels_path_for(path))
    if (path / "meta" / "info.json").is_file():
        return Located("lerobot", path, labels_path_for(path))
    if path.is_dir():
        for name in RUN_STORES:
            if (path / name / "zarr.json").is_file():
                return Located("zarr", path / name, labels_path_for(path / name), run_dir=path)
        if (path / SNAPSHOT / "meta.json").is_file():
            # The snapshot folder is replaced by every checkpoint: the labels live in the run directory.
            return Located("snapshot", path / SNAPSHOT, path / f"buffer{SUFFIX}", run_dir=path)
    raise ConfigError(
        f"{path}: not an episode store: expected a vlmrl zarr store (zarr.json), a LeRobotDataset "
        f"(meta/info.json) or a run directory holding {' or '.join(RUN_STORES)} or {SNAPSHOT}/"
    )


def clip_settings(located: Located) -> tuple[int, int] | None:
    """(clip_length, clip_stride) a run directory's config.json recorded for its buffer, if any."""
    if located.run_dir is None:
        return None
    try:
        buffer = json.loads((located.run_dir / "config.json").read_text()).get("buffer", {})
        return int(buffer["clip_length"]), int(buffer["clip_stride"])
    except (OSError, ValueError, KeyError, TypeError, AttributeError):
        return None


def _open_storage(located: Located) -> tuple[Any, dict[str, Any], list[int] | None, dict[int, str]]:
    """(storage, the recording's attributes, dataset episode index of each episode or None, episodes
    left out on import -> why)."""
    if located.kind == "zarr":
        from buffer.storage.zarr_store import ZarrStorage

        meta = read_store_metadata(located.store)  # one-line BufferError for malformed metadata
        storage = ZarrStorage.open_or_create(
            str(located.store),
            build_specs(meta.obs_spec, meta.action_dim, meta.info_keys),
            capacity=meta.capacity,
            frame_cache_bytes=32 * 2**20,
            on_damage="record",
        )
        return storage, dict(meta.record), None, {}
    if located.kind == "snapshot":
        storage = MemoryStorage.load(located.store)
        return storage, dict(getattr(storage, "attrs", {}) or {}), None, {}
    from buffer.io import LeRobotReader, import_lerobot, lerobot_spec

    obs_spec, action_dim, info_keys = lerobot_spec(located.store)
    reader = LeRobotReader(located.store)
    capacity = int(reader.info.get("total_frames", 0)) + 16
    buffer = make_buffer(
        BufferConfig(storage="memory", capacity_steps=max(capacity, 2)), obs_spec, action_dim, info_keys
    )
    index: list[int] = []
    skipped: dict[int, str] = {}
    import_lerobot(located.store, buffer, skipped=skipped, imported=index)
    _load_lerobot_scores(located.store, buffer.storage, index)
    attrs = {"task_description": reader.first_task(), "control_hz": reader.fps}
    return buffer.storage, attrs, index, skipped


def _load_lerobot_scores(root: Path, storage: Any, index: list[int]) -> None:
    """The sidecar scores ``vlmrl score`` writes beside a LeRobotDataset (``vlmrl_scores/<id>.parquet``:
    episode_index, frame_index, score, aux_reward) into the in-RAM storage's columns."""
    folder = root / "vlmrl_scores"
    if not folder.is_dir():
        return
    import pyarrow.parquet as pq

    table = storage.episodes()
    start_of = {dataset_id: table.bounds(table.first + i)[0] for i, dataset_id in enumerate(index)}
    for file in sorted(folder.glob("*.parquet")):
        try:
            data = pq.read_table(file).to_pydict()
        except Exception:
            continue  # a sidecar that cannot be read leaves that scorer out, not the dataset
        rows = [start_of[e] + f for e, f in zip(data["episode_index"], data["frame_index"]) if e in start_of]
        keep = [e in start_of for e in data["episode_index"]]
        for column, name in (("score", "scores"), ("aux_reward", "aux_reward")):
            values = np.asarray([v for v, k in zip(data[column], keep) if k], np.float32)
            storage.write_column(f"{name}/{file.stem}", np.asarray(rows, np.int64), values)


def checkpoint_priorities(run_dir: Path) -> np.ndarray | None:
    """PER's per-row |TD| + eps (by ring position, NaN outside the rows the checkpoint knew) from a run's
    checkpoint, or None when it has none (no checkpoint, or a sampler without TD priorities)."""
    state_file = run_dir / CHECKPOINT_STATE
    if not state_file.is_file():
        return None
    try:  # the run's own checkpoint: it holds numpy arrays, so not weights_only
        state = load_torch_file(state_file)
        buffer = state["buffer"]
        sampler = buffer["sampler"]
    except Exception:
        return None
    sampler = sampler.get("online", sampler) if isinstance(sampler, dict) else {}
    td = sampler.get("td_priority") if isinstance(sampler, dict) else None
    if td is None:
        return None
    out = np.asarray(td, np.float64).copy()
    first, stop = buffer.get("live_rows", (0, 0))
    known = np.zeros(len(out), bool)
    known[np.arange(first, stop) % len(out)] = True
    out[~known | (out <= 0)] = np.nan  # rows written after the checkpoint, and never-sampled ones
    return out


def _jsonable(values: np.ndarray) -> list[float | None]:
    """Floats rounded to 5 significant digits, NaN and inf as null."""
    out = np.asarray(values, np.float64)
    return [None if not np.isfinite(v) else float(f"{v:.5g}") for v in out.tolist()]


class EpisodeStore:
    """One store, read-only, shared by the viewer's request threads (reads are serialised).

    Episode ids are the store's own (a LeRobotDataset's ``episode_index``): the ids labels are keyed by.
    """

    def __init__(self, located: Located, clip_length: int, clip_stride: int):
        self.located = located
        self.clip_length, self.clip_stride = clip_length, clip_stride
        self._lock = threading.RLock()
        self._mtime = self._store_mtime()
        self.storage, self.attrs, self._dataset_index, self.skipped = _open_storage(located)
        self.specs = dict(self.storage.specs)
        self.cameras = [k.removeprefix("pixels/") for k, s in self.specs.items() if s.is_frame]
        self.frames_per_shard = self._frames_per_shard()
        self._priority: np.ndarray | None = None
        self.priority_loaded = threading.Event()
        if located.run_dir is not None and (located.run_dir / CHECKPOINT_STATE).is_file():
            # torch and a checkpoint take seconds to load: not before the first page.
            threading.Thread(target=self._load_priorities, name="view-priorities", daemon=True).start()
        else:
            self.priority_loaded.set()

    def _load_priorities(self) -> None:
        try:
            assert self.located.run_dir is not None
            priority = checkpoint_priorities(self.located.run_dir)
            if priority is not None and len(priority) == self.storage.capacity:
                self._priority = priority
        finally:
            self.priority_loaded.set()

    # ---- what the store holds ---------------------------------------------------------------------

    @property
    def task(self) -> str:
        """The recorded task sentence ("" when none was stored)."""
        value = self.attrs.get("task_description", "")
        return value if isinstance(value, str) else ""

    @property
    def control_hz(self) -> float:
        """The recorded control rate (10 Hz when none was stored)."""
        value = self.attrs.get("control_hz")
        return float(value) if isinstance(value, int | float) and value > 0 else 10.0

    @property
    def damaged(self) -> dict[int, str]:
        """Episode id -> what is wrong, for the episodes the store found damaged (when opened or read)."""
        damaged = getattr(self.storage, "damaged", None)
        return {self.episode_id(e): why for e, why in (damaged() if callable(damaged) else {}).items()}

    def scorers(self) -> list[str]:
        """Scorer ids with stored scores or aux rewards."""
        ids = {c.split("/", 1)[1] for c in self.storage.columns() if c.startswith(("scores/", "aux_reward/"))}
        return sorted(ids)

    def frame_shape(self, camera: str) -> tuple[int, ...]:
        """(H, W, 3) of a camera's frames."""
        return tuple(self.specs[f"pixels/{camera}"].shape)

    def _frames_per_shard(self) -> int:
        try:
            doc = json.loads((self.located.store / "zarr.json").read_text())
            return int(doc["attributes"]["vlmrl_buffer"]["frames_per_shard"])
        except (OSError, ValueError, KeyError, TypeError):
            return 1 << 30  # RAM: no shard boundaries to respect

    def _store_mtime(self) -> float:
        try:
            return (self.located.store / "zarr.json").stat().st_mtime if self.located.kind == "zarr" else 0.0
        except OSError:
            return 0.0

    def refresh(self) -> bool:
        """Reopen a zarr store that a writer committed to since it was opened; returns whether it did."""
        if self.located.kind != "zarr" or self._store_mtime() == self._mtime:
            return False
        with self._lock:
            old = self.storage
            self._mtime = self._store_mtime()
            self.storage, self.attrs, self._dataset_index, self.skipped = _open_storage(self.located)
            old.close()
        return True

    # ---- episodes ---------------------------------------------------------------------------------

    def episode_ids(self) -> list[int]:
        """Ids of the live episodes, oldest first."""
        table = self.storage.episodes()
        return [self.episode_id(e) for e in range(table.first, table.first + table.count)]

    def episode_id(self, internal: int) -> int:
        """The store's id of a storage episode (differs for a LeRobotDataset)."""
        if self._dataset_index is None:
            return internal
        return self._dataset_index[internal - self.storage.episodes().first]

    def _internal(self, episode: int) -> int:
        table = self.storage.episodes()
        if self._dataset_index is None:
            internal = episode
        else:
            try:
                internal = table.first + self._dataset_index.index(episode)
            except ValueError:
                internal = -1
        if not table.first <= internal < table.first + table.count:
            raise KeyError(f"episode {episode} is not in {self.located.store}")
        return internal

    def rows(self, episode: int) -> tuple[int, int]:
        """Global [start, end) rows of an episode (end - start = steps + 1).

        Raises:
            KeyError: no such live episode.
        """
        return self.storage.episodes().bounds(self._internal(episode))

    @contextmanager
    def _reading(self) -> Iterator[Any]:
        with self._lock:
            yield self.storage

    def summaries(self) -> list[dict[str, Any]]:
        """Per episode: id, steps, success (None: not stored), damage, and per scorer the mean and max of its
        clip scores (the score at each clip's first step, ``buffer.clips``' back-to-back clips)."""
        with self._reading() as storage:
            table = storage.episodes()
            ids = list(range(table.first, table.first + table.count))
            if not ids:
                return []
            bounds = np.array([table.bounds(e) for e in ids], np.int64)
            damaged = self.damaged
            span = self.clip_length * self.clip_stride
            success = self._per_episode(storage, "info/success", bounds, lambda v: bool(np.any(v > 0)))
            columns = {
                sid: self._per_episode(
                    storage,
                    f"scores/{sid}",
                    np.c_[bounds[:, 0], bounds[:, 1] - 1],  # scores are per transition
                    lambda v: _clip_stats(v, span),
                )
                for sid in self.scorers()
                if f"scores/{sid}" in storage.columns()
            }
            out = []
            for i, e in enumerate(ids):
                eid = self.episode_id(e)
                row: dict[str, Any] = {
                    "id": eid,
                    "steps": int(bounds[i, 1] - bounds[i, 0] - 1),
                    "success": success[i],
                    "damaged": damaged.get(eid),
                    "scores": {sid: stats[i] for sid, stats in columns.items()},
                }
                out.append(row)
            return out

    @staticmethod
    def _per_episode(storage: Any, name: str, bounds: np.ndarray, reduce: Any) -> list[Any]:
        """``reduce`` of array ``name`` over each episode's rows [start, end); None where it is not stored
        or cannot be read (a damaged chunk fails that episode only)."""
        if name not in storage.specs and name not in storage.columns():
            return [None] * len(bounds)
        try:
            values = storage.read(name, np.arange(bounds[0, 0], bounds[-1, 1]))
            offsets = bounds - bounds[0, 0]
            return [reduce(values[a:b]) for a, b in offsets]
        except BufferError:
            out = []
            for a, b in bounds:
                try:
                    out.append(reduce(storage.read(name, np.arange(a, b))))
                except BufferError:
                    out.append(None)
            return out

    def series(self, episode: int) -> dict[str, Any]:
        """Everything plotted for one episode, per step: {"steps", "groups": {group: {name: values}},
        "errors": {array: problem}}. Observation-valued arrays have steps + 1 values (the last is the final
        observation), transition-valued ones (reward, action, scores, aux reward) steps values. An array
        that cannot be read is named in "errors" and left out; the rest is there."""
        with self._reading() as storage:
            start, end = self.rows(episode)
            rows, steps = np.arange(start, end), np.arange(start, end - 1)
            groups: dict[str, dict[str, list[float | None]]] = {
                "scores": {},
                "aux_reward": {},
                "reward": {},
                "joints": {},
                "actions": {},
                "info": {},
                "priority": {},
            }
            errors: dict[str, str] = {}

            def read(name: str, which: np.ndarray) -> np.ndarray | None:
                try:
                    return np.asarray(storage.read(name, which))
                except BufferError as exc:
                    errors[name] = str(exc)
                    return None

            for column in storage.columns():
                prefix, sid = column.split("/", 1)
                values = read(column, steps)
                if values is not None:
                    groups[prefix][sid] = _jsonable(values)
            if self._priority is not None:
                groups["priority"][PRIORITY] = _jsonable(self._priority[steps % storage.capacity])
            reward = read("reward", steps)
            if reward is not None:
                groups["reward"]["reward"] = _jsonable(reward)
            action = read("action", steps)
            if action is not None:
                names = self._names(self.attrs.get("action_keys"), action.shape[-1], "action")
                for j, name in enumerate(names):
                    groups["actions"][name] = _jsonable(action.reshape(len(steps), -1)[:, j])
            for key, spec in self.specs.items():
                if spec.is_frame or key in ("action", "reward", "terminated", "truncated"):
                    continue
                values = read(key, rows)
                if values is None:
                    continue
                if key.startswith("info/"):
                    groups["info"][key.removeprefix("info/")] = _jsonable(values.astype(np.float64))
                    continue
                flat = values.reshape(len(rows), -1).astype(np.float64)
                names = self._names(None, flat.shape[1], key) if flat.shape[1] > 1 else [key]
                for j, name in enumerate(names):
                    groups["joints"][name] = _jsonable(flat[:, j])
            return {
                "id": episode,
                "steps": int(end - start - 1),
                "groups": {g: v for g, v in groups.items() if v},
                "errors": errors,
                "damaged": self.damaged.get(episode),
            }

    @staticmethod
    def _names(given: Any, n: int, prefix: str) -> list[str]:
        if isinstance(given, list) and len(given) == n and all(isinstance(g, str) for g in given):
            return list(given)
        return [f"{prefix}[{j}]" for j in range(n)]

    def read_frames(self, camera: str, rows: np.ndarray) -> np.ndarray:
        """uint8 [len(rows), H, W, 3] frames of a camera (BufferError: damaged or unreadable)."""
        with self._reading() as storage:
            return np.asarray(storage.read(f"pixels/{camera}", rows))

    def close(self) -> None:
        """Release the store's files."""
        with self._lock:
            self.storage.close()


def _clip_stats(per_step: np.ndarray, span: int) -> dict[str, float | None]:
    """Mean and max of the clip scores of an episode's per-step score column (the value at each clip's
    first step); None for an unscored episode."""
    clips = np.asarray(per_step, np.float64)[::span]
    clips = clips[np.isfinite(clips)]
    if not len(clips):
        return {"mean": None, "max": None}
    return {"mean": float(f"{clips.mean():.4g}"), "max": float(f"{clips.max():.4g}")}
