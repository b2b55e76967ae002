"""Static allow-list check of reward-program source (the first wall of the sandbox, issue #17).

A program is untrusted text from a model. It is parsed, never imported, and accepted only if every AST
node is on the allow-list: one-argument functions ``check(obs)`` (required) and ``progress(obs)``
(optional, no type parameters), module-level constants that cannot change (numbers, tuples of numbers,
``np.pi``: no lists, arrays or calls, so no call can leave state for the next one; the worker also runs
each call on a fresh copy of the module, issue #36), arithmetic, comparisons, ``if``,
``for i in range(<literal>)``,
calls to a fixed list of builtins and numpy/math functions, and attributes only of the view (``obs.<field>``)
or of that list (``np.linalg.norm``). No imports, no other attributes (so no ``__class__`` or
``__subclasses__`` chains), no names starting with ``_``, no ``while``, no comprehensions, lambdas, ``try``,
``with``, ``del``, ``global``, no strings beyond short literals, no calls of the program's own functions
(so no recursion). Size limits (characters, syntax nodes, nesting depth) are checked before anything
recursive runs, so the worker, whose recursion limit is ``WORKER_RECURSION_LIMIT``, accepts every program
the caller's check accepted (a 190-deep expression passed here and killed the worker, issue #36). Time and
memory limits are the worker's job (``sandbox.py``): they stop what a static check cannot
(``10 ** 10 ** 9``, huge arrays, nested loops).
"""

from __future__ import annotations

import ast
from dataclasses import dataclass
from types import CodeType

from vlm.reward_program.view import FIELDS_BY_NAME

MAX_SOURCE_CHARS = 8_000
MAX_NODES = 1_500
MAX_RANGE = 1_000
"""Largest literal bound of a ``for ... in range(...)`` loop."""
MAX_STR_CHARS = 32
MAX_DEPTH = 48
"""Deepest nesting of syntax nodes (module -> function -> statements -> expression), counted without
recursion before the recursive checks."""
WORKER_RECURSION_LIMIT = 4 * MAX_DEPTH + 100
"""Python recursion limit of the worker process: room for the checker's recursion at ``MAX_DEPTH`` (about
one frame per level) plus the worker's own frames."""
CONSTANT_ATTRIBUTES = {"np": ("pi",), "math": ("pi", "inf")}
"""Attributes a module-level constant may name (numbers, not functions)."""
FUNCTIONS = ("check", "progress")
"""check(obs) -> bool: the sub-task is complete. progress(obs) -> float in [0, 1] (optional): how far."""

BUILTINS = ("abs", "min", "max", "float", "int", "bool", "len", "round", "sum", "all", "any", "range")
NUMPY = {
    "np": (
        "abs", "absolute", "sqrt", "square", "exp", "log", "tanh", "sin", "cos", "tan", "arcsin", "arccos",
        "arctan", "arctan2", "hypot", "minimum", "maximum", "clip", "dot", "cross", "sum", "mean", "min",
        "max", "all", "any", "array", "asarray", "sign", "where", "isfinite", "floor", "ceil", "pi",
        "linalg.norm", "float64",
    ),
    "math": ("sqrt", "exp", "log", "tanh", "sin", "cos", "atan2", "hypot", "pi", "isfinite", "fabs", "inf"),
}  # fmt: skip
"""Module name -> attribute paths a program may use (functions and constants, no I/O)."""

_EXPR_NODES = (
    ast.BinOp, ast.UnaryOp, ast.BoolOp, ast.Compare, ast.IfExp, ast.Call, ast.Name, ast.Constant,
    ast.Attribute, ast.Subscript, ast.Slice, ast.Tuple, ast.List, ast.keyword,
    ast.Load, ast.Store,
    ast.Add, ast.Sub, ast.Mult, ast.Div, ast.FloorDiv, ast.Mod, ast.Pow, ast.USub, ast.UAdd, ast.Not,
    ast.And, ast.Or, ast.Eq, ast.NotEq, ast.Lt, ast.LtE, ast.Gt, ast.GtE, ast.MatMult,
)  # fmt: skip
_STMT_NODES = (
    ast.Assign,
    ast.AugAssign,
    ast.Return,
    ast.If,
    ast.For,
    ast.Pass,
    ast.Break,
    ast.Continue,
    ast.Expr,
)


class ProgramRejected(ValueError):
    """The source is not an allowed reward program; the message is one line."""


