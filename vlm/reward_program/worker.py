"""The reward-program worker process (``python -m vlm.reward_program.worker MEMORY_MB``); see sandbox.py.

Reads one JSON request per line on stdin, writes one JSON reply per line on the original stdout (fd 1
is redirected to /dev/null, so nothing a program triggers can corrupt the protocol). Requests:
``{"op": "load", "sources": [str, ...]}`` and ``{"op": "eval", "views": [{field: number | [numbers]}, ...]}``.
"""

from __future__ import annotations

import builtins
import contextlib
import json
import math
import os
import resource
import sys
import warnings
from typing import Any

import numpy as np

from vlm.reward_program.checker import BUILTINS, ProgramRejected, check_program
from vlm.reward_program.view import FIELDS_BY_NAME


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


def _limit_resources(memory_mb: int) -> None:
    pages = int(open("/proc/self/statm").read().split()[0])  # noqa: SIM115 - read once
    used = pages * os.sysconf("SC_PAGE_SIZE")
    limit = used + memory_mb * (1 << 20)
    resource.setrlimit(resource.RLIMIT_AS, (limit, limit))
    resource.setrlimit(resource.RLIMIT_FSIZE, (0, 0))
    resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
    highest = max(int(fd) for fd in os.listdir("/proc/self/fd"))
    resource.setrlimit(resource.RLIMIT_NOFILE, (highest + 1, highest + 1))
    with contextlib.suppress(ValueError, OSError):
        resource.setrlimit(resource.RLIMIT_NPROC, (0, 0))


def _one_line(exc: BaseException) -> str:
    text = str(exc).splitlines()[0] if str(exc) else ""
    return f"{type(exc).__name__}: {text}"[:200]


class Programs:
    def __init__(self) -> None:
        self.functions: list[tuple[Any, Any]] = []
        self.builtins = {name: getattr(builtins, name) for name in BUILTINS}

    def load(self, sources: Any) -> None:
        if not isinstance(sources, list) or not sources or not all(isinstance(s, str) for s in sources):
            raise ProgramRejected("load needs a non-empty list of program sources")
        functions = []
        for i, source in enumerate(sources):
            try:
                checked = check_program(source)
            except ProgramRejected as exc:
                raise ProgramRejected(f"sub-task {i + 1}: {exc}") from None
            namespace: dict[str, Any] = {"__builtins__": dict(self.builtins), "np": np, "math": math}
            try:
                exec(checked.code, namespace)
            except Exception as exc:
                raise ProgramRejected(f"sub-task {i + 1}: module code raised {_one_line(exc)}") from None
            functions.append((namespace["check"], namespace.get("progress")))
        self.functions = functions

    def evaluate(self, views: Any) -> list[list[list[Any]]]:
        if not isinstance(views, list):
            raise ProgramRejected("eval needs a list of views")
        return [self._row(ReadOnlyView(v)) for v in views]

    def _row(self, obs: ReadOnlyView) -> list[list[Any]]:
        row: list[list[Any]] = []
        for i, (check, progress) in enumerate(self.functions):
            try:
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
    protocol = os.fdopen(os.dup(1), "w", buffering=1)
    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, 1)
    os.dup2(devnull, 2)
    os.close(devnull)
    sys.stdout = sys.stderr = open(os.devnull, "w")  # noqa: SIM115 - for the life of the process
    warnings.simplefilter("ignore")
    np.seterr(all="ignore")
    sys.setrecursionlimit(200)
    programs = Programs()
    _limit_resources(memory_mb)
    protocol.write('{"ready": true}\n')
    for line in sys.stdin:
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
        except MemoryError:
            reply = {"error": "reward program stopped: it ran out of memory"}
        protocol.write(json.dumps(reply) + "\n")


if __name__ == "__main__":
    main()
