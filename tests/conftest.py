"""Suite-wide settings: headless rendering and one torch thread per process (2-core machines)."""

import contextlib
import os

os.environ.setdefault("MUJOCO_GL", "egl")
os.environ.setdefault("PYOPENGL_PLATFORM", os.environ["MUJOCO_GL"])
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")

with contextlib.suppress(ImportError):  # before any GL context: see sim.rendering.preload_triton
    import triton  # noqa: F401

with contextlib.suppress(ImportError):
    import torch

    torch.set_num_threads(1)
