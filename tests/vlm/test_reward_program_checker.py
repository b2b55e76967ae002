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


# ------------------------------------------------------------------------------------------------
# The allow-list rule by rule, each with the exact one-line refusal (survivors of the reward_checker
# mutation group: a mutant that drops or loosens a rule, or names the wrong line, fails here).

BODY = "def check(obs):\n    {}\n    return True\n"


@pytest.mark.parametrize(
    ("source", "message"),
    [
        # the signature: exactly `def check(obs):`
        *(
            (
                f"{head}\n    return True\n",
                "line {}: check must be `def check(obs):` (one argument, no decorators)",
            )
            for head in (
                "def check(obs, /):",
                "def check(*, obs):",
                "def check(*obs):",
                "def check(**obs):",
                "def check(obs=1):",
                "def check(obs, extra):",
                "def check(state):",
            )
        ),
        ("@staticmethod\ndef check(obs):\n    return True\n", "line 2: check must be `def check(obs):`"),
        # module level: a docstring first, then constants and the functions
        ("1\ndef check(obs):\n    return True\n", "line 1: only a docstring may stand alone at module level"),
        ('"doc"\n"more"\ndef check(obs):\n    return True\n', "line 2: Expr is not allowed at module level"),
        ("A = B = 1\ndef check(obs):\n    return True\n", "line 1: module level allows only `NAME = <number"),
        ("check = 1\ndef check(obs):\n    return True\n", "line 1: module level allows only `NAME = <number"),
        ("obs.x = 1\ndef check(obs):\n    return True\n", "line 1: module level allows only `NAME = <number"),
        *(
            (f"{name} = 1\ndef check(obs):\n    return True\n", f"line 1: {name!r} cannot be reassigned")
            for name in ("obs", "np", "math", "abs")
        ),
        ("A = 1\nA = 2\ndef check(obs):\n    return True\n", "line 2: 'A' cannot be reassigned"),
        ("A = np.e\ndef check(obs):\n    return True\n", "line 1: module-level constants may name only"),
        ("A = os.sep\ndef check(obs):\n    return True\n", "line 1: module-level constants may name only"),
        ("A = -B\ndef check(obs):\n    return True\n", "line 1: unknown name 'B' in a module-level constant"),
        (
            "A = _B\ndef check(obs):\n    return True\n",
            "line 1: names starting with '_' are not allowed ('_B')",
        ),
        # statements in a function
        *(
            (BODY.format(f"{name} = 1"), f"line 2: {name!r} cannot be reassigned")
            for name in ("obs", "np", "math")
        ),
        (BODY.format("a, np = 1, 2"), "line 2: 'np' cannot be reassigned"),
        (BODY.format("1"), "line 2: an expression statement does nothing here (only docstrings)"),
        (BODY.format("obs.gripper_open_frac"), "line 2: an expression statement does nothing here"),
        (BODY.format("t += 1"), "line 2: augmented assignment needs a local variable assigned before"),
        (BODY.format("for i in range(0, 10, 2):\n        pass"), "line 2: loops must be `for i in range("),
        # expressions
        ("def check(obs):\n    return undefined > 0\n", "line 2: unknown name 'undefined'"),
        ("def check(obs):\n    return _x > 0\n", "line 2: names starting with '_' are not allowed ('_x')"),
        ("def check(obs):\n    return 1 | 2\n", "line 2: BitOr is not allowed"),
        ("def check(obs):\n    return b'x' == b'x'\n", "line 2: constant of type bytes is not allowed"),
        ("def check(obs):\n    return obs.gripper_open_frac()\n", "line 2: obs fields are not callable"),
        (
            "def check(obs):\n    return obs.ee_pos_m.sum() > 0\n",
            "line 2: attribute 'sum' of obs.ee_pos_m is not allowed (use np functions)",
        ),
        (
            "def check(obs):\n    return np.sum(obs.ee_pos_m, axis=obs) > 0\n",
            "line 2: use obs only through its fields",
        ),
        ("def check(obs):\n    return np.sum(obs.ee_pos_m, axis=n) > 0\n", "line 2: unknown name 'n'"),
    ],
)
def test_each_rule_refuses_with_one_line_naming_the_line(source: str, message: str) -> None:
    message = message.format(1)
    with pytest.raises(ProgramRejected) as info:
        check_program(source)
    assert str(info.value).startswith(message) and "\n" not in str(info.value)


