"""The schema of a vlmrl episode store's metadata, checked in one place whenever a store is opened.

A store is a zarr v3 hierarchy; these are the files and fields it is checked against (``validate_store``),
before zarr-python or the fast readers touch an array:

- the root ``zarr.json`` (a group node), ``attributes``:
  - ``vlmrl_buffer``: ``schema_version`` (int, 1..``SCHEMA_VERSION``), ``capacity`` (int >= 2: rows of
    the ring), ``frames_per_shard`` (int, 1..min(capacity, ``MAX_FRAMES_PER_SHARD``)), ``frame_codec``
    (a ``FrameCodec``), ``frame_quality`` (int 1..100; required by a lossy codec), ``specs`` (array name
    -> [row shape, dtype], exactly what ``env`` makes through ``build_specs``), ``env`` (``obs_spec``:
    key -> [shape, dtype], ``action_dim`` >= 1, ``info_keys``: distinct names) and ``layout`` (text);
  - ``commit``, the commit record (``buffer.storage.zarr_store``): ``first_episode``, ``first_row``,
    ``num_episodes`` (ints, ``first_episode <= num_episodes``, at most ``capacity // 2`` live episodes,
    ``first_row`` 0 until an episode was evicted) and ``inflight`` (null or [start row, rows]);
  - ``vlmrl_record`` (a recording's description, optional): ``task_description``, ``control_hz``,
    ``robot_type``, ``action_keys`` (one per action value), ``action_mode``, ``cameras``,
    ``state_names`` (one per ``state`` value), ``sim_config``, ``from_run``, each of its type when
    present; other keys are kept as they are;
- each array's ``zarr.json`` (``specs``' arrays, ``episode_ends`` and the ``scores/<id>`` and
  ``aux_reward/<id>`` columns): shape, data type, chunk grid, chunk key encoding, fill value, codecs
  (frames: the sharding codec with one frame per inner chunk, the index first, the chain of
  ``frame_codec``) exactly as ``ZarrStorage`` creates them (``expected_array_document``), so the fast
  readers' assumptions hold; a spelling zarr-python reads as the same metadata is accepted;
- the groups on the way (``pixels``, ``info``, ``scores``, ``aux_reward``): group nodes.

Once ``episode_ends`` is read, ``check_episode_ends`` holds the commit record against it: every listed
episode ends after it starts, ``first_row`` is where the first live episode starts, the live rows and
the episode in flight fit the ring. Each violation is one ``BufferError`` line naming the file, the
field and its value.
"""

from __future__ import annotations

import copy
import dataclasses
import functools
import json
import math
import re
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, get_args

import numpy as np

from buffer.errors import BufferError
from buffer.spec import SCHEMA_VERSION, ArraySpec, ObsSpec, build_specs
from buffer.storage.protocol import column_fill
from buffer.storage.shard_format import (
    LOSSY_CODECS,
    MAX_FRAMES_PER_SHARD,
    FrameCodec,
    sharding_codec,
)

ROOT_FILE = "zarr.json"
"""A zarr v3 node's metadata file."""
SMALL_CHUNK_ROWS = 4096
"""Rows per chunk of the arrays held in RAM (``episode_ends``, columns, state, action ...)."""
COLUMN_GROUPS = ("scores", "aux_reward")
"""Groups whose arrays are mutable per-row columns (``scores/<scorer id>``, ``aux_reward/<scorer id>``)."""
MAX_ROW = 2**62
"""Largest global row or episode number a record may hold (int64 arithmetic on it stays exact)."""
_NAME = re.compile(r"[A-Za-z0-9_.\-]+")
_MISSING = object()


@dataclass(frozen=True)
class CommitRecord:
    """The commit record: live episodes ``first_episode..num_episodes - 1`` starting at global row
    ``first_row``, and the episode being written (``inflight``: start row, rows), if any."""

    first_episode: int
    first_row: int
    num_episodes: int
    inflight: tuple[int, int] | None

    def to_json(self) -> dict[str, Any]:
        """The record as the root ``zarr.json`` stores it."""
        return {
            "first_episode": self.first_episode,
            "first_row": self.first_row,
            "num_episodes": self.num_episodes,
            "inflight": list(self.inflight) if self.inflight else None,
        }


