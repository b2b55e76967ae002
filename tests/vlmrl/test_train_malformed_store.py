"""`vlmrl train --prior-data` on a store whose metadata is damaged (issue 36): exit 1 with one line naming the
file, the field and its value; no traceback, and no run directory left behind. (`vlmrl score` on the same
kinds of damage: ``test_score_malformed.py``, over the buffer tests' corpus.)"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from buffer import BufferConfig, make_buffer
from sim.so101.env import STATE_NAMES
from vlmrl import cli


def prior_store(path: Path) -> Path:
    """A store holding what a state-policy reach run stores (``state``), two short episodes."""
    state = ((len(STATE_NAMES),), np.float32)
    buf = make_buffer(BufferConfig(storage="zarr", capacity_steps=64), {"state": state}, 6, path=str(path))
    rng = np.random.default_rng(0)
    for _ in range(2):
        buf.add_episode(
            {"state": rng.normal(size=(6, len(STATE_NAMES))).astype(np.float32)},
            rng.uniform(-1, 1, (5, 6)).astype(np.float32),
            np.zeros(5, np.float32),
            np.zeros(5, bool),
            np.array([0, 0, 0, 0, 1], bool),
        )
    buf.close()
    return path


CASES = [
    ("zarr.json", ("attributes", "commit", "num_episodes"), 4, r"zarr\.json: commit\.num_episodes is 4"),
    ("state/zarr.json", ("data_type",), 7, r"state/zarr\.json: data_type is 7, expected 'float32'"),
    ("zarr.json", ("attributes", "commit", "inflight"), "yes", r"zarr\.json: commit\.inflight .*'yes'"),
    ("zarr.json", ("attributes", "commit", "first_episode"), None, r"commit\.first_episode .*None"),
]


@pytest.mark.parametrize(("file", "field", "value", "error"), CASES, ids=[c[3].split(" ")[1] for c in CASES])
def test_train_refuses_prior_data_with_damaged_metadata_in_one_line(
    tmp_path, capsys, file, field, value, error
):
    store = prior_store(tmp_path / "prior.zarr")
    doc = json.loads((store / file).read_text())
    node = doc
    for key in field[:-1]:
        node = node[key]
    node[field[-1]] = value
    (store / file).write_text(json.dumps(doc))
    run = tmp_path / "run"
    args = ["train", "--sim.task", "reach", "--sim.cameras", "--replay", "uniform", "--total-steps", "50"]
    args += ["--prior-data", str(store), "--run-dir", str(run), "--no-progress"]
    assert cli.main(args) == 1
    captured = capsys.readouterr()
    assert "Traceback" not in captured.err, captured.err
    lines = captured.err.strip().splitlines()
    assert len(lines) == 1, captured.err
    assert __import__("re").search(error, lines[0]), lines[0]
    assert not run.exists()
