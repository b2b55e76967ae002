"""Damaged store metadata (issue 36, item 2): every field of every metadata file of a real store, set to a
wrong type or a wrong value, either fails in one ``BufferError`` line or reads back exactly the episodes
the store holds. Never another exception (a traceback under the CLI), never other data.

The stores are real and small: a ring of 24 rows that has wrapped (episodes 0 and 1 evicted, so the commit
record's ``first_episode`` and ``first_row`` are not 0), frames in shards of 8, a score and an aux-reward
column, and the attributes of a recording. The readers are the ones the CLI uses: ``read_store_metadata``,
then the store opened for reading (``vlmrl score``, ``--prior-data``) and every committed row read.
"""

from __future__ import annotations

import copy
import json
import shutil
import tempfile
import warnings
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import zarr
from buffer_helpers import ACTION_DIM, OBS_SPEC, fill_episode
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from buffer import BufferConfig, BufferError, make_buffer
from buffer.io import open_recorded
from buffer.metadata import read_store_metadata

CAPACITY = 24
EPISODES = 6  # of 5 steps (6 rows): the ring holds 4, so episodes 0 and 1 are gone
COLUMNS = ("scores/oracle-1", "aux_reward/oracle-1")
RECORD = {
    "task_description": "Pick up the red cube.",
    "control_hz": 20.0,
    "robot_type": "sim_so101",
    "action_keys": ["a.pos", "b.pos"],
    "action_mode": "absolute",
    "cameras": ["front"],
    "state_names": ["episode", "t", "code", "one"],
}
Path_ = tuple[Any, ...]
"""A field's place in a JSON document: its keys and list indexes from the top."""


def build_store(path: Path, frame_codec: str) -> Path:
    cfg = BufferConfig(storage="zarr", capacity_steps=CAPACITY, frames_per_shard=8, frame_codec=frame_codec)  # type: ignore[arg-type]
    buf = make_buffer(cfg, OBS_SPEC, ACTION_DIM, path=str(path))
    for e in range(EPISODES):
        fill_episode(buf, e, 5)
    t = buf.storage.episodes()
    rows = np.arange(t.first_row, t.next_row)
    for name in COLUMNS:
        buf.storage.write_column(name, rows, (rows % 7).astype(np.float32) / 7)
    buf.close()
    zarr.open_group(str(path), mode="a").attrs["vlmrl_record"] = RECORD
    return path


@pytest.fixture(scope="module", params=["none", "jpeg"])
def pristine(request, tmp_path_factory) -> tuple[Path, dict[str, Any]]:
    """A store and what reading it gives."""
    store = build_store(tmp_path_factory.mktemp(f"pristine-{request.param}") / "s.zarr", request.param)
    return store, read_all(store)


def read_all(store: Path) -> dict[str, Any]:
    """Everything a consumer reads: the metadata it relies on and every committed row of every array."""
    meta = read_store_metadata(store)
    buf = open_recorded(
        BufferConfig(storage="zarr", capacity_steps=meta.capacity),
        meta.obs_spec,
        meta.action_dim,
        meta.info_keys,
        str(store),
    )
    try:
        storage = buf.storage
        assert not storage.damaged(), f"metadata damage reported as data damage: {storage.damage_summary()}"
        table = storage.episodes()
        names = sorted(storage.specs) + storage.columns()
        episodes = {}
        for e in range(table.first, table.first + table.count):
            rows = np.arange(*table.bounds(e))
            episodes[e] = {name: storage.read(name, rows) for name in names}
        # Each camera's frames as the task description and rate a scorer would read them with.
        assert isinstance(meta.task_description, str)
        assert meta.control_hz is None or meta.control_hz > 0
        return {
            "meta": (
                dict(meta.obs_spec),
                meta.action_dim,
                meta.info_keys,
                meta.capacity,
                meta.frame_codec,
                meta.frame_quality,
            ),
            "columns": storage.columns(),
            "episodes": episodes,
        }
    finally:
        buf.close()