@dataclass(frozen=True)
class CheckedProgram:
    """Source that passed the allow-list, its compiled module code and what it reads."""

    source: str
    code: CodeType
    """The module's code object (annotations stripped), for ``exec`` in the worker only."""
    fields: frozenset[str]
    """View fields the program reads."""
    has_progress: bool


def _where(node: ast.AST) -> str:
    return f"line {getattr(node, 'lineno', '?')}"


def _dotted(node: ast.AST) -> str | None:
    """'np.linalg.norm' for nested attributes of a name, else None."""
    parts: list[str] = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    if isinstance(node, ast.Name):
        return ".".join([node.id, *reversed(parts)])
    return None


class _Checker:
    def __init__(self) -> None:
        self.fields: set[str] = set()
        self.constants: set[str] = set()
        self.functions: set[str] = set()

    def fail(self, node: ast.AST, message: str) -> ProgramRejected:
        return ProgramRejected(f"{_where(node)}: {message}")

    # ---------------------------------------------------------------------------------- module
    def module(self, tree: ast.Module) -> None:
        for i, node in enumerate(tree.body):
            if isinstance(node, ast.Expr) and isinstance(node.value, ast.Constant) and i == 0:
                if not isinstance(node.value.value, str):
                    raise self.fail(node, "only a docstring may stand alone at module level")
                continue
            if isinstance(node, ast.FunctionDef):
                self.function(node)
            elif isinstance(node, ast.Assign):
                target = node.targets[0] if len(node.targets) == 1 else None
                if not isinstance(target, ast.Name) or target.id in FUNCTIONS:
                    raise self.fail(node, "module level allows only `NAME = <number expression>` constants")
                self.name_ok(target, target.id)
                if target.id in ("obs", "np", "math", *BUILTINS) or target.id in self.constants:
                    raise self.fail(target, f"{target.id!r} cannot be reassigned")
                self.constant(node.value)
                self.constants.add(target.id)
            else:
                raise self.fail(node, f"{type(node).__name__} is not allowed at module level")
        if "check" not in self.functions:
            raise ProgramRejected("no `def check(obs):` function")

    def constant(self, node: ast.expr) -> None:
        """A module-level value that no call can change: numbers (and short strings), tuples of them,
        arithmetic on them, earlier constants, ``np.pi``. A list or an array (``np.array``) there would be
        shared by every call: ``calls += [1]`` on it kept state between calls (issue #36)."""
        allowed = (ast.Constant, ast.UnaryOp, ast.BinOp, ast.Tuple, ast.Name, ast.Attribute, ast.Load)
        operators = (ast.operator, ast.unaryop)
        for child in ast.walk(node):
            if isinstance(child, operators):
                continue
            if not isinstance(child, allowed):
                raise self.fail(
                    child,
                    f"module-level constants must be numbers or tuples of numbers ({type(child).__name__} "
                    "is not allowed there: a list, array or call would be shared by every call; build it "
                    "inside check)",
                )
            if isinstance(child, ast.Attribute):
                dotted = _dotted(child)
                head, _, rest = (dotted or "").partition(".")
                if rest not in CONSTANT_ATTRIBUTES.get(head, ()):
                    raise self.fail(
                        child,
                        f"module-level constants may name only np.pi, math.pi, math.inf, not {dotted!r}",
                    )
            elif isinstance(child, ast.Name):
                self.name_ok(child, child.id)
                if child.id not in self.constants and child.id not in CONSTANT_ATTRIBUTES:
                    raise self.fail(child, f"unknown name {child.id!r} in a module-level constant")
        self.expr(node, locals_=set(), param=None)

    def function(self, node: ast.FunctionDef) -> None:
        if getattr(node, "type_params", None):  # def check[T: <code>](obs) on Python 3.12+ (issue #36)
            raise self.fail(node, f"{node.name}: type parameters are not allowed")
        if node.name not in FUNCTIONS:
            raise self.fail(
                node, f"function {node.name!r} is not allowed; define only {' and '.join(FUNCTIONS)}"
            )
        if node.name in self.functions:
            raise self.fail(node, f"function {node.name!r} defined twice")
        args = node.args
        if (
            node.decorator_list
            or args.posonlyargs
            or args.kwonlyargs
            or args.vararg
            or args.kwarg
            or args.defaults
            or len(args.args) != 1
            or args.args[0].arg != "obs"
        ):
            raise self.fail(
                node, f"{node.name} must be `def {node.name}(obs):` (one argument, no decorators)"
            )
        self.functions.add(node.name)
        locals_: set[str] = set()
        for statement in node.body:
            self.statement(statement, locals_, depth=0)

    # ------------------------------------------------------------------------------- statements
    def statement(self, node: ast.stmt, locals_: set[str], depth: int) -> None:
        if not isinstance(node, _STMT_NODES):
            raise self.fail(node, f"{type(node).__name__} statements are not allowed")
        if depth > 8:
            raise self.fail(node, "blocks nest too deep")
        if isinstance(node, ast.Expr):
            if not (isinstance(node.value, ast.Constant) and isinstance(node.value.value, str)):
                raise self.fail(node, "an expression statement does nothing here (only docstrings)")
            return
        if isinstance(node, ast.Assign):
            for target in node.targets:
                self.assign_target(target, locals_)
            self.expr(node.value, locals_, "obs")
        elif isinstance(node, ast.AugAssign):
            if not isinstance(node.target, ast.Name) or node.target.id not in locals_:
                raise self.fail(node, "augmented assignment needs a local variable assigned before")
            self.expr(node.value, locals_, "obs")
        elif isinstance(node, ast.Return):
            if node.value is not None:
                self.expr(node.value, locals_, "obs")
        elif isinstance(node, ast.If):
            self.expr(node.test, locals_, "obs")
            for child in [*node.body, *node.orelse]:
                self.statement(child, locals_, depth + 1)
        elif isinstance(node, ast.For):
            self.bounded_range(node)
            self.assign_target(node.target, locals_)
            for child in [*node.body, *node.orelse]:
                self.statement(child, locals_, depth + 1)

    def assign_target(self, target: ast.expr, locals_: set[str]) -> None:
        names = target.elts if isinstance(target, ast.Tuple) else [target]
        for name in names:
            if not isinstance(name, ast.Name):
                raise self.fail(target, "assign only to plain local names (no attributes or items)")
            self.name_ok(name, name.id)
            if name.id in ("obs", "np", "math", *BUILTINS, *FUNCTIONS):
                raise self.fail(name, f"{name.id!r} cannot be reassigned")
            locals_.add(name.id)

    def bounded_range(self, node: ast.For) -> None:
        call = node.iter
        ok = (
            isinstance(call, ast.Call)
            and isinstance(call.func, ast.Name)
            and call.func.id == "range"
            and 1 <= len(call.args) <= 2
            and not call.keywords
            and all(isinstance(a, ast.Constant) and type(a.value) is int for a in call.args)
        )
        if not ok:
            raise self.fail(node, "loops must be `for i in range(<int literal>)` or range(<int>, <int>)")
        assert isinstance(call, ast.Call)
        bounds = [int(a.value) for a in call.args if isinstance(a, ast.Constant) and type(a.value) is int]
        if max(abs(b) for b in bounds) > MAX_RANGE:
            raise self.fail(node, f"loop bound above {MAX_RANGE}")

    # ------------------------------------------------------------------------------ expressions
    def name_ok(self, node: ast.AST, name: str) -> None:
        if name.startswith("_"):
            raise self.fail(node, f"names starting with '_' are not allowed ({name!r})")

    def expr(self, node: ast.expr, locals_: set[str], param: str | None) -> None:
        for child in ast.walk(node):
            if not isinstance(child, _EXPR_NODES):  # an operator has no line: name its expression's
                raise self.fail(
                    child if hasattr(child, "lineno") else node, f"{type(child).__name__} is not allowed"
                )
        self._expr(node, locals_, param)

    def _expr(self, node: ast.AST, locals_: set[str], param: str | None) -> None:
        if isinstance(node, ast.Constant):
            value = node.value
            if isinstance(value, str):
                if len(value) > MAX_STR_CHARS:
                    raise self.fail(node, f"string literals longer than {MAX_STR_CHARS} characters")
            elif value is not None and type(value) not in (int, float, bool):
                raise self.fail(node, f"constant of type {type(value).__name__} is not allowed")
            return
        if isinstance(node, ast.Name):
            self.name_ok(node, node.id)
            if isinstance(node.ctx, ast.Store):
                raise self.fail(node, "assignment inside an expression")
            known = node.id in locals_ or node.id in self.constants or node.id in BUILTINS
            if node.id == param:
                raise self.fail(node, "use obs only through its fields (obs.<field>)")
            if not known:
                raise self.fail(node, f"unknown name {node.id!r}")
            return
        if isinstance(node, ast.Attribute):
            dotted = _dotted(node)
            if dotted is None:
                raise self.fail(
                    node, f"attribute {node.attr!r} of a computed value (only obs.<field>, np.*, math.*)"
                )
            head, _, rest = dotted.partition(".")
            if head == param and param is not None:
                field, _, method = rest.partition(".")
                if method and field in FIELDS_BY_NAME:
                    raise self.fail(
                        node, f"attribute {method!r} of obs.{field} is not allowed (use np functions)"
                    )
                if rest not in FIELDS_BY_NAME:
                    raise self.fail(node, f"obs has no field {rest!r}; fields: {', '.join(FIELDS_BY_NAME)}")
                self.fields.add(rest)
                return
            if head in NUMPY and head not in locals_ and rest in NUMPY[head]:
                return
            raise self.fail(node, f"attribute {dotted!r} is not allowed")
        if isinstance(node, ast.Call):
            func = node.func
            if isinstance(func, ast.Name):
                if func.id not in BUILTINS or func.id in locals_:
                    raise self.fail(node, f"call of {func.id!r} is not allowed")
            elif isinstance(func, ast.Attribute):
                self._expr(func, locals_, param)
                if _dotted(func) and _dotted(func).split(".")[0] == param:  # type: ignore[union-attr]
                    raise self.fail(node, "obs fields are not callable")
            else:
                raise self.fail(node, "only named functions may be called")
            for arg in node.args:
                self._expr(arg, locals_, param)
            for keyword in node.keywords:
                if keyword.arg is None:
                    raise self.fail(node, "**kwargs is not allowed")
                self.name_ok(node, keyword.arg)
                if keyword.arg == "out":  # would write into an array in place
                    raise self.fail(node, "the out= keyword is not allowed")
                self._expr(keyword.value, locals_, param)
            return
        if isinstance(node, ast.Subscript) and isinstance(node.ctx, ast.Store):
            raise self.fail(node, "item assignment is not allowed")
        for child in ast.iter_child_nodes(node):
            self._expr(child, locals_, param)


