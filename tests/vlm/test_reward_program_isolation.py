"""The reward-program worker's isolation (issue #36, item 1): it ran as the caller's user (root here), in the
caller's network namespace, without no-new-privileges or a CPU-time limit. What it reports is checked
against /proc, not taken on trust; what the kernel refuses is named, once per process."""

from __future__ import annotations

import logging
import multiprocessing
import os
import pwd

from vlm.reward_program import Sandbox, isolation_lines
from vlm.reward_program import sandbox as sandbox_module


def proc_status(pid: int) -> dict[str, str]:
    lines = open(f"/proc/{pid}/status").read().splitlines()  # noqa: SIM115
    return {k: v.strip() for k, _, v in (line.partition(":") for line in lines)}


def proc_limits(pid: int) -> dict[str, tuple[str, str]]:
    """/proc/<pid>/limits: name -> (soft, hard)."""
    out = {}
    for line in open(f"/proc/{pid}/limits").read().splitlines()[1:]:  # noqa: SIM115
        name, values = line[:26].strip(), line[26:].split()
        out[name] = (values[0], values[1])
    return out


def test_the_worker_isolates_itself_and_reports_it_truly() -> None:
    with Sandbox() as sandbox:
        sandbox.start()
        report, pid = sandbox.isolation, sandbox.pid
        assert pid is not None
        status, limits = proc_status(pid), proc_limits(pid)
        real_uid = int(status["Uid"].split()[0])
        if os.geteuid() == 0:  # started as root: it is nobody now, for good (real, effective and saved)
            nobody = pwd.getpwnam("nobody").pw_uid
            assert status["Uid"].split() == [str(nobody)] * 4 and status["Gid"].split()[0] != "0"
            assert report["uid"] == nobody and report["user"] == "nobody"
            assert status["Groups"] == ""
        else:
            assert real_uid == os.getuid() == report["uid"]
        assert status["NoNewPrivs"] == "1" and report["no_new_privs"] is True
        assert limits["Max processes"] == ("0", "0") and limits["Max file size"] == ("0", "0")
        assert limits["Max core file size"] == ("0", "0")
        cpu_soft = limits["Max cpu time"][0]
        assert cpu_soft != "unlimited" and int(cpu_soft) <= sandbox.cfg.cpu_s + 5
        assert limits["Max address space"][0] != "unlimited"
        private = os.readlink(f"/proc/{pid}/ns/net") != os.readlink("/proc/self/ns/net")
        assert private == (report["network"] == "private namespace")
        assert private or any("network namespace" in u for u in report["unavailable"])
        text = "\n".join(isolation_lines(report))
        assert f"uid {report['uid']}" in text and "network: " in text and "processes 0" in text
        assert f"CPU {sandbox.cfg.cpu_s} s per request" in text
        # and it still does its job
        sandbox.load(["def check(obs):\n    return obs.gripper_open_frac < 0.5\n"])
        assert [
            row[0].done for row in sandbox.evaluate([{"gripper_open_frac": 0.1}, {"gripper_open_frac": 0.9}])
        ] == [
            True,
            False,
        ]


def _isolate_with_a_refusing_kernel(conn) -> None:
    from vlm.reward_program import worker

    worker._libc_call = lambda name, *args: "Operation not permitted"  # type: ignore[assignment]
    conn.send(worker.isolate(256, 5))


def test_what_the_kernel_refuses_is_named_in_the_report() -> None:
    context = multiprocessing.get_context("fork")
    receive, send = context.Pipe(duplex=False)
    child = context.Process(target=_isolate_with_a_refusing_kernel, args=(send,))
    child.start()
    report = receive.recv()
    child.join(30)
    assert report["network"] == "shared with the caller" and report["no_new_privs"] is False
    assert report["unavailable"][:2] == [
        "private network namespace (unshare: Operation not permitted)",
        "no_new_privs (prctl: Operation not permitted)",
    ]
    assert "not available here: private network namespace" in isolation_lines(report)[-1]


def test_unavailable_measures_are_logged_once_per_process(monkeypatch, caplog) -> None:
    monkeypatch.setattr(sandbox_module, "_REPORTED", set())
    missing = "private network namespace (unshare: Operation not permitted)"
    real_read = Sandbox._read

    def read(self, proc, timeout_s, doing):
        reply = real_read(self, proc, timeout_s, doing)
        if doing == "starting":
            reply["isolation"] = {**reply["isolation"], "unavailable": [missing]}
        return reply

    monkeypatch.setattr(Sandbox, "_read", read)
    with caplog.at_level(logging.WARNING, logger=sandbox_module.__name__):
        for _ in range(2):
            with Sandbox() as sandbox:
                sandbox.start()
                assert sandbox.isolation["unavailable"] == [missing]
    warnings = [r.getMessage() for r in caplog.records if r.name == sandbox_module.__name__]
    assert warnings == [f"reward-program sandbox: not available here: {missing}"]