@dataclass(frozen=True, kw_only=True)
class StoreLayout:
    """A store's metadata after validation."""

    root_file: str
    """Where the root metadata lives (for messages)."""
    schema_version: int
    capacity: int
    frames_per_shard: int
    frame_codec: FrameCodec
    frame_quality: int | None
    """JPEG quality of a lossy ``frame_codec``; None for the lossless ones."""
    obs_spec: dict[str, tuple[tuple[int, ...], np.dtype]]
    action_dim: int
    info_keys: tuple[str, ...]
    specs: dict[str, ArraySpec]
    """Every per-row array (``build_specs`` of the env spec)."""
    commit: CommitRecord
    record: dict[str, Any]
    """``vlmrl_record`` (empty for a training buffer)."""
    columns: tuple[str, ...]
    """The stored ``scores/<id>`` and ``aux_reward/<id>`` columns."""


class MetadataReader:
    """Reads a store's metadata files by key (``"zarr.json"``, ``"state/zarr.json"``) and lists groups."""

    location: str

    def read(self, key: str) -> bytes | None:
        """The file's bytes; None when it does not exist."""
        raise NotImplementedError

    def children(self, prefix: str) -> list[str]:
        """Names directly under ``prefix`` other than its ``zarr.json`` (sorted)."""
        raise NotImplementedError

    def name(self, key: str) -> str:
        """The file, for messages."""
        return f"{self.location}/{key}"


class LocalReader(MetadataReader):
    """A store in a local directory."""

    def __init__(self, root: Path):
        self.root = Path(root)
        self.location = str(self.root)

    def read(self, key: str) -> bytes | None:
        try:
            return (self.root / key).read_bytes()
        except (FileNotFoundError, NotADirectoryError):
            return None
        except OSError as exc:
            raise BufferError(f"{self.root / key}: cannot be read ({type(exc).__name__}: {exc})") from None

    def children(self, prefix: str) -> list[str]:
        folder = self.root / prefix
        return sorted(p.name for p in folder.iterdir() if p.name != ROOT_FILE) if folder.is_dir() else []

    def name(self, key: str) -> str:
        return str(self.root / key)


class ZarrStoreReader(MetadataReader):
    """A store reached through a zarr ``Store`` (fsspec URLs)."""

    def __init__(self, store: Any, location: str):
        self.store, self.location = store, location.rstrip("/")

    def read(self, key: str) -> bytes | None:
        from zarr.core.buffer import default_buffer_prototype
        from zarr.core.sync import sync

        try:
            buf = sync(self.store.get(key, prototype=default_buffer_prototype()))
        except Exception as exc:
            raise BufferError(f"{self.name(key)}: cannot be read ({type(exc).__name__}: {exc})") from None
        return None if buf is None else buf.to_bytes()

    def children(self, prefix: str) -> list[str]:
        from zarr.core.sync import sync

        async def listing() -> list[str]:
            return [k async for k in self.store.list_dir(prefix)]

        return sorted(k for k in sync(listing()) if k != ROOT_FILE)