def same(a: dict[str, Any], b: dict[str, Any]) -> bool:
    if a["meta"] != b["meta"] or a["columns"] != b["columns"] or a["episodes"].keys() != b["episodes"].keys():
        return False
    for e, arrays in a["episodes"].items():
        for name, values in arrays.items():
            if not np.array_equal(values, b["episodes"][e][name], equal_nan=values.dtype.kind == "f"):
                return False
    return True


def metadata_files(store: Path) -> list[str]:
    return sorted(str(p.relative_to(store)) for p in store.rglob("zarr.json"))


def fields(doc: Any, prefix: Path_ = ()) -> Iterator[Path_]:
    """Every field of a JSON document (objects' keys and lists' items, nested), outermost first."""
    items = doc.items() if isinstance(doc, dict) else enumerate(doc) if isinstance(doc, list) else ()
    for key, value in items:
        yield (*prefix, key)
        yield from fields(value, (*prefix, key))


def field_at(doc: Any, path: Path_) -> Any:
    for key in path:
        doc = doc[key]
    return doc


def corrupted(doc: Any, path: Path_, value: Any) -> Any:
    """A copy of ``doc`` with the field at ``path`` set to ``value`` (DELETE: removed)."""
    out = copy.deepcopy(doc)
    parent = field_at(out, path[:-1])
    if value is DELETE:
        del parent[path[-1]]
    else:
        parent[path[-1]] = value
    return out


DELETE = object()
WRONG_TYPES: list[Any] = [
    None,
    True,
    False,
    0,
    -1,
    7,
    3.5,
    2**40,
    "",
    "x",
    "0",
    "3",
    "zero",
    [],
    [1],
    ["1", 2],
    {},
]
WRONG_VALUES: list[Any] = [
    "float32",
    "uint8",
    "int64",
    "bool",
    "little",
    "big",
    "zstd",
    "jpeg",
    "none",
    "NaN",
]


def near(value: Any) -> list[Any]:
    """Values of the same type close to ``value``: the corruptions a type check alone does not catch."""
    if isinstance(value, bool):
        return [not value]
    if isinstance(value, int):
        return [value + 1, value - 1, value * 2, -value, value + 0.5, str(value), 0]
    if isinstance(value, float):
        return [value + 1, -value, 0.0, str(value), int(value)]
    if isinstance(value, str):
        return [value + "x", value.upper(), "", value[:-1]]
    if isinstance(value, list):
        return [value[:-1], [*value, value[-1]] if value else [0], list(reversed(value))]
    if isinstance(value, dict):
        return [{}, {k: v for k, v in list(value.items())[:-1]}]
    return []


def apply(store: Path, file: str, path: Path_, value: Any) -> None:
    doc = json.loads((store / file).read_text())
    (store / file).write_text(json.dumps(corrupted(doc, path, value)))


def check(pristine_store: Path, expected: dict[str, Any], file: str, path: Path_, value: Any) -> None:
    """Corrupt a copy of the store and read it: one BufferError line naming the store, or the same data."""
    work = Path(tempfile.mkdtemp(dir=pristine_store.parent.parent))
    store = work / "s.zarr"
    try:
        shutil.copytree(pristine_store, store)
        apply(store, file, path, value)
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")  # a commit record with an episode in flight: discarded
                got = read_all(store)
        except BufferError as exc:
            message = str(exc)
            assert "\n" not in message, message
            assert str(store) in message, message
            return
        where = f"{file} {list(path)} = {value if value is not DELETE else '<deleted>'!r}"
        if file == "zarr.json" and path == ("attributes", "commit", "num_episodes") and got["episodes"]:
            # A record listing fewer episodes is what a crash-discarded episode leaves: a correct read of
            # the episodes it lists (each as written), the later ones not shown.
            kept = {e: expected["episodes"][e] for e in got["episodes"]}
            assert same(got, {**expected, "episodes": kept}), f"other data read after {where}"
            return
        assert same(got, expected), f"other data read after {where}"
    finally:
        shutil.rmtree(work, ignore_errors=True)


