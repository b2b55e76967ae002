"""Durability: SIGKILL a writer process at 10 random points; committed episodes must survive bit-identical."""

from __future__ import annotations

import json
import re
import signal
import subprocess
import sys
import time
import warnings
from pathlib import Path

import numpy as np
import pytest
import zarr
from crash_writer import CONFIG, OBS_SPEC, episode_arrays, episode_score

from buffer import make_buffer

WRITER = Path(__file__).with_name("crash_writer.py")


def check_store(path: str) -> tuple[int, int]:
    """Reopen the store, verify every live episode against its deterministic content; (episodes, next id)."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the "discarded episode" warning is expected after some kills
        buf = make_buffer(CONFIG, OBS_SPEC, 2, info_keys=(), path=path)
    table = buf.storage.episodes()
    plain = zarr.open_group(path, mode="r")
    plain_pixels = plain["pixels/front"][:]
    for e in range(table.first, table.first + table.count):
        start, end = table.bounds(e)
        rows = np.arange(start, end)
        want = episode_arrays(e)
        assert end - start == len(want["state"]), f"episode {e} has the wrong length"
        for name, values in want.items():
            np.testing.assert_array_equal(buf.storage.read(name, rows), values, err_msg=f"episode {e} {name}")
        np.testing.assert_array_equal(plain_pixels[rows % buf.storage.capacity], want["pixels/front"])
        if "scores/oracle" in buf.storage.columns():  # each row: scored with E's score, or not yet
            scores = buf.storage.read("scores/oracle", rows[:-1])
            assert np.all(np.isnan(scores) | (scores == np.float32(episode_score(e)))), f"episode {e} scores"
    if table.count:
        batch = buf.sample(32)
        assert np.isfinite(batch.reward).all()
    buf.close()
    return table.count, table.first + table.count


@pytest.mark.slow
def test_sigkill_at_random_points_loses_at_most_the_episode_in_flight(tmp_path):
    path = str(tmp_path / "crash.zarr")
    rng = np.random.default_rng(1234)
    committed_before = 0
    killed_mid_commit = 0
    for _ in range(10):
        proc = subprocess.Popen(
            [sys.executable, str(WRITER), path], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
        )
        assert proc.stdout is not None
        assert proc.stdout.readline().strip() == "ready", proc.stderr.read() if proc.stderr else ""
        # A random number of commits, then a random fraction of the next episode: however loaded the
        # machine, the writer makes progress and the kill lands anywhere in an episode's life.
        seen = [proc.stdout.readline() for _ in range(int(rng.integers(1, 6)))]
        time.sleep(float(rng.uniform(0.0, 0.1)))
        proc.send_signal(signal.SIGKILL)
        out, _ = proc.communicate()
        # The kill can cut the writer's last report line (seen in CI: "committed" without its number);
        # only whole lines count as reports.
        lines = [line.rstrip("\n") for line in seen] + out.split("\n")[:-1]
        committed = [int(line.split()[1]) for line in lines if re.fullmatch(r"committed \d+", line)]
        record = json.loads((Path(path) / "zarr.json").read_text())["attributes"]["commit"]
        killed_mid_commit += record["inflight"] is not None
        live, next_episode = check_store(path)
        # Everything the writer reported committed is there; at most the episode in flight is lost.
        last_reported = committed[-1] + 1 if committed else committed_before
        assert next_episode in (last_reported, last_reported + 1)
        assert next_episode >= committed_before
        committed_before = next_episode
    assert live < next_episode, "the writer never got far enough to wrap the ring and evict"
    print(f"{killed_mid_commit}/10 kills landed inside a commit")
