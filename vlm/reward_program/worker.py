"""The reward-program worker process (``python -m vlm.reward_program.worker MEMORY_MB CPU_S``); see sandbox.py.

Reads one JSON request per line on stdin, writes one JSON reply per line on the original stdout (fd 1
is redirected to /dev/null, so nothing a program triggers can corrupt the protocol). Requests:
``{"op": "load", "sources": [str, ...]}`` and ``{"op": "eval", "views": [{field: number | [numbers]}, ...]}``.

Before it reads a request the worker isolates itself (``isolate``, issue #36): a private network namespace
(``unshare``; as a non-root user inside a new user namespace), ``PR_SET_NO_NEW_PRIVS``, resource limits
(address space, no file writes, no new descriptors or processes, a CPU-time limit per request) and, when
started as root, the unprivileged user ``nobody``. Its first line (``{"ready": true, "isolation": {...}}``)
says what it got and what was not available. Every call of a program runs on a fresh copy of the program's
module, so nothing one call leaves behind is seen by the next.
"""

from __future__ import annotations

import builtins
import ctypes
import json
import math
import os
import pwd
import resource
import sys
import warnings
from types import CodeType
from typing import Any

import numpy as np

from vlm.reward_program.checker import BUILTINS, WORKER_RECURSION_LIMIT, ProgramRejected, check_program
from vlm.reward_program.view import FIELDS_BY_NAME

CLONE_NEWNET = 0x40000000
CLONE_NEWUSER = 0x10000000
PR_SET_NO_NEW_PRIVS = 38
UNPRIVILEGED_USER = "nobody"


class ReadOnlyView:
    """``obs``: the view's fields as read-only float64 arrays (floats for scalars)."""

    __slots__ = tuple(FIELDS_BY_NAME)

    def __init__(self, values: dict[str, Any]) -> None:
        if not isinstance(values, dict):
            raise ValueError("a view must be an object of fields")
        for name, field in FIELDS_BY_NAME.items():
            if name not in values:
                continue
            array = np.asarray(values[name], dtype=np.float64)
            if field.shape:
                array = array.reshape(field.shape)
                array.setflags(write=False)
                object.__setattr__(self, name, array)
            else:
                object.__setattr__(self, name, float(array.reshape(-1)[0]))

    def __setattr__(self, name: str, value: Any) -> None:
        raise AttributeError("the view is read-only")

    def __getattr__(self, name: str) -> Any:  # only for fields this view lacks (slots not set)
        raise AttributeError(f"obs.{name} is not available here (simulation-only field on a real arm?)")


def _libc_call(name: str, *args: int) -> str:
    """Call a libc function; "" on success, else the error in words."""
    libc = ctypes.CDLL(None, use_errno=True)
    if getattr(libc, name)(*args) == 0:
        return ""
    return os.strerror(ctypes.get_errno())


def isolate(memory_mb: int, cpu_s: int) -> dict[str, Any]:
    """Confine this process (see the module doc); returns what it got, ``unavailable`` naming what it could
    not get and why (the sandbox reports that once)."""
    report: dict[str, Any] = {"unavailable": []}
    root, caller_uid, caller_gid = os.geteuid() == 0, os.getuid(), os.getgid()
    # A network namespace of its own has no interface but a down loopback: no connection can leave it.
    # Root may create one; another user only inside a new user namespace, where the kernel allows it.
    error = _libc_call("unshare", CLONE_NEWNET if root else CLONE_NEWUSER | CLONE_NEWNET)
    report["network"] = "private namespace" if not error else "shared with the caller"
    if error:
        report["unavailable"].append(f"private network namespace (unshare: {error})")
    error = _libc_call("prctl", PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0)
    report["no_new_privs"] = not error
    if error:
        report["unavailable"].append(f"no_new_privs (prctl: {error})")
    pages = int(open("/proc/self/statm").read().split()[0])  # noqa: SIM115 - read once
    address_space = pages * os.sysconf("SC_PAGE_SIZE") + memory_mb * (1 << 20)
    highest = max(int(fd) for fd in os.listdir("/proc/self/fd"))
    limits = {
        "RLIMIT_AS": (address_space, address_space),
        "RLIMIT_FSIZE": (0, 0),
        "RLIMIT_CORE": (0, 0),
        "RLIMIT_NOFILE": (highest + 1, highest + 1),
        "RLIMIT_NPROC": (0, 0),
    }
    for name, value in limits.items():
        try:
            resource.setrlimit(getattr(resource, name), value)
        except (ValueError, OSError) as exc:
            report["unavailable"].append(f"{name} (setrlimit: {exc})")
    report["limits"] = {
        "address_space_mb": round(address_space / (1 << 20)),
        "file_size_bytes": 0,
        "open_files": highest + 1,
        "processes": 0,
        "cpu_s_per_request": cpu_s,
    }
    try:
        limit_cpu(cpu_s)
    except (ValueError, OSError) as exc:
        report["unavailable"].append(f"RLIMIT_CPU (setrlimit: {exc})")
    report["pid_and_mount_namespaces"] = "shared with the caller (no process can start, no file be written)"
    report["uid"], report["gid"] = (
        caller_uid,
        caller_gid,
    )  # a non-root caller's user (outside any user namespace)
    if root:
        try:
            nobody = pwd.getpwnam(UNPRIVILEGED_USER)
            os.setgroups([])
            os.setgid(nobody.pw_gid)
            os.setuid(nobody.pw_uid)
            report["uid"], report["gid"] = os.getuid(), os.getgid()
        except (KeyError, OSError) as exc:
            report["unavailable"].append(f"dropping root (user {UNPRIVILEGED_USER!r}: {exc})")
    try:
        report["user"] = pwd.getpwuid(report["uid"]).pw_name
    except KeyError:
        report["user"] = str(report["uid"])
    return report


