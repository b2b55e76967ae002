"""Headless OpenGL backend selection (EGL, then OSMesa) and a reusable offscreen frame renderer.

MuJoCo picks its OpenGL backend from ``MUJOCO_GL`` when ``mujoco`` is first imported, and PyOpenGL
picks its platform from ``PYOPENGL_PLATFORM`` when ``OpenGL`` is first imported; neither can change
afterwards. So ``select_gl_backend`` must run before anything imports mujoco: it keeps a backend the user
set, otherwise probes EGL and then OSMesa in a subprocess (the probe cannot poison this process) and sets
both variables to the first that renders.
"""

from __future__ import annotations

import atexit
import contextlib
import os
import subprocess
import sys
import weakref
from typing import Any

import numpy as np

from sim.errors import SimError

HEADLESS_BACKENDS: tuple[str, ...] = ("egl", "osmesa")
_INSTALL_HINT = {
    "egl": "apt-get install libegl1 libegl-mesa0 libgl1-mesa-dri",
    "osmesa": "apt-get install libosmesa6",
}
_PROBE = (
    'import mujoco; m = mujoco.MjModel.from_xml_string(\'<mujoco><worldbody><geom size="1"/></worldbody>'
    "</mujoco>'); r = mujoco.Renderer(m, 8, 8); r.update_scene(mujoco.MjData(m)); r.render(); r.close()"
)


def _probe(backend: str, timeout_s: float = 60.0) -> bool:
    env = dict(os.environ, MUJOCO_GL=backend, PYOPENGL_PLATFORM=backend)
    try:
        result = subprocess.run(
            [sys.executable, "-c", _PROBE], env=env, capture_output=True, timeout=timeout_s, check=False
        )
    except (OSError, subprocess.TimeoutExpired):
        return False
    return result.returncode == 0


def select_gl_backend(preferred: str = "auto") -> str:
    """Choose the headless OpenGL backend for MuJoCo and export it; returns its name.

    Args:
        preferred: "auto" (EGL, then OSMesa), "egl" or "osmesa". A ``MUJOCO_GL`` already set wins.

    Raises:
        SimError: when no candidate backend can render, with the packages to install.
    """
    preload_triton()  # before any suite (robosuite makes its own context) creates the first GL context
    current = os.environ.get("MUJOCO_GL", "").strip().lower()
    if current:
        os.environ.setdefault("PYOPENGL_PLATFORM", current)
        return current
    if preferred not in ("auto", *HEADLESS_BACKENDS):
        raise SimError(f"render_backend must be auto, egl or osmesa, got {preferred!r}")
    if "mujoco" in sys.modules:
        raise SimError(
            "mujoco was imported before a rendering backend was chosen: set MUJOCO_GL=egl (or osmesa) "
            "in the environment, or build envs before importing mujoco"
        )
    candidates = HEADLESS_BACKENDS if preferred == "auto" else (preferred,)
    for backend in candidates:
        if _probe(backend):
            os.environ["MUJOCO_GL"] = backend
            os.environ["PYOPENGL_PLATFORM"] = backend
            return backend
    hints = "; ".join(f"{b}: {_INSTALL_HINT[b]}" for b in candidates)
    raise SimError(f"no headless OpenGL backend can render (tried {', '.join(candidates)}); install {hints}")


_LIVE: weakref.WeakSet[FrameRenderer] = weakref.WeakSet()
_HOOKED = False


def preload_triton() -> None:
    """Import triton (if installed) before the first GL context exists.

    Measured here (Mesa llvmpipe, torch 2.14 CUDA build): importing triton after an EGL/OSMesa context was
    created crashes the process (SIGSEGV), even after that context was freed, and transformers models and
    ``torch.compile`` import it through ``torch._dynamo``; imported first, both work. Costs ~0.6 s once per
    process. Every path to a context calls it first: ``select_gl_backend`` (so ``make_env``),
    ``FrameRenderer`` and the robosuite adapter, whose own renderer never passes through ``FrameRenderer``
    (a robosuite env made and closed, then a twin or Meta-World env with a camera, was exit 139: issue #15).
    """
    with contextlib.suppress(ImportError):
        import triton  # noqa: F401


