"""The order of a commit's two durable writes (issue #36, item 7: "commit record written before episode_ends
is mirrored" survived the buffer tests, whose random kills rarely land between the two writes).

A writer process is killed (``os._exit``) exactly at one write of its fourth episode's commit; reopening the
store must find the three committed episodes intact and the fourth discarded, whatever the point, and a new
writer must then be able to commit it.
"""

from __future__ import annotations

import re
import subprocess
import sys
import warnings
from pathlib import Path

import pytest
from crash_writer import CONFIG, OBS_SPEC
from test_crash import check_store

from buffer import make_buffer

HERE = Path(__file__).resolve().parent
WRITER = """
import os, sys
sys.path.insert(0, {here!r})
from crash_writer import CONFIG, OBS_SPEC, episode_arrays, episode_length
from buffer import make_buffer
from buffer.storage.zarr_store import ZarrStorage

path, point = sys.argv[1], sys.argv[2]
buf = make_buffer(CONFIG, OBS_SPEC, 2, info_keys=(), path=path)


def add(e):
    a, t = episode_arrays(e), episode_length(e)
    for i in range(t):
        obs = {{"state": a["state"][i], "pixels/front": a["pixels/front"][i]}}
        nxt = {{"state": a["state"][i + 1], "pixels/front": a["pixels/front"][i + 1]}}
        buf.add_step(obs, a["action"][i], a["reward"][i], i == t - 1, False, {{}}, nxt)


for e in range(3):
    add(e)
mirror, record = ZarrStorage._mirror, ZarrStorage._write_record


def dying_mirror(self, name, *args):
    if name == "episode_ends" and point == "episode_ends":
        os._exit(3)
    return mirror(self, name, *args)


def dying_record(self, inflight):
    if inflight is None and point == "commit_record":
        os._exit(3)
    return record(self, inflight)


ZarrStorage._mirror, ZarrStorage._write_record = dying_mirror, dying_record
add(3)
os._exit(0)
"""


@pytest.mark.parametrize("point", ["episode_ends", "commit_record"])
def test_a_writer_killed_at_either_write_of_a_commit_loses_only_that_episode(tmp_path, point) -> None:
    path = str(tmp_path / "store.zarr")
    done = subprocess.run(
        [sys.executable, "-c", WRITER.format(here=str(HERE)), path, point],
        capture_output=True, text=True, timeout=300, check=False,
    )  # fmt: skip
    assert done.returncode == 3, done.stderr
    with pytest.warns(UserWarning) as caught:
        buf = make_buffer(CONFIG, OBS_SPEC, 2, info_keys=(), path=path)
    discarded = re.fullmatch(
        rf"{re.escape(path)}: discarded episode 3 \(rows (\d+)\.\.(\d+)\), which was being written when the "
        "writer stopped; committed episodes are intact",
        str(caught[0].message),
    )
    assert discarded, str(caught[0].message)
    first_row, last_row = int(discarded[1]), int(discarded[2])
    assert first_row == buf.episode_rows(2)[1]
    buf.close()
    assert check_store(path) == (3, 3)  # episodes 0..2 intact and verified, the fourth discarded
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # discarded once: the record no longer names an episode in flight
        buf = make_buffer(CONFIG, OBS_SPEC, 2, info_keys=(), path=path)
    from crash_writer import episode_arrays, episode_length

    a, t = episode_arrays(3), episode_length(3)
    for i in range(t):
        obs = {"state": a["state"][i], "pixels/front": a["pixels/front"][i]}
        nxt = {"state": a["state"][i + 1], "pixels/front": a["pixels/front"][i + 1]}
        buf.add_step(obs, a["action"][i], a["reward"][i], i == t - 1, False, {}, nxt)
    assert buf.episode_rows(3) == (first_row, last_row + 1)  # the rows the warning named
    buf.close()
    assert check_store(path) == (4, 4)