@pytest.mark.parametrize(
    "source",
    [
        '"""Docstring."""\nNEAR = 0.05\ndef check(obs):\n    return obs.gripper_open_frac < NEAR\n',
        'def check(obs):\n    """Docstring."""\n    return True\n',
        f'LABEL = "{"x" * 32}"\ndef check(obs):\n    return True\n',
        "def check(obs):\n    return np.sum(obs.ee_pos_m, axis=0) > 0\n",
    ],
)
def test_what_the_rules_allow_passes(source: str) -> None:
    checked = check_program(source)
    assert checked.source == source and checked.code.co_filename == "<reward program>"
    namespace: dict = {"np": __import__("numpy"), "math": __import__("math")}
    exec(checked.code, namespace)  # the compiled module defines check (the worker runs it, not this test)
    assert callable(namespace["check"])


def test_string_literals_end_at_their_limit() -> None:
    from vlm.reward_program.checker import MAX_STR_CHARS

    check_program(f'LABEL = "{"x" * MAX_STR_CHARS}"\ndef check(obs):\n    return True\n')
    with pytest.raises(
        ProgramRejected, match=rf"^line 1: string literals longer than {MAX_STR_CHARS} characters"
    ):
        check_program(f'LABEL = "{"x" * (MAX_STR_CHARS + 1)}"\ndef check(obs):\n    return True\n')


def blocks(levels: int, loop: bool) -> str:
    lines = ["def check(obs):"]
    for k in range(levels):
        lines.append(
            "    " * (k + 1) + (f"for i{k} in range(1):" if loop else "if obs.gripper_open_frac > 0:")
        )
    lines.append("    " * (levels + 1) + "return True")
    return "\n".join(lines) + "\n    return False\n"


@pytest.mark.parametrize("loop", [False, True])
def test_blocks_nest_eight_deep_and_no_deeper(loop: bool) -> None:
    check_program(blocks(8, loop))
    with pytest.raises(ProgramRejected, match=r"^line 11: blocks nest too deep$"):
        check_program(blocks(9, loop))


def test_the_source_size_node_count_and_nesting_limits_are_inclusive() -> None:
    import ast

    from vlm.reward_program.checker import MAX_DEPTH, MAX_NODES, MAX_SOURCE_CHARS

    def nodes(source: str) -> int:
        return sum(1 for _ in ast.walk(ast.parse(source)))

    def depth(node: ast.AST) -> int:
        return 1 + max((depth(child) for child in ast.iter_child_nodes(node)), default=0)

    base = "def check(obs):\n    return True\n"
    check_program(base + "#" * (MAX_SOURCE_CHARS - len(base)))
    with pytest.raises(ProgramRejected, match=rf"^program has {MAX_SOURCE_CHARS + 1} characters"):
        check_program(base + "#" * (MAX_SOURCE_CHARS + 1 - len(base)))
    # Constants add 4 nodes each (Assign, Name, Store, Constant), `pass` 1: every count near the limit.
    seen = set()
    for constants in range((MAX_NODES - nodes(base)) // 4 - 1, (MAX_NODES - nodes(base)) // 4 + 2):
        for passes in range(4):
            source = "".join(f"C{i} = 1\n" for i in range(constants)) + "def check(obs):\n"
            source += "    pass\n" * passes + "    return True\n"
            count = nodes(source)
            seen.add(count)
            if count <= MAX_NODES:
                check_program(source)
            else:
                with pytest.raises(ProgramRejected, match=rf"^program has {count} syntax nodes"):
                    check_program(source)
    assert {MAX_NODES, MAX_NODES + 1} <= seen
    depths = {depth(ast.parse(nested(d))): d for d in range(MAX_DEPTH)}
    check_program(nested(depths[MAX_DEPTH]))
    with pytest.raises(ProgramRejected, match=rf"^line 2: syntax nested deeper than {MAX_DEPTH} levels$"):
        check_program(nested(depths[MAX_DEPTH] + 1))
