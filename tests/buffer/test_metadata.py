"""The store metadata reader: a valid store reads back its env spec and recording attributes; every case
of the malformed-metadata corpus (``malformed_metadata/*.json``) fails with one BufferError line naming
the file and field; a failed multi-chunk zarr read leaves no asyncio noise at exit."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import zarr
from buffer_helpers import ACTION_DIM, OBS_SPEC, fill_episode

from buffer import BufferConfig, BufferError, make_buffer
from buffer.metadata import is_zarr_store, read_store_metadata

CORPUS = Path(__file__).parent / "malformed_metadata"
CASES = sorted(CORPUS.glob("*.json"))


def make_store(path: Path) -> Path:
    buf = make_buffer(BufferConfig(storage="zarr", capacity_steps=64), OBS_SPEC, ACTION_DIM, path=str(path))
    fill_episode(buf, 0, 5)
    buf.close()
    zarr.open_group(str(path), mode="a").attrs["vlmrl_record"] = {
        "task_description": "Pick up the red cube.",
        "control_hz": 20.0,
    }
    return path


def apply_case(store: Path, case: dict[str, Any]) -> None:
    """Damage ``store`` as a corpus entry says: truncate, replace, remove, or set/delete one JSON field."""
    file = store / case["file"]
    if case.get("remove"):
        file.unlink()
        return
    if "truncate_to" in case:
        file.write_bytes(file.read_bytes()[: case["truncate_to"]])
        return
    if "replace_with" in case:
        file.write_text(case["replace_with"])
        return
    doc = json.loads(file.read_text())
    if "set" in case:
        keys, value = case["set"]
        node = doc
        for key in keys[:-1]:
            node = node.setdefault(key, {})
        node[keys[-1]] = value
    if "delete" in case:
        node = doc
        for key in case["delete"][:-1]:
            node = node[key]
        del node[case["delete"][-1]]
    file.write_text(json.dumps(doc))


def test_a_valid_store_reads_back_its_spec_and_recording_attributes(tmp_path):
    store = make_store(tmp_path / "s.zarr")
    assert is_zarr_store(store) and not is_zarr_store(tmp_path)
    meta = read_store_metadata(store)
    assert meta.obs_spec == {k: (shape, np.dtype(dt)) for k, (shape, dt) in OBS_SPEC.items()}
    assert meta.action_dim == ACTION_DIM and meta.capacity == 64 and meta.schema_version == 1
    assert meta.info_keys == ("success", "progress")
    assert meta.cameras == ["front"]
    assert meta.task_description == "Pick up the red cube." and meta.control_hz == 20.0


def test_the_corpus_covers_the_reported_cases():
    names = {p.stem for p in CASES}
    assert {"truncated_root", "zarr_format_4", "schema_version_two", "info_keys_missing"} <= names
    assert len(CASES) >= 20


@pytest.mark.parametrize("case_file", CASES, ids=[p.stem for p in CASES])
def test_each_malformed_case_fails_in_one_line_naming_what_is_wrong(case_file, tmp_path):
    case = json.loads(case_file.read_text())
    store = make_store(tmp_path / "s.zarr")
    apply_case(store, case)
    with pytest.raises(BufferError) as info:
        read_store_metadata(store)
    message = str(info.value)
    assert "\n" not in message and str(store) in message
    assert __import__("re").search(case["error"], message), message


FAILED_READ = """
import asyncio
import sys
import numpy as np
import zarr
{settle}


class SlowStore(zarr.storage.LocalStore):
    # Every chunk but the corrupt one takes a second to read, so its failure leaves the others running.
    async def get(self, key, prototype=None, byte_range=None):
        if key.startswith("c/") and key != "c/0":
            await asyncio.sleep(1.0)
        return await super().get(key, prototype, byte_range)


root = sys.argv[1]
array = zarr.create_array(root, shape=(30,), chunks=(1,), dtype="float32", compressors=[zarr.codecs.Crc32cCodec()])
array[:] = np.arange(30, dtype=np.float32)
with open(root + "/c/0", "wb") as f:
    f.write(b"garbage")
try:
    zarr.open_array(SlowStore(root), mode="r")[:]
except Exception as exc:
    print("read failed:", type(exc).__name__)
"""


def run_failed_read(tmp_path: Path, settle: str) -> subprocess.CompletedProcess:
    script = tmp_path / "read.py"
    script.write_text(textwrap.dedent(FAILED_READ.format(settle=settle)))
    out = tmp_path / f"a{len(list(tmp_path.iterdir()))}.zarr"
    return subprocess.run(
        [sys.executable, str(script), str(out)], capture_output=True, text=True, timeout=120
    )


def test_a_failed_zarr_read_exits_without_asyncio_noise(tmp_path):
    # Without the exit hook zarr leaves the other chunks' read tasks pending and asyncio reports them.
    plain = run_failed_read(tmp_path, "")
    assert "read failed: ValueError" in plain.stdout
    assert "Task was destroyed but it is pending" in plain.stderr
    quiet = run_failed_read(tmp_path, "from buffer.zarr_loop import settle_at_exit\nsettle_at_exit()")
    assert "read failed: ValueError" in quiet.stdout
    assert quiet.stderr == "" and quiet.returncode == 0


REOPENED = [p for p in CASES if p.stem != "root_missing"]


@pytest.mark.parametrize("case_file", REOPENED, ids=[p.stem for p in REOPENED])
def test_reopening_a_malformed_store_fails_in_one_line(case_file, tmp_path):
    case = json.loads(case_file.read_text())
    store = make_store(tmp_path / "s.zarr")
    apply_case(store, case)
    with pytest.raises(BufferError) as info:
        make_buffer(BufferConfig(storage="zarr", capacity_steps=64), OBS_SPEC, ACTION_DIM, path=str(store))
    message = str(info.value)
    assert "\n" not in message
    expected = "not a vlmrl" if case_file.stem == "not_a_vlmrl_store" else case["error"]
    assert __import__("re").search(expected, message), message