# ------------------------------------------------------------------------------------------ validation
def validate_store(reader: MetadataReader) -> StoreLayout | None:
    """Check every metadata file of the store ``reader`` reads; its layout, or None when the root is a
    zarr v3 group without ``vlmrl_buffer`` attributes (not a vlmrl store, or one not created yet).

    Raises:
        BufferError: one line naming the file, the field and its value.
    """
    file = reader.name(ROOT_FILE)
    data = reader.read(ROOT_FILE)
    if data is None:
        raise BufferError(f"{reader.location}: no {ROOT_FILE}; not a zarr v3 store")
    doc = parse_node(file, data, ("group",))
    attributes = doc.get("attributes", {})
    if not isinstance(attributes, dict):
        raise BufferError(f"{file}: 'attributes' must be an object, got {type(attributes).__name__}")
    if "vlmrl_buffer" not in attributes:
        return None
    layout = _root_layout(file, attributes)
    if layout.frame_codec in LOSSY_CODECS:
        from buffer.storage.jpeg_codec import register_jpeg_codec

        register_jpeg_codec()  # expected documents and zarr-python meet the codec in the metadata
    groups = sorted({n.rsplit("/", 1)[0] for n in layout.specs if "/" in n})
    for group in groups:
        _check_group(reader, group)
    for name, spec in layout.specs.items():
        _check_array(reader, name, _per_row_args(spec, layout), layout)
    _check_array(reader, "episode_ends", episode_ends_args(layout.capacity), layout)
    columns = []
    for group in COLUMN_GROUPS:
        names = reader.children(group)
        if names or reader.read(f"{group}/{ROOT_FILE}") is not None:
            _check_group(reader, group)
        for child in names:
            name = f"{group}/{child}"
            if not _NAME.fullmatch(child):
                raise BufferError(f"{reader.name(name)}: {child!r} is not a column name a store holds")
            _check_array(reader, name, column_args(name, layout.capacity), layout)
            columns.append(name)
    return dataclasses.replace(layout, columns=tuple(columns))


def parse_node(file: str, data: bytes | str, node_types: tuple[str, ...]) -> dict[str, Any]:
    """The parsed ``zarr.json`` of a v3 node of one of ``node_types``, or a one-line BufferError."""
    try:
        text = data.decode("utf-8") if isinstance(data, bytes) else data
        doc = json.loads(text)
    except UnicodeDecodeError as exc:
        raise BufferError(f"{file}: cannot be read (UnicodeDecodeError: {exc})") from None
    except json.JSONDecodeError as exc:
        raise BufferError(
            f"{file}: not valid JSON, truncated or corrupt ({exc.msg}, line {exc.lineno} column {exc.colno})"
        ) from None
    except RecursionError:
        raise BufferError(f"{file}: not valid JSON (nested too deep)") from None
    if not isinstance(doc, dict):
        raise BufferError(f"{file}: expected a JSON object, got {type(doc).__name__}")
    fmt = doc.get("zarr_format")
    if fmt != 3 or isinstance(fmt, bool):
        raise BufferError(f"{file}: zarr_format {fmt!r}; vlmrl stores are zarr v3 (zarr_format 3)")
    if doc.get("node_type") not in node_types:
        raise BufferError(f"{file}: node_type {doc.get('node_type')!r}; expected {' or '.join(node_types)}")
    return doc


def _root_layout(file: str, attributes: dict[str, Any]) -> StoreLayout:
    where = f"{file}: vlmrl_buffer"
    meta = attributes["vlmrl_buffer"]
    _require_object(meta, where)
    version = _int(meta, "schema_version", where, minimum=1)
    if version > SCHEMA_VERSION:
        raise BufferError(
            f"{where}.schema_version: written by buffer schema {version}; this code reads <= {SCHEMA_VERSION}"
        )
    capacity = _int(meta, "capacity", where, minimum=1, maximum=2**40)
    if capacity < 2:
        raise BufferError(f"{where}.capacity must be >= 2 rows, got {capacity}")
    env = _require_key(meta, "env", where)
    _require_object(env, f"{where}.env")
    obs_spec = _obs_spec(_require_key(env, "obs_spec", f"{where}.env"), f"{where}.env.obs_spec")
    action_dim = _int(env, "action_dim", f"{where}.env", minimum=1, maximum=2**20)
    info_keys = _require_key(env, "info_keys", f"{where}.env")
    if not isinstance(info_keys, list) or not all(isinstance(k, str) for k in info_keys):
        raise BufferError(f"{where}.env.info_keys must be a list of strings, got {info_keys!r}")
    bad = [k for k in info_keys if not _NAME.fullmatch(k) or k in (".", "..")]
    if bad or len(set(info_keys)) != len(info_keys):
        raise BufferError(
            f"{where}.env.info_keys must be distinct names (letters, digits, _ . -), got {info_keys!r}"
        )
    try:
        specs = build_specs(obs_spec, action_dim, info_keys)
    except BufferError as exc:
        raise BufferError(f"{where}.env: {exc}") from None
    _check_specs(_require_key(meta, "specs", where), specs, f"{where}.specs")
    codec = _require_key(meta, "frame_codec", where)
    if not isinstance(codec, str) or codec not in get_args(FrameCodec):
        raise BufferError(
            f"{where}.frame_codec: {codec!r} is not a frame codec this code reads "
            f"(one of {list(get_args(FrameCodec))})"
        )
    quality = None
    if codec in LOSSY_CODECS or "frame_quality" in meta:
        quality = _int(meta, "frame_quality", where, minimum=1, maximum=100)
        if codec not in LOSSY_CODECS:
            quality = None  # a lossless codec has no quality; the field is ignored
    frames_per_shard = _int(meta, "frames_per_shard", where, minimum=1, maximum=MAX_FRAMES_PER_SHARD)
    if frames_per_shard > capacity:
        raise BufferError(f"{where}.frames_per_shard {frames_per_shard} exceeds the capacity {capacity}")
    layout_text = meta.get("layout", "")
    if not isinstance(layout_text, str):
        raise BufferError(f"{where}.layout must be text, got {layout_text!r}")
    commit = _commit_record(
        _require_key(attributes, "commit", f"{file}: attributes"), f"{file}: commit", capacity
    )
    record = _record(attributes.get("vlmrl_record", {}), f"{file}: vlmrl_record", action_dim, obs_spec)
    return StoreLayout(
        root_file=file,
        schema_version=version,
        capacity=capacity,
        frames_per_shard=frames_per_shard,
        frame_codec=codec,  # type: ignore[arg-type]
        frame_quality=quality,
        obs_spec=obs_spec,
        action_dim=action_dim,
        info_keys=tuple(info_keys),
        specs=specs,
        commit=commit,
        record=record,
        columns=(),
    )