def _deepest_line(tree: ast.AST) -> int | None:
    """The line of a node nested deeper than ``MAX_DEPTH`` (found without recursion), or None."""
    stack: list[tuple[ast.AST, int, int]] = [(tree, 1, 1)]
    while stack:
        node, depth, line = stack.pop()
        line = getattr(node, "lineno", line)
        if depth > MAX_DEPTH:
            return line
        stack.extend((child, depth + 1, line) for child in ast.iter_child_nodes(node))
    return None


def _strip_annotations(tree: ast.Module) -> None:
    """Annotations would be evaluated at definition time; they carry no meaning here, so drop them."""
    for node in ast.walk(tree):
        if isinstance(node, ast.FunctionDef):
            node.returns = None
            for arg in node.args.args:
                arg.annotation = None


def check_program(source: str) -> CheckedProgram:
    """Parse and check one sub-task's source against the allow-list; compile it (never run it).

    Raises:
        ProgramRejected: one line naming the line and the construct that is not allowed.
    """
    if not isinstance(source, str):
        raise ProgramRejected(f"program source must be text, got {type(source).__name__}")
    if len(source) > MAX_SOURCE_CHARS:
        raise ProgramRejected(f"program has {len(source)} characters, more than {MAX_SOURCE_CHARS}")
    try:
        tree = ast.parse(source, mode="exec")
    except SyntaxError as exc:
        raise ProgramRejected(f"line {exc.lineno}: syntax error: {exc.msg}") from None
    except (ValueError, MemoryError, RecursionError) as exc:
        raise ProgramRejected(f"cannot parse: {type(exc).__name__}") from None
    count = sum(1 for _ in ast.walk(tree))
    if count > MAX_NODES:
        raise ProgramRejected(f"program has {count} syntax nodes, more than {MAX_NODES}")
    deepest = _deepest_line(tree)
    if deepest is not None:
        raise ProgramRejected(f"line {deepest}: syntax nested deeper than {MAX_DEPTH} levels")
    _strip_annotations(tree)  # never evaluated, so they cannot smuggle names in
    checker = _Checker()
    checker.module(tree)
    code = compile(tree, "<reward program>", "exec")
    return CheckedProgram(source, code, frozenset(checker.fields), "progress" in checker.functions)
