"""The reward-program sandbox: allow-list, worker limits, and a corpus of hostile or broken programs."""

import os

import numpy as np
import pytest

from vlm.reward_program import (
    ProgramRejected,
    Sandbox,
    SandboxConfig,
    SandboxError,
    check_program,
    dense_reward,
)
from vlm.reward_program.sandbox import SubtaskResult

VIEW = {
    "joint_pos_rad": [0.0, 0.1, 0.2, 0.3, 0.4],
    "gripper_open_frac": 0.5,
    "ee_pos_m": [0.2, 0.0, 0.1],
    "object_pos_m": [0.2, 0.0, 0.015],
    "object_half_size_m": 0.015,
    "goal_pos_m": [0.2, 0.0, 0.07],
    "object_minus_ee_m": [0.0, 0.0, -0.085],
}
GOOD = """
LIMIT = 0.1


def check(obs):
    d = np.linalg.norm(obs.object_minus_ee_m)
    return d < LIMIT and obs.gripper_open_frac <= 0.5


def progress(obs):
    total = 0.0
    for i in range(3):
        total += abs(obs.ee_pos_m[i])
    return min(total, 1.0)
"""

# Refused by the allow-list before anything runs: (source, a word the one-line reason contains).
REFUSED = [
    ("import os\ndef check(obs):\n    return True\n", "Import"),
    ("def check(obs):\n    import subprocess\n    return True\n", "Import"),
    ("def check(obs):\n    return ().__class__.__base__.__subclasses__()\n", "attribute"),
    ("def check(obs):\n    return obs.__class__\n", "_"),
    ("def check(obs):\n    return __import__('os').system('touch /tmp/pwned')\n", "attribute"),
    ("def check(obs):\n    return open('/tmp/pwned', 'w')\n", "open"),
    ("def check(obs):\n    return eval('1')\n", "eval"),
    ("def check(obs):\n    while True:\n        pass\n", "While"),
    ("def check(obs):\n    return np.save('/tmp/pwned.npy', obs.ee_pos_m)\n", "np.save"),
    ("def check(obs):\n    return np.load.__globals__\n", "attribute"),
    ("def check(obs):\n    return (lambda: 1)()\n", "Lambda"),
    ("def check(obs):\n    return [x for x in range(10)]\n", "ListComp"),
    ("def check(obs):\n    return check(obs)\n", "check"),
    ("def check(obs):\n    for i in range(10 ** 9):\n        pass\n", "range"),
    ("def check(obs):\n    try:\n        return 1\n    except Exception:\n        return 0\n", "Try"),
    ("def check(obs):\n    global np\n    return 1\n", "Global"),
    ("def check(obs):\n    return obs.ee_pos_m.max()\n", "attribute"),
    ("def check(obs):\n    return obs.secret_state\n", "no field"),
    ("def check(obs):\n    return getattr(obs, 'x')\n", "getattr"),
    ("def check(obs):\n    np = 1\n    return np\n", "reassigned"),
    ("def check(obs):\n    return f'{obs}'\n", "JoinedStr"),
    ("@staticmethod\ndef check(obs):\n    return 1\n", "decorators"),
    ("def check(obs, extra=1):\n    return 1\n", "one argument"),
    ("class X:\n    pass\ndef check(obs):\n    return 1\n", "ClassDef"),
    ("def check(obs:\n    return 1\n", "syntax"),
    ("def progress(obs):\n    return 1.0\n", "no `def check"),
    ("def check(obs) -> __import__('os'):\n    return ().__reduce_ex__(2)\n", "attribute"),
    ("def check(obs):\n    x = obs\n    return x\n", "obs only through"),
    ("def check(obs):\n    x = np.array([1.0])\n    return np.clip(obs.ee_pos_m, 0, 1, out=x)\n", "out="),
    ("X = np.array([1.0])\ndef check(obs):\n    return obs.ee_pos_m[0] < X[0]\n", "module-level constants"),
    ("X = [0.0] * 10 ** 10\ndef check(obs):\n    return True\n", "module-level constants"),
    ("x = " + "1+" * 1000 + "1\ndef check(obs):\n    return x\n", "nodes"),
    ("def check(obs):\n    return True\n" + "#" * 9000, "characters"),
]

# Allowed by the allow-list, then stopped or reported by the worker: (source, what the caller gets).
STOPPED = [
    ("def check(obs):\n    return 10 ** 10 ** 10 > 0\n", "timeout"),
    ("def check(obs):\n    x = 0\n    for i in range(1000):\n        for j in range(1000):\n"
     "            for k in range(1000):\n                x += 1\n    return x\n", "timeout"),
    ("def check(obs):\n    return len(np.array([1.0] * 10 ** 9)) > 0\n", "MemoryError"),
    ("def check(obs):\n    return np.linalg.norm(np.array([[1.0] * 100000] * 100000)) > 0\n", "stopped"),
    ("X = 10 ** 10 ** 10\ndef check(obs):\n    return True\n", "load"),
    ("def check(obs):\n    return 1 / 0\n", "ZeroDivisionError"),
    ("def check(obs):\n    return obs.ee_pos_m[7]\n", "IndexError"),
    ("def check(obs):\n    return 'yes'\n", "TypeError"),
    ("def check(obs):\n    return True\ndef progress(obs):\n    return float('nan')\n", "ok"),
    ("def check(obs):\n    return False\ndef progress(obs):\n    return float('nan')\n", "TypeError"),
    ("def check(obs):\n    return sum(range(10 ** 12)) > 0\n", "timeout"),
]  # fmt: skip