def _obs_spec(raw: Any, where: str) -> dict[str, tuple[tuple[int, ...], np.dtype]]:
    if not isinstance(raw, dict):
        raise BufferError(f"{where} must be an object of key -> [shape, dtype], got {type(raw).__name__}")
    spec: dict[str, tuple[tuple[int, ...], np.dtype]] = {}
    for key, entry in raw.items():
        parts = key.split("/")
        if not all(_NAME.fullmatch(p) and p not in (".", "..") for p in parts):
            raise BufferError(f"{where}: {key!r} is not an observation key (names of letters, digits, _ . -)")
        spec[key] = _shape_dtype(entry, f"{where}[{key!r}]")
    return spec


def _shape_dtype(entry: Any, where: str) -> tuple[tuple[int, ...], np.dtype]:
    ok = isinstance(entry, list) and len(entry) == 2 and isinstance(entry[0], list) and len(entry[0]) <= 8
    if not ok or not all(_is_int(n) and 1 <= n <= 2**31 for n in entry[0]):
        raise BufferError(f"{where} must be [shape (positive integers), dtype], got {entry!r}")
    if not isinstance(entry[1], str):
        raise BufferError(f"{where}: {entry[1]!r} is not a numpy dtype")
    try:
        dtype = np.dtype(entry[1])
    except (TypeError, ValueError, SyntaxError):
        raise BufferError(f"{where}: {entry[1]!r} is not a numpy dtype") from None
    if dtype.kind not in "biuf" or dtype.byteorder not in "=|<" or dtype.itemsize > 8:
        raise BufferError(
            f"{where}: {entry[1]!r} is not a dtype a store holds (little-endian bool, int, float)"
        )
    return tuple(entry[0]), dtype


def _check_specs(raw: Any, specs: dict[str, ArraySpec], where: str) -> None:
    """``vlmrl_buffer.specs`` must be what the env spec makes (the arrays are checked against it)."""
    _require_object(raw, where)
    for name, spec in specs.items():
        entry = raw.get(name, _MISSING)
        if entry is _MISSING:
            raise BufferError(f"{where}[{name!r}] is missing; vlmrl_buffer.env makes it {_spec_entry(spec)}")
        if _shape_dtype(entry, f"{where}[{name!r}]") != (spec.shape, spec.dtype):
            raise BufferError(
                f"{where}[{name!r}] is {entry!r} but vlmrl_buffer.env makes it {_spec_entry(spec)}; "
                "one of them is corrupt"
            )
    extra = sorted(set(raw) - set(specs))
    if extra:
        raise BufferError(
            f"{where}[{extra[0]!r}]: an array vlmrl_buffer.env does not make; one of them is corrupt"
        )


