"""Run checked reward programs in a separate, resource-limited worker process (issue #17).

The training process never executes program code: it starts ``python -m vlm.reward_program.worker``,
which re-checks every source against the allow-list (``checker.py``), caps its own address space
(``RLIMIT_AS``), forbids writing files (``RLIMIT_FSIZE`` 0), opening new descriptors (``RLIMIT_NOFILE``)
and new processes (``RLIMIT_NPROC``), limits the CPU time of each request (``RLIMIT_CPU``), sets
no-new-privileges, leaves the network (a namespace of its own) and, started as root, becomes ``nobody``
(issue #36), and answers JSON lines on a pipe. What it could not get is logged once per process
(``Sandbox.isolation`` has the whole report; ``vlmrl reward-program verify --verbose`` prints it). Each
request has a wall-clock deadline; a worker that misses it, or dies, is killed and replaced, and the
caller gets a one-line ``SandboxError``. Replies are parsed as JSON only (never unpickled), so even a
subverted worker can only send wrong numbers.
"""

from __future__ import annotations

import json
import logging
import os
import selectors
import subprocess
import sys
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from vlm.errors import VLMError

log = logging.getLogger(__name__)
_REPORTED: set[str] = set()
"""Isolation measures found unavailable and already logged by this process."""


class SandboxError(VLMError):
    """A program that the sandbox refused, stopped or could not run (one line)."""


@dataclass(frozen=True, kw_only=True)
class SandboxConfig:
    """Limits of the reward-program worker process."""

    timeout_s: float = 2.0
    """Wall-clock limit of one request (loading the programs, or evaluating one batch of views)."""
    per_view_timeout_s: float = 0.05
    """Added to ``timeout_s`` per view of a batch."""
    memory_mb: int = 512
    """Address space the worker may grow by after its imports (RLIMIT_AS), in MiB."""
    start_timeout_s: float = 30.0
    """How long the worker may take to start (it imports numpy)."""
    cpu_s: int = 60
    """CPU seconds one request may use (RLIMIT_CPU, raised before each request): a backstop behind the
    wall-clock limits, for a worker whose caller is gone."""


@dataclass(frozen=True)
class SubtaskResult:
    """What one sub-task's functions returned on one view (error: the one-line reason, else empty)."""

    done: bool
    progress: float
    error: str = ""


def _plain(view: Mapping[str, Any]) -> dict[str, Any]:
    return {k: (np.asarray(v, dtype=np.float64).tolist()) for k, v in view.items()}


