"""Fuzz of the reward-program allow-list (issue #36, item 1): programs generated from the allowed grammar are
accepted, and the same program with one forbidden construct put in is refused in one line."""

from __future__ import annotations

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from vlm.reward_program import ProgramRejected, check_program

SCALARS = ("obs.gripper_open_frac", "obs.object_half_size_m")
VECTORS = ("obs.ee_pos_m", "obs.object_pos_m", "obs.object_minus_ee_m", "obs.goal_pos_m")
CONSTANTS = ("K0", "K1")
"""Module-level constants every generated program defines (``K0`` a number, ``K1`` a tuple of three)."""


@st.composite
def expressions(draw: st.DrawFn, names: tuple[str, ...], depth: int = 3) -> str:
    """A number-valued expression of the allowed grammar over ``names`` (locals and constants)."""
    leaves = [
        st.floats(-5, 5, allow_nan=False).map(lambda v: f"{v!r}"),
        st.integers(0, 9).map(str),
        st.sampled_from(SCALARS),
        st.tuples(st.sampled_from(VECTORS), st.integers(0, 2)).map(lambda p: f"{p[0]}[{p[1]}]"),
        st.sampled_from(VECTORS).map(lambda v: f"np.linalg.norm({v})"),
        st.integers(0, 2).map(lambda i: f"K1[{i}]"),
    ]
    if names:
        leaves.append(st.sampled_from(names))
    if depth == 0:
        return draw(st.one_of(leaves))
    sub = expressions(names, depth - 1)
    kind = draw(st.sampled_from(["leaf", "binop", "call", "ifexp", "np"]))
    if kind == "leaf":
        return draw(st.one_of(leaves))
    if kind == "binop":
        return f"({draw(sub)} {draw(st.sampled_from(['+', '-', '*', '/', '**', '%']))} {draw(sub)})"
    if kind == "call":
        name = draw(st.sampled_from(["abs", "min", "max", "float", "round"]))
        return (
            f"{name}({draw(sub)})"
            if name in ("abs", "float", "round")
            else f"{name}({draw(sub)}, {draw(sub)})"
        )
    if kind == "ifexp":
        return f"({draw(sub)} if {draw(conditions(names, depth - 1))} else {draw(sub)})"
    func = draw(st.sampled_from(["np.sqrt", "np.abs", "np.tanh", "math.tanh", "np.clip"]))
    inner = draw(sub)
    return f"np.clip({inner}, 0.0, K0)" if func == "np.clip" else f"{func}(abs({inner}))"


@st.composite
def conditions(draw: st.DrawFn, names: tuple[str, ...], depth: int = 2) -> str:
    left, right = draw(expressions(names, depth)), draw(expressions(names, depth))
    comparison = f"{left} {draw(st.sampled_from(['<', '<=', '>', '>=', '==', '!=']))} {right}"
    if draw(st.booleans()):
        return comparison
    return f"({comparison}) {draw(st.sampled_from(['and', 'or']))} not ({draw(expressions(names, 1))} > 0)"


@st.composite
def function_bodies(draw: st.DrawFn) -> list[str]:
    """Statements of ``check`` (lines, 4-space indents), ending in ``return <condition>``."""
    names: tuple[str, ...] = CONSTANTS[:1]
    lines: list[str] = []
    for i in range(draw(st.integers(0, 4))):
        kind = draw(st.sampled_from(["assign", "augassign", "if", "for"]))
        if kind == "augassign" and any(n.startswith("v") for n in names):
            target = draw(st.sampled_from([n for n in names if n.startswith("v")]))
            lines.append(f"    {target} += {draw(expressions(names, 2))}")
            continue
        name = f"v{i}"
        if kind == "if":
            lines += [
                f"    if {draw(conditions(names, 1))}:",
                f"        {name} = {draw(expressions(names, 2))}",
                "    else:",
                f"        {name} = {draw(expressions(names, 2))}",
            ]
        elif kind == "for":
            lines += [
                f"    {name} = 0.0",
                f"    for i in range({draw(st.integers(1, 1000))}):",
                f"        {name} += {draw(expressions(names, 1))}",
                "        if i > 3:",
                "            break",
            ]
        else:
            lines.append(f"    {name} = {draw(expressions(names, 2))}")
        names = (*names, name)
    lines.append(f"    return {draw(conditions(names, 2))}")
    return lines