def _spec_entry(spec: ArraySpec) -> list[Any]:
    return [list(spec.shape), spec.dtype.str]


def _commit_record(raw: Any, where: str, capacity: int) -> CommitRecord:
    _require_object(raw, where)
    first = _int(raw, "first_episode", where, minimum=0, maximum=MAX_ROW)
    first_row = _int(raw, "first_row", where, minimum=0, maximum=MAX_ROW)
    num = _int(raw, "num_episodes", where, minimum=0, maximum=MAX_ROW)
    if num < first:
        raise BufferError(f"{where}.num_episodes {num} is below first_episode {first}")
    if num - first > capacity // 2:  # each episode holds >= 2 rows; episode_ends has capacity // 2 + 1 slots
        raise BufferError(
            f"{where}.num_episodes {num}: {num - first} live episodes (from first_episode {first}) do not fit "
            f"a ring of {capacity} rows"
        )
    if first == 0 and first_row != 0:
        raise BufferError(
            f"{where}.first_row must be 0 while first_episode is 0 (nothing evicted), got {first_row}"
        )
    inflight = _require_key(raw, "inflight", where)
    if inflight is not None:
        ok = isinstance(inflight, list) and len(inflight) == 2 and all(_is_int(v) for v in inflight)
        if not ok or not (0 <= inflight[0] <= MAX_ROW and 1 <= inflight[1] <= capacity):
            raise BufferError(
                f"{where}.inflight must be null or [start row, rows (1..{capacity})], got {inflight!r}"
            )
        inflight = (inflight[0], inflight[1])
    return CommitRecord(first, first_row, num, inflight)


_RECORD_FIELDS: dict[str, tuple[Callable[[Any], bool], str]] = {
    "task_description": (lambda v: isinstance(v, str), "a string"),
    "control_hz": (
        lambda v: isinstance(v, int | float) and not isinstance(v, bool) and math.isfinite(v) and v > 0,
        "a positive number",
    ),
    "robot_type": (lambda v: v is None or isinstance(v, str), "a string"),
    "action_keys": (
        lambda v: isinstance(v, list) and all(isinstance(k, str) for k in v),
        "a list of strings",
    ),
    "cameras": (lambda v: isinstance(v, list) and all(isinstance(k, str) for k in v), "a list of strings"),
    "state_names": (
        lambda v: isinstance(v, list) and all(isinstance(k, str) for k in v),
        "a list of strings",
    ),
    "action_mode": (
        lambda v: v in ("absolute", "delta", "ee_delta"),
        "one of 'absolute', 'delta', 'ee_delta'",
    ),
    "sim_config": (lambda v: isinstance(v, dict), "an object"),
    "from_run": (lambda v: isinstance(v, str), "a string"),
}


def _record(raw: Any, where: str, action_dim: int, obs_spec: ObsSpec) -> dict[str, Any]:
    if raw is None:
        return {}
    if not isinstance(raw, dict):
        raise BufferError(f"{where} must be an object, got {type(raw).__name__}")
    for key, (valid, expected) in _RECORD_FIELDS.items():
        if key in raw and not valid(raw[key]):
            raise BufferError(f"{where}.{key} must be {expected}, got {_short(raw[key])}")
    keys = raw.get("action_keys")
    if keys is not None and len(keys) != action_dim:
        raise BufferError(
            f"{where}.action_keys names {len(keys)} action values, the store's actions have {action_dim}: {keys!r}"
        )
    names = raw.get("state_names")
    if names is not None and "state" in obs_spec:
        size = int(np.prod(obs_spec["state"][0]))
        if len(names) != size:
            raise BufferError(
                f"{where}.state_names names {len(names)} values, the store's 'state' has {size}"
            )
    return dict(raw)


