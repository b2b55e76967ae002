"""`vlmrl score` on a store with malformed metadata (the buffer tests' corpus): exit 1 with one line
naming the file and field, no traceback, no report directory, and the store left as it was."""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parents[1] / "buffer"))

from test_metadata import CASES, apply_case, make_store

from vlmrl import cli


@pytest.mark.parametrize("case_file", CASES, ids=[p.stem for p in CASES])
def test_score_refuses_malformed_metadata_in_one_line(case_file, tmp_path, capsys):
    case = json.loads(case_file.read_text())
    store = make_store(tmp_path / "s.zarr")
    apply_case(store, case)
    before = {p: p.read_bytes() for p in store.rglob("*") if p.is_file()}
    report = tmp_path / "report"
    assert cli.main(["score", str(store), "--out-dir", str(report)]) == 1
    captured = capsys.readouterr()
    err = captured.err.strip()
    assert len(err.splitlines()) == 1 and "Traceback" not in captured.err, captured.err
    if case.get("remove"):
        assert "neither a vlmrl zarr store" in err
    else:
        assert re.search(case["error"], err), err
    assert not report.exists()
    assert {p: p.read_bytes() for p in store.rglob("*") if p.is_file()} == before