@st.composite
def corruptions(draw, store: Path) -> tuple[str, Path_, Any]:
    file = draw(st.sampled_from(metadata_files(store)))
    doc = json.loads((store / file).read_text())
    path = draw(st.sampled_from(list(fields(doc))))
    old = field_at(doc, path)
    value = draw(st.sampled_from([DELETE, *WRONG_TYPES, *WRONG_VALUES, *near(old)]))
    return file, path, value


@settings(
    max_examples=120,
    deadline=None,
    derandomize=True,
    database=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(data=st.data())
def test_a_corrupted_field_fails_in_one_line_or_reads_back_the_same_data(pristine, data):
    store, expected = pristine
    file, path, value = data.draw(corruptions(store))
    check(store, expected, file, path, value)


def wrong_type(value: Any) -> Any:
    """A value of another JSON type than ``value``."""
    if isinstance(value, bool):
        return "yes"
    if isinstance(value, int | float):
        return str(value)
    if isinstance(value, str):
        return 7
    if value is None:
        return "x"
    return "x"  # lists and objects


def test_every_field_of_every_metadata_file_with_a_wrong_type(pristine):
    """Deterministic sweep: each field of each file once, as a string where it is a number and so on."""
    store, expected = pristine
    for file in metadata_files(store):
        doc = json.loads((store / file).read_text())
        for path in fields(doc):
            check(store, expected, file, path, wrong_type(field_at(doc, path)))


# The cases reported in issue 36 (tracebacks, or accepted with the wrong value); each names its field.
REPORTED = [
    ("zarr.json", ("attributes", "commit", "first_episode"), None, "commit.first_episode"),
    ("zarr.json", ("attributes", "vlmrl_buffer", "specs", "action"), "six", "specs"),
    ("zarr.json", ("attributes", "commit"), "x", "commit"),
    ("zarr.json", ("attributes", "commit", "inflight"), "yes", "commit.inflight"),
    ("state/zarr.json", ("shape",), ["100000", 4], "shape"),
    ("state/zarr.json", ("data_type",), 7, "data_type"),
    ("state/zarr.json", ("fill_value",), "zero", "fill_value"),
    ("zarr.json", ("attributes", "commit", "num_episodes"), 9, "num_episodes"),
    ("zarr.json", ("attributes", "commit", "num_episodes"), "3", "commit.num_episodes"),
    ("zarr.json", ("attributes", "commit", "num_episodes"), 3.5, "commit.num_episodes"),
    ("zarr.json", ("attributes", "commit", "first_row"), "0", "commit.first_row"),
    ("zarr.json", ("attributes", "vlmrl_buffer", "frames_per_shard"), "128", "frames_per_shard"),
    (
        "pixels/front/zarr.json",
        ("codecs", 0, "configuration", "chunk_shape"),
        "x",
        r"codecs\[0\]\.configuration\.chunk_shape",
    ),
]


@pytest.mark.parametrize(("file", "path", "value", "field"), REPORTED, ids=[r[3] for r in REPORTED])
def test_the_reported_cases_fail_in_one_line_naming_file_field_and_value(pristine, file, path, value, field):
    store, _ = pristine
    work = Path(tempfile.mkdtemp(dir=store.parent.parent)) / "s.zarr"
    shutil.copytree(store, work)
    apply(work, file, path, value)
    with pytest.raises(BufferError) as info:
        read_all(work)
    message = str(info.value)
    assert "\n" not in message
    assert str(work / file) in message, message
    assert __import__("re").search(field, message), message
    shown = [value, *value] if isinstance(value, list) else [value]  # the field, or the item that is wrong
    assert any(repr(v) in message for v in shown), message
    # Reopening it for writing (a resumed run's buffer) refuses it the same way.
    with pytest.raises(BufferError, match=field):
        make_buffer(
            BufferConfig(storage="zarr", capacity_steps=CAPACITY), OBS_SPEC, ACTION_DIM, path=str(work)
        )