def _check_group(reader: MetadataReader, group: str) -> None:
    key = f"{group}/{ROOT_FILE}"
    data = reader.read(key)
    if data is None:
        raise BufferError(f"{reader.name(key)} is missing (the group of the arrays under {group}/)")
    doc = parse_node(reader.name(key), data, ("group",))
    if not isinstance(doc.get("attributes", {}), dict):
        raise BufferError(f"{reader.name(key)}: 'attributes' must be an object")


def _check_array(reader: MetadataReader, name: str, args: tuple[Any, ...], layout: StoreLayout) -> None:
    """The array's ``zarr.json`` must describe the layout ``args`` makes (``expected_array_document``)."""
    key = f"{name}/{ROOT_FILE}"
    file = reader.name(key)
    data = reader.read(key)
    if data is None:
        raise BufferError(
            f"{file} is missing: the store has no array {name!r}, which vlmrl_buffer.specs lists"
        )
    doc = parse_node(file, data, ("array",))
    if not isinstance(doc.get("attributes", {}), dict):
        raise BufferError(f"{file}: attributes must be an object, got {_short(doc.get('attributes'))}")
    actual = {k: v for k, v in doc.items() if k not in ("attributes", "zarr_format", "node_type")}
    actual.setdefault("storage_transformers", [])
    expected = expected_array_document(args)
    difference = _first_difference(actual, expected)
    if difference is None or _same_to_zarr(actual, expected):
        return
    field, value, want = difference
    got = "missing" if value is _MISSING else f"is {_short(value)}"
    wanted = "absent" if want is _MISSING else _short(want)
    context = f"array {name!r} of a store of capacity {layout.capacity}"
    if args[0] == "frame":
        context += f", {layout.frames_per_shard} frames per shard, frame codec {layout.frame_codec}"
    raise BufferError(f"{file}: {field} {got}, expected {wanted} ({context})")


def _first_difference(actual: Any, expected: Any, path: str = "") -> tuple[str, Any, Any] | None:
    """(field, its value, the expected value) of the first place ``actual`` differs, or None."""
    if isinstance(expected, dict):
        if not isinstance(actual, dict):
            return path, actual, expected
        for key, want in expected.items():
            sub = f"{path}.{key}" if path else key
            if key not in actual:
                return sub, _MISSING, want
            found = _first_difference(actual[key], want, sub)
            if found:
                return found
        for key in actual:
            if key not in expected:
                return (f"{path}.{key}" if path else key), actual[key], _MISSING
        return None
    if isinstance(expected, list):
        if not isinstance(actual, list):
            return path, actual, expected
        for i, want in enumerate(expected):
            if i >= len(actual):
                return f"{path}[{i}]", _MISSING, want
            found = _first_difference(actual[i], want, f"{path}[{i}]")
            if found:
                return found
        if len(actual) > len(expected):
            return f"{path}[{len(expected)}]", actual[len(expected)], _MISSING
        return None
    if isinstance(expected, bool) or isinstance(actual, bool):
        return None if type(actual) is type(expected) and actual == expected else (path, actual, expected)
    if isinstance(expected, int | float) and isinstance(actual, int | float):
        return None if actual == expected else (path, actual, expected)
    return None if type(actual) is type(expected) and actual == expected else (path, actual, expected)


def _same_to_zarr(actual: dict[str, Any], expected: dict[str, Any]) -> bool:
    """Whether zarr-python reads ``actual`` as the same array metadata as ``expected`` (another spelling
    of it, such as one written by another zarr version); False when it cannot read it at all."""
    from zarr.core.buffer import default_buffer_prototype
    from zarr.core.metadata.v3 import ArrayV3Metadata

    def canonical(doc: dict[str, Any]) -> Any:
        parsed = ArrayV3Metadata.from_dict({**copy.deepcopy(doc), "zarr_format": 3, "node_type": "array"})
        out = json.loads(parsed.to_buffer_dict(default_buffer_prototype())[ROOT_FILE].to_bytes())
        out.pop("attributes", None)
        return out

    try:
        return bool(canonical(actual) == canonical(expected))
    except Exception:  # zarr-python's own parser: any error means it does not read it as ours
        return False


