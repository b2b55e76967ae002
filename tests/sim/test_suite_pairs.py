"""Every suite with a camera can follow every other in one process (issue #15, item 8).

A robosuite env made and closed, then a twin or Meta-World env with a camera, used to kill the process
(exit 139): robosuite created the first GL context without importing triton first, and the next renderer
imported it (see ``sim.rendering.preload_triton``). Each ordered pair runs in a fresh subprocess, so a
crash fails one test instead of killing the test run, and no earlier env in the process can hide it. The
six processes run side by side.
"""

from __future__ import annotations

import itertools
import os
import subprocess
import sys

import pytest

pytestmark = pytest.mark.slow

CHILD = """
import sys
from sim import SimConfig, make_env
configs = {
    "so101": SimConfig(suite="so101", task="lift", cameras=("front",), image_size=32),
    "robosuite": SimConfig(suite="robosuite", task="Lift", cameras=("agentview",), image_size=32),
    "metaworld": SimConfig(suite="metaworld", task="reach-v3", cameras=("corner",), image_size=32),
}
for name in sys.argv[1:]:
    env = make_env(configs[name])
    obs, _ = env.reset(seed=0)
    obs, *_ = env.step(env.action_space.sample())
    frame = next(v for k, v in obs.items() if k.startswith("pixels/"))
    assert frame.shape == (32, 32, 3) and frame.std() > 0, name
    env.close()
    print("done", name, flush=True)
"""
SUITES = ("so101", "robosuite", "metaworld")


def test_each_suite_with_a_camera_follows_each_other_in_one_process() -> None:
    env = {
        **os.environ,
        "MUJOCO_GL": os.environ.get("MUJOCO_GL", "egl"),
        "PYOPENGL_PLATFORM": os.environ.get("PYOPENGL_PLATFORM", os.environ.get("MUJOCO_GL", "egl")),
        "OMP_NUM_THREADS": "1",
    }
    pairs = list(itertools.permutations(SUITES, 2))
    children = {
        pair: subprocess.Popen(
            [sys.executable, "-c", CHILD, *pair],
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for pair in pairs
    }
    failures = []
    for pair, child in children.items():
        out, err = child.communicate(timeout=600)
        if child.returncode != 0 or out.split() != ["done", pair[0], "done", pair[1]]:
            tail = [line for line in err.strip().splitlines() if not line.startswith("[robosuite")][-3:]
            failures.append(f"{pair[0]} then {pair[1]}: exit {child.returncode}, {out.split()} {tail}")
    assert not failures, "\n".join(failures)