FORBIDDEN_IN_FUNCTION = [
    "import os", "from os import path", "while True:\n    pass", "zz = [i for i in range(3)]",
    "zz = lambda: 1", "zz = obs.__class__", "_zz = 1.0", "global K0", "try:\n    pass\nexcept Exception:\n    pass",
    "with open('f') as f:\n    pass", "zz = 1\ndel zz", "zz = open('f')", "zz = eval('1')", "zz = exec('1')",
    "zz = getattr(obs, 'ee_pos_m')", "zz = '" + "a" * 40 + "'", "zz = np.save", "zz = np.load('x')",
    "zz = np.array([1.0]).max()", "zz = obs", "zz = obs.secret", "for i in range(5000):\n    pass",
    "n = 3\nfor i in range(n):\n    pass", "zz = check(obs)", "zz = progress(obs)", "assert True", "zz = {'a': 1}",
    "zz = {1, 2}", "zz: float = 1.0", "obs.ee_pos_m[0] = 1.0", "zz = f'{K0}'", "zz = np.clip(1.0, 0.0, 2.0, out=None)",
    "zz = (yy := 1.0)", "raise ValueError('x')", "print(1)", "np = 1", "zz = np.linalg.norm.__doc__",
    "zz = K1.count(1)", "zz = type(obs)", "zz = __builtins__", "zz = obs.ee_pos_m.sum()",
    "zz = np.abs(obs.ee_pos_m)\nzz[0] = 1.0", "zz = math.sqrt.__self__", "pass\nyield 1",
]  # fmt: skip
FORBIDDEN_AT_MODULE_LEVEL = [
    "import numpy", "LIST = [0]", "ARRAY = np.zeros(3)", "CALLED = abs(-1.0)", "K2 = (1.0, [2.0])",
    "def helper(obs):\n    return 1.0", "class C:\n    pass", "print(1)", "K0 = 3.0", "_HIDDEN = 1.0",
    "if True:\n    K3 = 1.0", "for i in range(3):\n    pass", "K4 = np.linalg", "K5 = obs", "K6 = check",
    "async def check2(obs):\n    return 1", "@staticmethod\ndef progress(obs):\n    return 1.0", "K7: float = 1.0",
    "K8 = K0 if K0 else [1]", "K9 = np.save", "del K0",
]  # fmt: skip


def program(module_lines: list[str], body: list[str]) -> str:
    return "\n".join([*module_lines, "def check(obs):", *body]) + "\n"


@st.composite
def allowed_programs(draw: st.DrawFn) -> tuple[list[str], list[str]]:
    k0 = draw(st.floats(0.01, 2.0, allow_nan=False))
    k1 = draw(st.tuples(*[st.floats(-1, 1, allow_nan=False)] * 3))
    module = [f"K0 = {k0!r}", f"K1 = ({k1[0]!r}, {k1[1]!r}, -{abs(k1[2])!r} * np.pi)"]
    return module, draw(function_bodies())


@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(allowed_programs(), st.data())
def test_allowed_programs_pass_and_one_forbidden_construct_is_refused(parts, data) -> None:
    module, body = parts
    check_program(program(module, body))  # the generator writes only what the allow-list allows
    if data.draw(st.booleans(), label="at module level"):
        bad = data.draw(st.sampled_from(FORBIDDEN_AT_MODULE_LEVEL), label="forbidden")
        where = data.draw(st.integers(0, len(module)), label="position")
        source = program([*module[:where], *bad.split("\n"), *module[where:]], body)
    else:
        bad = data.draw(st.sampled_from(FORBIDDEN_IN_FUNCTION), label="forbidden")
        # Before any line but an `else:` (a statement there would only make a syntax error).
        positions = [i for i, line in enumerate(body) if line.strip() != "else:"]
        where = data.draw(st.sampled_from(positions), label="position")
        indent = " " * (len(body[where]) - len(body[where].lstrip()))
        if body[where - 1].rstrip().endswith(":") if where else False:
            indent = " " * (len(body[where - 1]) - len(body[where - 1].lstrip()) + 4)
        source = program(module, [*body[:where], *(indent + line for line in bad.split("\n")), *body[where:]])
    try:
        check_program(source)
    except ProgramRejected as exc:  # by the allow-list, not by the parser: every construct is valid Python
        assert "\n" not in str(exc) and "syntax error" not in str(exc), (str(exc), source)
    else:
        raise AssertionError(f"accepted a program with {bad!r}:\n{source}")
