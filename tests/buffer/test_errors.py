"""Bad input to the buffer: one clear BufferError naming the step, key and what was expected."""

from __future__ import annotations

import numpy as np
import pytest
from buffer_helpers import OBS_SPEC, step_obs

from buffer import BufferConfig, BufferError, make_buffer

INFO = {"success": False, "progress": 0.0}


@pytest.fixture(params=["memory", "zarr"])
def buf(request, make):
    return make(request.param, capacity_steps=50)


def add(buf, obs=None, action=None, info=INFO, next_obs=None, done=False):
    buf.add_step(
        step_obs(0, 0) if obs is None else obs,
        np.zeros(2, np.float32) if action is None else action,
        0.0,
        done,
        False,
        info,
        step_obs(0, 1) if next_obs is None else next_obs,
    )


def test_wrong_shape(buf):
    obs = {**step_obs(0, 0), "state": np.zeros(5, np.float32)}
    with pytest.raises(BufferError, match=r"step 0 obs\['state'\]: expected shape \[4\], got \[5\]"):
        add(buf, obs=obs)


def test_wrong_dtype_of_pixels(buf):
    obs = {**step_obs(0, 0), "pixels/front": np.zeros((6, 5, 3), np.float32)}
    with pytest.raises(BufferError, match=r"pixels/front'\]: expected uint8, got float32"):
        add(buf, obs=obs)


def test_missing_and_extra_keys(buf):
    obs = {"state": np.zeros(4, np.float32), "pixels/side": np.zeros((6, 5, 3), np.uint8)}
    with pytest.raises(
        BufferError, match=r"missing keys \['pixels/front'\], unexpected keys \['pixels/side'\]"
    ):
        add(buf, obs=obs)


def test_nan_action_and_missing_info(buf):
    with pytest.raises(BufferError, match=r"step 0 action: contains NaN"):
        add(buf, action=np.array([np.nan, 0.0]))
    with pytest.raises(BufferError, match=r"info: missing key 'progress'"):
        add(buf, info={"success": True})


def test_bad_final_next_obs_is_refused_and_nothing_is_committed(buf):
    add(buf)
    with pytest.raises(BufferError, match=r"step 1 next_obs"):
        add(buf, next_obs={"state": np.zeros(4, np.float32)}, done=True)
    assert buf.num_episodes == 0


def test_episode_longer_than_capacity(buf):
    with pytest.raises(BufferError, match="does not fit"):
        buf.add_episode(
            {k: np.zeros((61, *s), d) for k, (s, d) in OBS_SPEC.items()},
            np.zeros((60, 2)),
            np.zeros(60),
            np.zeros(60, bool),
            np.ones(60, bool),
        )


def test_bad_configs():
    with pytest.raises(BufferError, match="needs a path"):
        make_buffer(BufferConfig(storage="zarr"), OBS_SPEC, 2)
    with pytest.raises(BufferError, match="uint8"):
        make_buffer(BufferConfig(), {"pixels/front": ((4, 4, 3), np.float32)}, 2)
    with pytest.raises(BufferError, match="clip_camera"):
        make_buffer(BufferConfig(clip_camera="pixels/side"), OBS_SPEC, 2)