# ------------------------------------------------------------------------------- the layout we create
def _per_row_args(spec: ArraySpec, layout: StoreLayout) -> tuple[Any, ...]:
    if spec.is_frame:
        return frame_args(
            spec, layout.capacity, layout.frames_per_shard, layout.frame_codec, layout.frame_quality
        )
    return small_args(spec, layout.capacity)


def small_args(spec: ArraySpec, capacity: int) -> tuple[Any, ...]:
    """Layout of a per-row array held in RAM: chunks of rows, [bytes, crc32c], fill 0."""
    rows = min(SMALL_CHUNK_ROWS, capacity)
    return ("small", (capacity, *spec.shape), (rows, *spec.shape), spec.dtype.name, 0)


def frame_args(
    spec: ArraySpec, capacity: int, frames_per_shard: int, codec: FrameCodec, quality: int | None
) -> tuple[Any, ...]:
    """Layout of a frame array: shards of ``frames_per_shard`` frames, one frame per inner chunk."""
    shard = min(frames_per_shard, capacity)
    quality = quality if codec in LOSSY_CODECS else None
    return ("frame", (capacity, *spec.shape), (shard, *spec.shape), spec.dtype.name, 0, codec, quality)


def episode_ends_args(capacity: int) -> tuple[Any, ...]:
    """Layout of ``episode_ends``: a ring of ``capacity // 2 + 1`` int64 slots."""
    slots = capacity // 2 + 1
    return ("small", (slots,), (min(SMALL_CHUNK_ROWS, slots),), "int64", 0)


def column_args(name: str, capacity: int) -> tuple[Any, ...]:
    """Layout of a mutable column: float32 per row, filled with ``column_fill(name)``."""
    fill = column_fill(name)
    # NaN as text: layouts are cache keys, and NaN != NaN.
    return (
        "small",
        (capacity,),
        (min(SMALL_CHUNK_ROWS, capacity),),
        "float32",
        "NaN" if fill != fill else fill,
    )


def create_array(group: Any, name: str, args: tuple[Any, ...]) -> Any:
    """Create array ``name`` in zarr ``group`` with the layout ``args`` describes."""
    return group.create_array(name, **_create_kwargs(args))


def _create_kwargs(args: tuple[Any, ...]) -> dict[str, Any]:
    from zarr.codecs import Crc32cCodec

    kind, shape, chunks, dtype, fill = args[:5]
    fill = float(fill) if fill == "NaN" else fill
    kwargs: dict[str, Any] = {"shape": shape, "chunks": chunks, "dtype": dtype, "fill_value": fill}
    if kind == "frame":
        codec, quality = args[5:]
        kwargs |= {"serializer": sharding_codec(codec, tuple(shape[1:]), quality or 0), "compressors": None}
    else:
        kwargs["compressors"] = [Crc32cCodec()]
    return kwargs


@functools.lru_cache(maxsize=256)
def expected_array_document(args: tuple[Any, ...]) -> dict[str, Any]:
    """The array metadata (without attributes) zarr-python writes for the layout ``args``: what the
    store's ``zarr.json`` of that array must say. Built once per layout in an in-memory store."""
    import zarr
    from zarr.core.buffer import default_buffer_prototype

    array = zarr.create_array(zarr.storage.MemoryStore(), **_create_kwargs(args))
    doc = json.loads(array.metadata.to_buffer_dict(default_buffer_prototype())[ROOT_FILE].to_bytes())
    for key in ("attributes", "zarr_format", "node_type"):
        doc.pop(key, None)
    doc.setdefault("storage_transformers", [])
    return doc