class Sandbox:
    """A worker process holding the sub-task programs; evaluate views against them.

    ``load(sources)`` checks and installs one source per sub-task (``check`` and optional ``progress``);
    ``evaluate(views)`` returns, per view, one ``SubtaskResult`` per sub-task. A program that raises on a
    view gives that view an error result; one that runs past the deadline or the memory limit raises
    ``SandboxError`` and the worker is replaced (the loaded programs are reinstalled on the next call).
    Not thread-safe: one caller at a time. Close it (or use it as a context manager).
    """

    def __init__(self, cfg: SandboxConfig | None = None) -> None:
        self.cfg = cfg or SandboxConfig()
        self._proc: subprocess.Popen[bytes] | None = None
        self._sources: list[str] = []
        self.restarts = 0
        self.isolation: dict[str, Any] = {}
        """What the worker got (``worker.isolate``: uid, namespaces, limits, what was unavailable); filled
        when it starts."""

    # ------------------------------------------------------------------------------------ process
    def _start(self) -> subprocess.Popen[bytes]:
        env = {
            "PATH": os.environ.get("PATH", ""),
            "PYTHONPATH": os.pathsep.join(p for p in sys.path if p),
            "OMP_NUM_THREADS": "1",
            "OPENBLAS_NUM_THREADS": "1",
            "MKL_NUM_THREADS": "1",
            "PYTHONDONTWRITEBYTECODE": "1",
        }
        proc = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "vlm.reward_program.worker",
                str(self.cfg.memory_mb),
                str(int(self.cfg.cpu_s)),
            ],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            env=env,
            cwd="/",
            close_fds=True,
        )
        self._proc = proc
        try:
            ready = self._read(proc, self.cfg.start_timeout_s, "starting")
        except SandboxError:
            self._kill()
            raise
        isolation = ready.get("isolation")
        self.isolation = isolation if isinstance(isolation, dict) else {}
        for missing in self.isolation.get("unavailable", []):
            if str(missing) not in _REPORTED:  # once per process, not per worker restart
                _REPORTED.add(str(missing))
                log.warning("reward-program sandbox: not available here: %s", missing)
        return proc

    @property
    def pid(self) -> int | None:
        """The worker's process id (None before it starts)."""
        return self._proc.pid if self._proc is not None else None

    def start(self) -> None:
        """Start the worker now (otherwise the first request does)."""
        if self._proc is None or self._proc.poll() is not None:
            self._kill()
            self._start()

    def _kill(self) -> None:
        if self._proc is not None:
            if self._proc.poll() is None:
                self._proc.kill()
            self._proc.wait(10)
            for pipe in (self._proc.stdin, self._proc.stdout):
                if pipe is not None:
                    pipe.close()
            self._proc = None

    def _read(self, proc: subprocess.Popen[bytes], timeout_s: float, doing: str) -> dict[str, Any]:
        assert proc.stdout is not None
        deadline = time.monotonic() + timeout_s
        chunks: list[bytes] = []
        fd = proc.stdout.fileno()
        with selectors.DefaultSelector() as sel:
            sel.register(fd, selectors.EVENT_READ)
            while True:
                left = deadline - time.monotonic()
                if left <= 0 or not sel.select(left):
                    raise SandboxError(f"reward program stopped: {doing} took longer than {timeout_s:.2f} s")
                chunk = os.read(fd, 1 << 20)
                if not chunk:
                    code = proc.wait(10)
                    raise SandboxError(
                        f"reward program stopped: the worker died while {doing} (exit code {code})"
                    )
                chunks.append(chunk)
                if chunk.endswith(b"\n"):
                    break
                if sum(len(c) for c in chunks) > 64 << 20:
                    raise SandboxError("reward program stopped: the worker's reply is too large")
        try:
            reply = json.loads(b"".join(chunks))
        except (ValueError, UnicodeDecodeError):
            raise SandboxError("reward program stopped: the worker sent a malformed reply") from None
        if not isinstance(reply, dict):
            raise SandboxError("reward program stopped: the worker sent a malformed reply")
        return reply

    def _request(self, message: dict[str, Any], timeout_s: float, doing: str) -> dict[str, Any]:
        proc = self._proc if self._proc is not None and self._proc.poll() is None else None
        if proc is None:
            self._kill()
            proc = self._start()
            if message.get("op") != "load" and self._sources:
                self._send(proc, {"op": "load", "sources": self._sources}, self.cfg.timeout_s, "loading")
        return self._send(proc, message, timeout_s, doing)

    def _send(
        self, proc: subprocess.Popen[bytes], message: dict[str, Any], timeout_s: float, doing: str
    ) -> dict[str, Any]:
        assert proc.stdin is not None
        try:
            proc.stdin.write(json.dumps(message).encode() + b"\n")
            proc.stdin.flush()
            reply = self._read(proc, timeout_s, doing)
        except (SandboxError, BrokenPipeError, OSError) as exc:
            self._kill()
            self.restarts += 1
            if isinstance(exc, SandboxError):
                raise
            raise SandboxError(f"reward program stopped: the worker died while {doing}") from None
        if "error" in reply:
            raise SandboxError(str(reply["error"]).splitlines()[0] if reply["error"] else "unknown error")
        return reply

    # ------------------------------------------------------------------------------------ the API
    def load(self, sources: Sequence[str]) -> None:
        """Check and install one program source per sub-task; SandboxError (one line) if one is refused."""
        sources = list(sources)
        self._sources = []
        self._request({"op": "load", "sources": sources}, self.cfg.timeout_s, "loading")
        self._sources = sources

    def evaluate(self, views: Sequence[Mapping[str, Any]]) -> list[list[SubtaskResult]]:
        """Per view, one result per loaded sub-task (check and progress on that view)."""
        if not self._sources:
            raise SandboxError("no reward program loaded")
        timeout = self.cfg.timeout_s + self.cfg.per_view_timeout_s * len(views)
        reply = self._request({"op": "eval", "views": [_plain(v) for v in views]}, timeout, "evaluating")
        rows = reply.get("results")
        if not isinstance(rows, list) or len(rows) != len(views):
            raise SandboxError("reward program stopped: the worker sent a malformed reply")
        out: list[list[SubtaskResult]] = []
        for row in rows:
            if not isinstance(row, list) or len(row) != len(self._sources):
                raise SandboxError("reward program stopped: the worker sent a malformed reply")
            out.append([_result(item) for item in row])
        return out

    def close(self) -> None:
        """Stop the worker."""
        if self._proc is not None and self._proc.poll() is None and self._proc.stdin is not None:
            try:
                self._proc.stdin.close()
                self._proc.wait(2)
            except (OSError, subprocess.TimeoutExpired):
                pass
        self._kill()

    def __enter__(self) -> Sandbox:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def isolation_lines(isolation: dict[str, Any]) -> list[str]:
    """The worker's isolation report in words, one line per measure (``verify --verbose``)."""
    if not isolation:
        return ["sandbox: the worker did not report its isolation"]
    limits = isolation.get("limits", {})
    lines = [
        f"sandbox: user {isolation.get('user')} (uid {isolation.get('uid')}, gid {isolation.get('gid')})",
        f"sandbox: network: {isolation.get('network')}",
        f"sandbox: pid and mount namespaces: {isolation.get('pid_and_mount_namespaces')}",
        f"sandbox: no_new_privs: {'set' if isolation.get('no_new_privs') else 'not set'}",
        "sandbox: limits: address space {address_space_mb} MiB, file size {file_size_bytes} bytes, open files "
        "{open_files}, processes {processes}, CPU {cpu_s_per_request} s per request".format_map(
            {k: limits.get(k, "?") for k in (
                "address_space_mb", "file_size_bytes", "open_files", "processes", "cpu_s_per_request"
            )}
        ),
    ]  # fmt: skip
    unavailable = isolation.get("unavailable") or []
    lines.append(
        f"sandbox: not available here: {'; '.join(unavailable)}"
        if unavailable
        else "sandbox: every measure applied"
    )
    return lines


def _result(item: Any) -> SubtaskResult:
    if isinstance(item, list) and len(item) == 3:
        done, progress, error = item
        if isinstance(done, bool) and isinstance(progress, int | float) and isinstance(error, str):
            p = float(progress)
            return SubtaskResult(done, min(max(p, 0.0), 1.0) if np.isfinite(p) else 0.0, error[:300])
    raise SandboxError("reward program stopped: the worker sent a malformed reply")