def set_antialias(model: Any, antialias: bool) -> None:
    """Multisampling of the offscreen buffers created from ``model`` from now on (4x or none)."""
    model.vis.quality.offsamples = 4 if antialias else 0


def _close_live_renderers() -> None:
    # OpenGL contexts freed during interpreter teardown raise noisy EGL errors; free them first.
    for renderer in list(_LIVE):
        renderer.close()


def _track(renderer: FrameRenderer) -> None:
    global _HOOKED
    if not _HOOKED:
        # Registered after mujoco's own GL exit handlers, so (atexit being last-in-first-out) it runs first.
        atexit.register(_close_live_renderers)
        _HOOKED = True
    _LIVE.add(renderer)


def prepare_gl_backend() -> None:
    """Best-effort ``select_gl_backend("auto")`` for modules about to import mujoco: never raises.

    Does nothing when ``MUJOCO_GL`` is set or mujoco is already imported; when no backend works, state-only
    use still runs and the first ``FrameRenderer`` reports the problem.
    """
    if os.environ.get("MUJOCO_GL") or "mujoco" in sys.modules:
        return
    with contextlib.suppress(SimError):
        select_gl_backend("auto")


class FrameRenderer:
    """One offscreen MuJoCo renderer at one square size, reused for every frame and camera.

    Shadows and reflections are off unless asked for: they dominate the cost of software rendering.
    """

    def __init__(self, model: Any, image_size: int, shadows: bool = False, antialias: bool = False) -> None:
        import mujoco

        preload_triton()
        set_antialias(model, antialias)
        self._mujoco = mujoco
        try:
            self._renderer = mujoco.Renderer(model, image_size, image_size)
        except Exception as error:
            backend = os.environ.get("MUJOCO_GL", "(unset)")
            hint = _INSTALL_HINT.get(backend, "set MUJOCO_GL=egl or MUJOCO_GL=osmesa")
            raise SimError(
                f"cannot create a MUJOCO_GL={backend} rendering context ({error}); {hint}, "
                "or set MUJOCO_GL=osmesa"
            ) from None
        flags = self._renderer.scene.flags
        flags[mujoco.mjtRndFlag.mjRND_SHADOW] = int(shadows)
        flags[mujoco.mjtRndFlag.mjRND_REFLECTION] = 0
        flags[mujoco.mjtRndFlag.mjRND_SKYBOX] = 0
        self._closed = False
        _track(self)

    def render(self, data: Any, camera: str | int) -> np.ndarray:
        """uint8[H, W, 3] frame of ``camera`` for the current ``data`` (row 0 at the top)."""
        self._renderer.update_scene(data, camera=camera)
        return self._renderer.render()

    def upload_texture(self, texture_id: int) -> None:
        """Send the model's current texels of ``texture_id`` (a 2-D or cube texture) to this renderer's GL
        context, which holds a copy of every texture from when it was made, and sample it bilinearly.

        MuJoCo samples textures trilinearly from mipmaps: on Mesa llvmpipe a textured table filling a
        128 px frame then costs 0.6 ms more per frame, bilinear 0.25 ms (measured here). Bilinear
        aliases a little where one pixel covers several texels; randomised textures need no more.
        """
        from OpenGL import GL

        renderer = self._renderer
        if renderer._gl_context is not None:
            renderer._gl_context.make_current()
        context, model = renderer._mjr_context, renderer.model
        self._mujoco.mjr_uploadTexture(model, context, texture_id)
        planar = int(model.tex_type[texture_id]) == int(self._mujoco.mjtTexture.mjTEXTURE_2D)
        target = GL.GL_TEXTURE_2D if planar else GL.GL_TEXTURE_CUBE_MAP
        GL.glBindTexture(target, int(context.texture[texture_id]))
        GL.glTexParameteri(target, GL.GL_TEXTURE_MIN_FILTER, GL.GL_LINEAR)
        GL.glBindTexture(target, 0)

    def close(self) -> None:
        """Free the OpenGL context (idempotent)."""
        if not self._closed:
            self._closed = True
            self._renderer.close()