# ----------------------------------------------------------------- the commit record against the data
def read_episode_ends(root: Path, layout: StoreLayout) -> np.ndarray:
    """``episode_ends`` of the local store at ``root`` (whose metadata ``validate_store`` checked: int64
    little-endian chunks with a crc32c each), read without zarr-python; unwritten chunks are zeros.

    Raises:
        BufferError: a chunk is truncated or fails its checksum.
    """
    import google_crc32c

    slots = layout.capacity // 2 + 1
    rows = min(SMALL_CHUNK_ROWS, slots)
    ends = np.zeros(-(-slots // rows) * rows, np.int64)
    for c in range(len(ends) // rows):
        path = root / "episode_ends" / "c" / str(c)
        try:
            data = path.read_bytes()
        except FileNotFoundError:
            continue
        except OSError as exc:
            raise BufferError(f"{path}: cannot be read ({type(exc).__name__}: {exc})") from None
        body = data[:-4]
        if len(data) != rows * 8 + 4 or google_crc32c.value(body) != int.from_bytes(data[-4:], "little"):
            raise BufferError(
                f"{path}: chunk of 'episode_ends' is corrupt (size or checksum); no episode can be located"
            )
        ends[c * rows : (c + 1) * rows] = np.frombuffer(body, "<i8")
    return ends[:slots]


def check_episode_ends(layout: StoreLayout, ends: np.ndarray) -> np.ndarray:
    """Hold the commit record against ``episode_ends`` (the whole ring of slots); the live episodes' ends.

    Raises:
        BufferError: the record lists episodes that ``episode_ends`` does not bound (a ``num_episodes``
            or ``first_episode`` beyond what was written), a ``first_row`` that is not where the first
            live episode starts, live rows or an episode in flight that do not fit the ring.
    """
    c, where = layout.commit, f"{layout.root_file}: commit"
    slots = len(ends)
    live = np.asarray(ends[np.arange(c.first_episode, c.num_episodes, dtype=np.int64) % slots], np.int64)
    if c.first_episode > 0:
        before = int(ends[(c.first_episode - 1) % slots])
        if before != c.first_row:
            raise BufferError(
                f"{where}.first_row is {c.first_row}, but episode {c.first_episode - 1} ended at row {before} "
                f"(episode_ends); the record (first_episode {c.first_episode}) or episode_ends is corrupt"
            )
    starts = np.concatenate([[c.first_row], live[:-1]])
    bad = np.flatnonzero(live <= starts)
    if bad.size:
        e = c.first_episode + int(bad[0])
        raise BufferError(
            f"{where}.num_episodes is {c.num_episodes}, but episode {e} has no rows in episode_ends (it would "
            f"end at row {int(live[bad[0]])}, not after its start {int(starts[bad[0]])}): the record lists "
            "episodes that were not written"
        )
    next_row = int(live[-1]) if live.size else c.first_row
    if next_row - c.first_row > layout.capacity:
        raise BufferError(
            f"{where}: the live episodes span rows {c.first_row}..{next_row - 1}, more than the capacity "
            f"{layout.capacity}; the record or episode_ends is corrupt"
        )
    if c.inflight is not None:
        start, rows = c.inflight
        if start != next_row or start + rows - c.first_row > layout.capacity:
            raise BufferError(
                f"{where}.inflight is {[start, rows]}, but the next episode starts at row {next_row} and the "
                f"ring holds {layout.capacity} rows from row {c.first_row}"
            )
    return live


# ---------------------------------------------------------------------------------------------- helpers
def _is_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _short(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 120 else text[:117] + "..."


def _require_object(value: Any, where: str) -> None:
    if not isinstance(value, dict):
        raise BufferError(f"{where} must be an object, got {_short(value)}")


def _require_key(obj: dict[str, Any], key: str, where: str) -> Any:
    if key not in obj:
        raise BufferError(f"{where}.{key} is missing")
    return obj[key]


def _int(obj: dict[str, Any], key: str, where: str, minimum: int, maximum: int = MAX_ROW) -> int:
    value = _require_key(obj, key, where)
    if not _is_int(value):
        raise BufferError(f"{where}.{key} must be an integer, got {_short(value)}")
    if value < minimum:
        raise BufferError(f"{where}.{key} must be >= {minimum}, got {value}")
    if value > maximum:
        raise BufferError(f"{where}.{key} must be <= {maximum}, got {value}")
    return value


def obs_spec_json(obs_spec: ObsSpec) -> dict[str, list[Any]]:
    """An observation spec as ``vlmrl_buffer.env.obs_spec`` stores it."""
    return {k: [list(shape), np.dtype(dt).str] for k, (shape, dt) in obs_spec.items()}
