"""The reward-program allow-list at its edges (issue #36: names starting with ``_`` and the ``range()`` literal
bound were untested, and mutants dropping either check survived)."""

from __future__ import annotations

import pytest

from vlm.reward_program import ProgramRejected, check_program
from vlm.reward_program.checker import MAX_RANGE


@pytest.mark.parametrize(
    "source",
    [
        "def check(obs):\n    _d = 1.0\n    return _d > 0\n",  # a local: known, so only the '_' rule refuses it
        "_LIMIT = 0.1\ndef check(obs):\n    return obs.gripper_open_frac < _LIMIT\n",
        "def check(obs):\n    for _i in range(3):\n        pass\n    return True\n",
        "def check(obs):\n    return np.clip(obs.gripper_open_frac, 0, 1, _out=1)\n",
    ],
)
def test_names_starting_with_an_underscore_are_refused(source: str) -> None:
    with pytest.raises(ProgramRejected, match=r"^line \d+: names starting with '_' are not allowed \('_"):
        check_program(source)


def test_a_range_literal_above_the_bound_is_refused_and_the_bound_itself_is_allowed() -> None:
    loop = "def check(obs):\n    total = 0\n    for i in {}:\n        total += 1\n    return total > 0\n"
    check_program(loop.format(f"range({MAX_RANGE})"))
    check_program(loop.format(f"range(10, {MAX_RANGE})"))
    for bound in (f"range({MAX_RANGE + 1})", f"range(0, {10 * MAX_RANGE})", f"range({MAX_RANGE + 1}, 0)"):
        with pytest.raises(ProgramRejected, match=rf"^line 3: loop bound above {MAX_RANGE}$"):
            check_program(loop.format(bound))


# ------------------------------------------------------------------------------------------------
# Issue #36, item 1: programs cannot keep state, limits agree with the worker's, type parameters.

STATEFUL = """NEAR_M = 0.03
CALLS = [0]
def check(obs):
    calls = CALLS
    calls += [1]
    if len(CALLS) > 20000:
        return True
    return np.linalg.norm(obs.object_minus_ee_m) < NEAR_M
"""
"""The issue's program: it passed verification and returned True for every state after 20,000 calls."""


@pytest.mark.parametrize(
    ("constant", "what"),
    [
        ("CALLS = [0]", "List"),
        ("GOAL = np.array([0.2, 0.0, 0.1])", "Call"),
        ("GOAL = np.zeros(3)", "Call"),
        ("N = abs(-3)", "Call"),
        ("T = {1: 2}", "Dict"),
        ("S = (1.0, [2.0])", "List"),
        ("P = np.linalg", "np.linalg"),
    ],
)
def test_module_level_values_that_a_call_could_change_are_refused(constant: str, what: str) -> None:
    with pytest.raises(ProgramRejected, match=r"^line 1: module-level constants") as info:
        check_program(f"{constant}\ndef check(obs):\n    return True\n")
    assert what in str(info.value)


def test_the_issues_stateful_program_is_refused_and_immutable_constants_pass() -> None:
    with pytest.raises(ProgramRejected, match=r"^line 2: module-level constants must be numbers .*List"):
        check_program(STATEFUL)
    check_program(
        "NEAR_M = 0.03\nGOAL = (0.2, -0.1, 2 * NEAR_M)\nTURN = np.pi / 2\nBIG = math.inf\n"
        "def check(obs):\n    goal = np.array(GOAL)\n    goal += 1.0\n    return obs.ee_pos_m[0] < goal[0]\n"
    )


def test_every_call_runs_on_a_fresh_module_in_the_worker(monkeypatch) -> None:
    """The second wall: even a program the checker let keep state (here forced past it) cannot."""
    import ast

    from vlm.reward_program import worker
    from vlm.reward_program.checker import CheckedProgram

    def unchecked(source: str) -> CheckedProgram:
        code = compile(ast.parse(source), "<reward program>", "exec")
        return CheckedProgram(source, code, frozenset(), False)

    monkeypatch.setattr(worker, "check_program", unchecked)
    programs = worker.Programs()
    programs.load([STATEFUL.replace("20000", "2")])
    view = {"object_minus_ee_m": [0.5, 0.0, 0.0]}
    rows = programs.evaluate([view] * 5)
    assert rows == [[[False, 0.0, ""]]] * 5  # with one module for all calls, calls 3..5 returned True


def nested(depth: int) -> str:
    """``check`` returning an expression ``depth`` unary minus signs deep."""
    return "def check(obs):\n    return " + "-(" * depth + "obs.gripper_open_frac" + ")" * depth + " > 0\n"


def test_depth_limits_hold_in_the_caller_and_in_the_worker() -> None:
    from vlm.reward_program import Sandbox, SandboxError
    from vlm.reward_program.checker import MAX_DEPTH

    with pytest.raises(ProgramRejected, match=rf"^line 2: syntax nested deeper than {MAX_DEPTH} levels$"):
        check_program(nested(190))  # the issue's probe: it passed here and killed the worker at load
    deepest = max(d for d in range(MAX_DEPTH) if _accepted(nested(d)))
    assert deepest >= MAX_DEPTH - 8  # module, function, return, compare, ... then the minus signs
    with Sandbox() as sandbox:  # the worker (lower recursion limit) takes all the caller took
        sandbox.load([nested(deepest)])
        assert sandbox.evaluate([{"gripper_open_frac": 0.5}])[0][0].done == (deepest % 2 == 0)
        with pytest.raises(SandboxError, match=r"^sub-task 1: line 2: syntax nested deeper"):
            sandbox.load([nested(190)])
        sandbox.load(["def check(obs):\n    return True\n"])  # the same worker goes on
        assert sandbox.evaluate([{}])[0][0].done and sandbox.restarts == 0


def _accepted(source: str) -> bool:
    try:
        check_program(source)
    except ProgramRejected:
        return False
    return True


def test_type_parameters_are_refused() -> None:
    import ast
    import sys

    from vlm.reward_program.checker import _Checker

    source = "def check[T: int](obs):\n    return True\n"
    with pytest.raises(ProgramRejected, match=r"^line 1: "):  # 3.11: a syntax error; 3.12+: type parameters
        check_program(source)
    node = ast.parse("def check(obs):\n    return True\n").body[0]
    node.type_params = [ast.Name("T", ast.Load())]  # what 3.12's parser gives for [T: <code>]
    with pytest.raises(ProgramRejected, match=r"^line 1: check: type parameters are not allowed$"):
        _Checker().function(node)  # type: ignore[arg-type]
    if sys.version_info >= (3, 12):
        with pytest.raises(ProgramRejected, match="type parameters"):
            check_program(source)