@pytest.fixture(scope="module")
def sandbox():
    with Sandbox(SandboxConfig(timeout_s=1.0, per_view_timeout_s=0.0, memory_mb=256)) as box:
        yield box


def test_good_program_runs_and_reports_fields(sandbox):
    checked = check_program(GOOD)
    assert checked.fields == {"object_minus_ee_m", "gripper_open_frac", "ee_pos_m"}
    assert checked.has_progress
    sandbox.load([GOOD])
    far = {**VIEW, "object_minus_ee_m": [0.3, 0.0, 0.0]}
    (near_row,), (far_row,) = sandbox.evaluate([VIEW, far])
    assert near_row == SubtaskResult(True, 1.0, "")
    assert far_row.done is False and far_row.progress == pytest.approx(0.3)


@pytest.mark.parametrize(("source", "word"), REFUSED, ids=[f"refused{i}" for i in range(len(REFUSED))])
def test_allow_list_refuses_with_one_line(source, word, sandbox):
    with pytest.raises(ProgramRejected) as info:
        check_program(source)
    message = str(info.value)
    assert "\n" not in message and word.lower() in message.lower(), message
    with pytest.raises(SandboxError) as info:  # the worker re-checks what it is sent
        sandbox.load([source])
    assert "\n" not in str(info.value)


def test_hostile_programs_are_stopped_and_the_caller_survives(sandbox):
    for source, expected in STOPPED:
        check_program(source)  # these pass the static check: the limits must hold
        if expected == "load":  # module code runs at load time: stopped there
            with pytest.raises(SandboxError, match=r"MemoryError|took longer than"):
                sandbox.load([source])
            continue
        sandbox.load([source])
        if expected == "stopped":  # a MemoryError or the deadline, whichever comes first
            try:
                (row,) = sandbox.evaluate([VIEW])
            except SandboxError as exc:
                assert "took longer than" in str(exc)
            else:
                assert not row[0].done and "Error" in row[0].error
            continue
        if expected == "timeout":
            with pytest.raises(SandboxError, match="took longer than"):
                sandbox.evaluate([VIEW])
            continue
        (row,) = sandbox.evaluate([VIEW])
        if expected == "ok":
            assert row[0].done and not row[0].error
        else:
            assert not row[0].done and expected in row[0].error and "\n" not in row[0].error, row[0].error
    # after all that, the same sandbox (a replaced worker when one was killed) still runs a good program
    sandbox.load([GOOD])
    assert sandbox.evaluate([VIEW])[0][0].done
    assert sandbox.restarts >= 3
    assert not any(name.startswith("pwned") for name in os.listdir("/tmp"))


def test_programs_never_run_in_the_callers_process(sandbox):
    sandbox.load(["def check(obs):\n    return np.sqrt(4.0) == 2.0\n"])
    assert sandbox.evaluate([VIEW])[0][0].done
    pid = sandbox._proc.pid
    assert pid != os.getpid()
    with open(f"/proc/{pid}/limits") as file:
        limits = file.read()
    file_size = next(line for line in limits.splitlines() if line.startswith("Max file size"))
    assert file_size.split()[3] == "0"  # the worker may not write a byte to any file
    address = next(line for line in limits.splitlines() if line.startswith("Max address space"))
    assert address.split()[3] != "unlimited"


def test_missing_view_field_is_an_error_not_a_crash(sandbox):
    sandbox.load(["def check(obs):\n    return obs.object_pos_m[2] > 0.05\n"])
    (row,) = sandbox.evaluate([{"joint_pos_rad": [0.0] * 5, "gripper_open_frac": 1.0}])
    assert "not available" in row[0].error


def test_dense_reward_is_stage_plus_progress():
    done, todo = SubtaskResult(True, 1.0), SubtaskResult(False, 0.5)
    assert dense_reward([done, todo, SubtaskResult(False, 0.9)]) == (pytest.approx(1.5 / 3), 1)
    # a later sub-task that holds while an earlier one does not counts for nothing (in order)
    assert dense_reward([todo, done, done]) == (pytest.approx(0.5 / 3), 0)
    assert dense_reward([done, done]) == (1.0, 2)
    assert np.isfinite(dense_reward([SubtaskResult(False, 0.0)])[0])
