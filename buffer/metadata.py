"""An episode store's metadata, read and validated in one place.

A vlmrl zarr store keeps its metadata in the root group's ``zarr.json`` (zarr v3):
``attributes.vlmrl_buffer`` (schema version, capacity, per-row array specs, frame codec and, for the
lossy ``jpeg``, its ``frame_quality``, the env spec the buffer was built for: ``obs_spec``,
``action_dim``, ``info_keys``) and, for recordings, ``attributes.vlmrl_record``
(task description, control rate, robot and sim settings). Pipelines read it through
``read_store_metadata`` instead of parsing attributes by hand, so every malformed store (truncated
JSON, another zarr format, a schema version that is not a number, missing keys) fails with one
``BufferError`` line naming the file and the field, before any array is opened.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, get_args

import numpy as np

from buffer.errors import BufferError
from buffer.spec import SCHEMA_VERSION, ObsSpec
from buffer.storage.shard_format import LOSSY_CODECS, FrameCodec

ROOT_FILE = "zarr.json"
"""The zarr v3 root group's metadata file."""


@dataclass(frozen=True, kw_only=True)
class StoreMetadata:
    """What a vlmrl episode store says about itself."""

    path: Path
    """The store's directory."""
    schema_version: int
    """Version of the on-disk layout (``buffer.spec.SCHEMA_VERSION`` when written by this code)."""
    capacity: int
    """Rows the store's ring holds."""
    obs_spec: ObsSpec
    """Observation key -> (per-row shape, dtype), as the env declared it."""
    action_dim: int
    """Length of one action."""
    info_keys: tuple[str, ...]
    """Per-step info values stored as ``info/<key>`` (``success``, ``progress``, ...)."""
    record: dict[str, Any] = field(default_factory=dict)
    """The ``vlmrl_record`` attributes of a recording (empty for a training buffer)."""
    frame_codec: str = "none"
    """How frames are encoded (``BufferConfig.frame_codec``); ``jpeg`` is lossy."""
    frame_quality: int | None = None
    """JPEG quality of a lossy ``frame_codec``; None for lossless codecs."""

    @property
    def cameras(self) -> list[str]:
        """Camera names of the stored ``pixels/<camera>`` keys, in store order."""
        return [k.removeprefix("pixels/") for k in self.obs_spec if k.startswith("pixels/")]

    @property
    def task_description(self) -> str:
        """The recorded task sentence (the source of prompts), empty when none was stored."""
        value = self.record.get("task_description", "")
        return value if isinstance(value, str) else ""

    @property
    def control_hz(self) -> float | None:
        """The recorded control rate, None when none was stored."""
        value = self.record.get("control_hz")
        return float(value) if isinstance(value, int | float) and not isinstance(value, bool) else None


def is_zarr_store(path: Path | str) -> bool:
    """Whether ``path`` is a directory with a zarr v3 root file (it may still be malformed)."""
    return (Path(path) / ROOT_FILE).is_file()


def check_existing_store(path: Path | str) -> StoreMetadata | None:
    """Validate a local store before it is reopened: its metadata when ``path`` holds a vlmrl store,
    None when there is nothing to check (no ``zarr.json`` yet, or a group without ``vlmrl_buffer``
    attributes that the storage will create or refuse itself).

    Raises:
        BufferError: as ``read_store_metadata`` for a malformed store.
    """
    file = Path(path) / ROOT_FILE
    if not file.is_file():
        return None
    try:
        doc = json.loads(file.read_text(encoding="utf-8"))
        has_meta = not isinstance(doc, dict) or "vlmrl_buffer" in (doc.get("attributes") or {})
    except (OSError, UnicodeDecodeError, json.JSONDecodeError, AttributeError):
        has_meta = True  # let the reader name what is wrong
    return read_store_metadata(path) if has_meta else None


