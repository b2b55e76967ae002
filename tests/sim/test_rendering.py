"""Headless backend selection: EGL is found automatically, a set MUJOCO_GL is kept, failure is one line."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from sim.rendering import select_gl_backend


def _run(code: str, env_updates: dict[str, str | None]) -> subprocess.CompletedProcess:
    env = dict(os.environ)
    for key, value in env_updates.items():
        if value is None:
            env.pop(key, None)
        else:
            env[key] = value
    return subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=120)


def test_auto_selection_finds_a_headless_backend_and_renders() -> None:
    code = (
        "import os; from sim import SimConfig, make_env; "
        "env = make_env(SimConfig(task='reach', image_size=16)); obs, _ = env.reset(seed=0); "
        "print(os.environ['MUJOCO_GL'], obs['pixels/front'].shape); env.close()"
    )
    result = _run(code, {"MUJOCO_GL": None, "PYOPENGL_PLATFORM": None})
    assert result.returncode == 0, result.stderr
    assert result.stdout.split()[0] in ("egl", "osmesa")
    assert "(16, 16, 3)" in result.stdout


def test_no_working_backend_is_one_clear_error() -> None:
    code = (
        "import sim.rendering as r\n"
        "r._probe = lambda backend, timeout_s=60.0: False\n"
        "from sim.errors import SimError\n"
        "try:\n    r.select_gl_backend('auto')\nexcept SimError as e:\n    print(e)\n"
    )
    result = _run(code, {"MUJOCO_GL": None, "PYOPENGL_PLATFORM": None})
    assert result.returncode == 0, result.stderr
    assert "no headless OpenGL backend can render (tried egl, osmesa)" in result.stdout
    assert "libosmesa6" in result.stdout


def test_a_backend_already_set_is_kept() -> None:
    assert select_gl_backend("osmesa") == os.environ["MUJOCO_GL"]


def test_unknown_backend_name_is_refused_when_choosing() -> None:
    code = "import sim.rendering as r\ntry:\n    r.select_gl_backend('vulkan')\nexcept Exception as e:\n    print(type(e).__name__, e)\n"
    result = _run(code, {"MUJOCO_GL": None})
    assert "SimError render_backend must be auto, egl or osmesa" in result.stdout


@pytest.mark.parametrize("backend", ["egl"])
def test_explicit_backend_is_exported_for_mujoco(backend: str) -> None:
    code = f"import os, sim.rendering as r; print(r.select_gl_backend('{backend}'), os.environ['PYOPENGL_PLATFORM'])"
    result = _run(code, {"MUJOCO_GL": None, "PYOPENGL_PLATFORM": None})
    assert result.stdout.split() == [backend, backend], result.stderr
