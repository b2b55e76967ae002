"""Tiny random models saved as local model directories (built once per session), and clip helpers."""

import numpy as np
import pytest

from vlm import Clip
from vlm.random_models import save_random_clip, save_random_student, save_random_vlm


@pytest.fixture(scope="session")
def vlm_dirs(tmp_path_factory):
    root = tmp_path_factory.mktemp("vlms")
    return {arch: str(save_random_vlm(root / arch, arch)) for arch in ("qwen2-vl", "idefics3")}


@pytest.fixture(scope="session")
def clip_model_dirs(tmp_path_factory):
    root = tmp_path_factory.mktemp("clips")
    return {arch: str(save_random_clip(root / arch, arch)) for arch in ("clip", "siglip")}


def make_clips(n=3, length=5, side=24, seed=0):
    """Random clips with a privileged progress signal, so every backend (the oracle too) can score them."""
    rng = np.random.default_rng(seed)
    return [
        Clip(
            rng.integers(0, 256, (length, side, side + 8, 3), dtype=np.uint8),
            {"progress": np.linspace(0, (i + 1) / n, length, dtype=np.float32)},
        )
        for i in range(n)
    ]


@pytest.fixture
def clips():
    return make_clips()


def free_port():
    import socket

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


class ServerProcess:
    """A real server process on 127.0.0.1 (`vlmrl serve`, or a fake for fault tests); waits for /health."""

    def __init__(self, argv, port, tmp_path, env=None):
        import os
        import subprocess
        import sys

        self.port, self.argv = port, argv
        self.url = f"http://127.0.0.1:{port}/v1"
        self.log = open(tmp_path / f"server-{port}.log", "ab")  # noqa: SIM115 - closed in stop()
        full_env = {**os.environ, **(env or {})}
        self.proc = subprocess.Popen(
            [sys.executable, *argv], stdout=self.log, stderr=subprocess.STDOUT, env=full_env
        )
        self._wait_healthy()

    def _wait_healthy(self, timeout_s=90):
        import time

        import httpx

        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError(f"server exited with {self.proc.returncode}; see {self.log.name}")
            try:
                if httpx.get(f"http://127.0.0.1:{self.port}/health", timeout=1).status_code == 200:
                    return
            except httpx.HTTPError:
                pass
            time.sleep(0.1)
        raise RuntimeError(f"server not healthy after {timeout_s} s; see {self.log.name}")

    def kill(self):
        self.proc.kill()
        self.proc.wait(10)

    def stop(self):
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(10)
            except Exception:
                self.kill()
        self.log.close()


def serve_argv(port, scorer_args, *server_args, run_dir):
    return [
        "-m",
        "vlmrl",
        "serve",
        "--server.port",
        str(port),
        "--run-dir",
        str(run_dir),
        *server_args,
        *scorer_args,
    ]


@pytest.fixture(scope="session")
def hf_server(vlm_dirs, tmp_path_factory):
    """`vlmrl serve` over the tiny Idefics3 model, with an API key."""
    tmp = tmp_path_factory.mktemp("hf-server")
    port = free_port()
    scorer = ["scorer:hf", "--scorer.model", vlm_dirs["idefics3"], "--scorer.num-frames", "3"]
    server = ServerProcess(
        serve_argv(
            port, scorer, "--server.max-images", "6", "--server.max-request-bytes", "2000000", run_dir=tmp
        ),
        port,
        tmp,
        env={"VLMRL_API_KEY": "sekret"},
    )
    yield server
    server.stop()


@pytest.fixture
def clip_factory():
    return make_clips


@pytest.fixture
def start_server(tmp_path):
    """Factory: start_server(argv, port=None, env=None) -> ServerProcess; all are stopped at teardown.

    ``argv`` may contain the placeholder "{port}" (replaced by the chosen free port).
    """
    started = []

    def start(argv, port=None, env=None):
        port = port or free_port()
        server = ServerProcess([str(a).replace("{port}", str(port)) for a in argv], port, tmp_path, env)
        started.append(server)
        return server

    start.free_port = free_port
    yield start
    for server in started:
        server.stop()


@pytest.fixture
def oracle_argv(tmp_path):
    def argv(*scorer_args):
        return serve_argv("{port}", ["scorer:oracle", *scorer_args], run_dir=tmp_path / "serve")

    return argv


def save_random_learned(path, prompt, image_hw=(24, 32), camera="front", num_frames=4, width=8, seed=0):
    """A learned scorer file with random weights (a fitted one comes from `vlmrl scorer fit`)."""
    save_random_student(
        path, prompt, tuple(image_hw), num_frames=num_frames, width=width, camera=camera, seed=seed
    )
    return path


@pytest.fixture(scope="session")
def random_learned():
    return save_random_learned


@pytest.fixture(scope="session")
def server_process():
    """(ServerProcess, free_port), for fixtures of a wider scope than ``start_server``."""
    return ServerProcess, free_port