def read_store_metadata(path: Path | str) -> StoreMetadata:
    """Read and validate a vlmrl zarr store's root metadata (no array is opened).

    Raises:
        BufferError: one line naming the file and what is wrong: missing or unreadable ``zarr.json``,
            invalid (e.g. truncated) JSON, a ``zarr_format`` other than 3, a node that is not a group,
            a group that is not a vlmrl store, a ``schema_version`` that is not an integer or is newer
            than this code reads, and missing or mistyped ``vlmrl_buffer`` / ``vlmrl_record`` fields.
    """
    root = Path(path)
    file = root / ROOT_FILE
    try:
        text = file.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise BufferError(f"{root}: no {ROOT_FILE}; not a zarr v3 store") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise BufferError(f"{file}: cannot be read ({type(exc).__name__}: {exc})") from None
    doc = _zarr_node(file, text, ("group",))
    attributes = doc.get("attributes", {})
    if not isinstance(attributes, dict):
        raise BufferError(f"{file}: 'attributes' must be an object, got {type(attributes).__name__}")
    buffer_meta = attributes.get("vlmrl_buffer")
    if buffer_meta is None:
        raise BufferError(
            f"{root}: a zarr group that is not a vlmrl episode store (no vlmrl_buffer attribute)"
        )
    where = f"{file}: vlmrl_buffer"
    _require_object(buffer_meta, where)
    version = _require_int(buffer_meta, "schema_version", where, minimum=1)
    if version > SCHEMA_VERSION:
        raise BufferError(
            f"{where}.schema_version: written by buffer schema {version}; this code reads <= {SCHEMA_VERSION}"
        )
    capacity = _require_int(buffer_meta, "capacity", where, minimum=1)
    env = _require_key(buffer_meta, "env", where)
    _require_object(env, f"{where}.env")
    obs_spec = _obs_spec(_require_key(env, "obs_spec", f"{where}.env"), f"{where}.env.obs_spec")
    action_dim = _require_int(env, "action_dim", f"{where}.env", minimum=0)
    info_keys = _require_key(env, "info_keys", f"{where}.env")
    if not isinstance(info_keys, list) or not all(isinstance(k, str) for k in info_keys):
        raise BufferError(f"{where}.env.info_keys must be a list of strings, got {info_keys!r}")
    frame_codec = buffer_meta.get("frame_codec", "none")
    if frame_codec not in get_args(FrameCodec):
        raise BufferError(
            f"{where}.frame_codec: {frame_codec!r} is not a frame codec this code reads "
            f"(one of {list(get_args(FrameCodec))})"
        )
    quality = None
    if frame_codec in LOSSY_CODECS:
        quality = _require_int(buffer_meta, "frame_quality", where, minimum=1)
        if quality > 100:
            raise BufferError(f"{where}.frame_quality must be <= 100, got {quality}")
    _check_arrays(root)
    record = attributes.get("vlmrl_record") or {}
    if not isinstance(record, dict):
        raise BufferError(f"{file}: vlmrl_record must be an object, got {type(record).__name__}")
    description = record.get("task_description", "")
    if not isinstance(description, str):
        raise BufferError(f"{file}: vlmrl_record.task_description must be a string, got {description!r}")
    return StoreMetadata(
        path=root,
        schema_version=version,
        capacity=capacity,
        obs_spec=obs_spec,
        action_dim=action_dim,
        info_keys=tuple(info_keys),
        record=dict(record),
        frame_codec=frame_codec,
        frame_quality=quality,
    )


def _zarr_node(file: Path, text: str, node_types: tuple[str, ...]) -> dict[str, Any]:
    """The parsed ``zarr.json`` of a v3 node of one of ``node_types``, or a one-line BufferError."""
    try:
        doc = json.loads(text)
    except json.JSONDecodeError as exc:
        raise BufferError(
            f"{file}: not valid JSON, truncated or corrupt ({exc.msg}, line {exc.lineno} column {exc.colno})"
        ) from None
    if not isinstance(doc, dict):
        raise BufferError(f"{file}: expected a JSON object, got {type(doc).__name__}")
    fmt = doc.get("zarr_format")
    if fmt != 3 or isinstance(fmt, bool):
        raise BufferError(f"{file}: zarr_format {fmt!r}; vlmrl stores are zarr v3 (zarr_format 3)")
    if doc.get("node_type") not in node_types:
        raise BufferError(f"{file}: node_type {doc.get('node_type')!r}; expected {' or '.join(node_types)}")
    return doc


def _check_arrays(root: Path) -> None:
    """Every array and subgroup's ``zarr.json`` under the store parses as a zarr v3 node (zarr-python
    would otherwise raise a JSON traceback from inside its event loop when the array is opened)."""
    for file in sorted(root.rglob(ROOT_FILE)):
        if file.parent == root:
            continue
        try:
            text = file.read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError) as exc:
            raise BufferError(f"{file}: cannot be read ({type(exc).__name__}: {exc})") from None
        _zarr_node(file, text, ("array", "group"))


def _require_object(value: Any, where: str) -> None:
    if not isinstance(value, dict):
        raise BufferError(f"{where} must be an object, got {type(value).__name__}")


def _require_key(obj: dict[str, Any], key: str, where: str) -> Any:
    if key not in obj:
        raise BufferError(f"{where}.{key} is missing")
    return obj[key]


def _require_int(obj: dict[str, Any], key: str, where: str, minimum: int) -> int:
    value = _require_key(obj, key, where)
    if not isinstance(value, int) or isinstance(value, bool):
        raise BufferError(f"{where}.{key} must be an integer, got {value!r}")
    if value < minimum:
        raise BufferError(f"{where}.{key} must be >= {minimum}, got {value}")
    return value


def _obs_spec(raw: Any, where: str) -> dict[str, tuple[tuple[int, ...], np.dtype]]:
    if not isinstance(raw, dict):
        raise BufferError(f"{where} must be an object of key -> [shape, dtype], got {type(raw).__name__}")
    spec: dict[str, tuple[tuple[int, ...], np.dtype]] = {}
    for key, entry in raw.items():
        ok = isinstance(entry, list | tuple) and len(entry) == 2 and isinstance(entry[0], list | tuple)
        if not ok or not all(isinstance(n, int) and not isinstance(n, bool) and n >= 0 for n in entry[0]):
            raise BufferError(
                f"{where}[{key!r}] must be [shape (non-negative integers), dtype], got {entry!r}"
            )
        try:
            dtype = np.dtype(entry[1])
        except TypeError:
            raise BufferError(f"{where}[{key!r}]: {entry[1]!r} is not a numpy dtype") from None
        spec[key] = (tuple(entry[0]), dtype)
    return spec