def limit_cpu(cpu_s: int) -> None:
    """Allow ``cpu_s`` more CPU seconds (RLIMIT_CPU's soft limit: SIGXCPU ends the process past it)."""
    used = resource.getrusage(resource.RUSAGE_SELF)
    spent = math.ceil(used.ru_utime + used.ru_stime)
    _, hard = resource.getrlimit(resource.RLIMIT_CPU)
    soft = spent + cpu_s if hard == resource.RLIM_INFINITY else min(spent + cpu_s, hard)
    resource.setrlimit(resource.RLIMIT_CPU, (soft, hard))


def _one_line(exc: BaseException) -> str:
    text = str(exc).splitlines()[0] if str(exc) else ""
    return f"{type(exc).__name__}: {text}"[:200]


class Programs:
    """The loaded sub-task programs; every call of ``check`` or ``progress`` runs on a fresh module."""

    def __init__(self) -> None:
        self.codes: list[CodeType] = []
        self.builtins = {name: getattr(builtins, name) for name in BUILTINS}

    def _module(self, code: CodeType) -> tuple[Any, Any]:
        """A fresh copy of a program's module: its (check, progress) functions."""
        namespace: dict[str, Any] = {"__builtins__": dict(self.builtins), "np": np, "math": math}
        exec(code, namespace)
        return namespace["check"], namespace.get("progress")

    def load(self, sources: Any) -> None:
        if not isinstance(sources, list) or not sources or not all(isinstance(s, str) for s in sources):
            raise ProgramRejected("load needs a non-empty list of program sources")
        codes = []
        for i, source in enumerate(sources):
            try:
                checked = check_program(source)
            except ProgramRejected as exc:
                raise ProgramRejected(f"sub-task {i + 1}: {exc}") from None
            except RecursionError:  # the checker's limits keep this from happening; never die of it
                raise ProgramRejected(f"sub-task {i + 1}: nested too deeply for the worker") from None
            try:
                self._module(checked.code)
            except Exception as exc:
                raise ProgramRejected(f"sub-task {i + 1}: module code raised {_one_line(exc)}") from None
            codes.append(checked.code)
        self.codes = codes

    def evaluate(self, views: Any) -> list[list[list[Any]]]:
        if not isinstance(views, list):
            raise ProgramRejected("eval needs a list of views")
        return [self._row(ReadOnlyView(v)) for v in views]

    def _row(self, obs: ReadOnlyView) -> list[list[Any]]:
        row: list[list[Any]] = []
        for i, code in enumerate(self.codes):
            try:
                check, progress = self._module(code)  # nothing a call leaves behind reaches the next
                done = _as_bool(check(obs))
                amount = 1.0 if done else (_as_float(progress(obs)) if progress is not None else 0.0)
                row.append([done, amount, ""])
            except Exception as exc:  # the program's own failure: reported per view, the worker goes on
                row.append([False, 0.0, f"sub-task {i + 1}: {_one_line(exc)}"])
        return row


def _as_bool(value: Any) -> bool:
    if isinstance(value, np.ndarray) and value.size == 1:
        value = value.reshape(-1)[0]
    if isinstance(value, bool | np.bool_ | int | np.integer) or (
        isinstance(value, float | np.floating) and math.isfinite(value)
    ):
        return bool(value)
    raise TypeError(f"check returned {type(value).__name__}, expected a bool")


def _as_float(value: Any) -> float:
    if isinstance(value, np.ndarray) and value.size == 1:
        value = value.reshape(-1)[0]
    if isinstance(value, bool | np.bool_ | int | np.integer | float | np.floating):
        number = float(value)
        if math.isfinite(number):
            return min(max(number, 0.0), 1.0)
    raise TypeError(f"progress returned {type(value).__name__} {str(value)[:20]}, expected a finite number")


def main() -> None:
    memory_mb = int(sys.argv[1]) if len(sys.argv) > 1 else 512
    cpu_s = int(sys.argv[2]) if len(sys.argv) > 2 else 60
    protocol = os.fdopen(os.dup(1), "w", buffering=1)
    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, 1)
    os.dup2(devnull, 2)
    os.close(devnull)
    sys.stdout = sys.stderr = open(os.devnull, "w")  # noqa: SIM115 - for the life of the process
    warnings.simplefilter("ignore")
    np.seterr(all="ignore")
    sys.setrecursionlimit(WORKER_RECURSION_LIMIT)
    programs = Programs()
    report = isolate(memory_mb, cpu_s)
    protocol.write(json.dumps({"ready": True, "isolation": report}) + "\n")
    for line in sys.stdin:
        limit_cpu(cpu_s)
        try:
            request = json.loads(line)
            op = request.get("op") if isinstance(request, dict) else None
            if op == "load":
                programs.load(request.get("sources"))
                reply: dict[str, Any] = {"ok": True}
            elif op == "eval":
                reply = {"results": programs.evaluate(request.get("views"))}
            else:
                reply = {"error": f"unknown request {str(op)[:40]!r}"}
        except (ProgramRejected, ValueError, TypeError) as exc:
            reply = {"error": str(exc).splitlines()[0] if str(exc) else type(exc).__name__}
        except RecursionError:
            reply = {"error": "reward program stopped: it nested too deeply"}
        except MemoryError:
            reply = {"error": "reward program stopped: it ran out of memory"}
        protocol.write(json.dumps(reply) + "\n")


if __name__ == "__main__":
    main()
