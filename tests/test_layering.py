"""The package boundaries of docs/ARCHITECTURE.md, checked on the source: the arrows only point one way."""

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PROJECT = {"sim", "robot", "agents", "vlm", "buffer", "calibration", "vlmrl"}
ALLOWED = {
    "buffer": set(),
    "vlm": set(),
    "calibration": set(),
    "robot": {"calibration"},
    "sim": {"robot", "calibration"},
    "agents": {"buffer"},
}


def project_imports(path: Path) -> set[str]:
    found = set()
    for node in ast.walk(ast.parse(path.read_text(), filename=str(path))):
        if isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            names = [node.module]
        else:
            continue
        found |= {name.split(".")[0] for name in names} & PROJECT
    return found


@pytest.mark.parametrize("package", sorted(ALLOWED))
def test_package_imports_only_what_architecture_allows(package):
    offenders = []
    for path in sorted((ROOT / package).rglob("*.py")):
        bad = project_imports(path) - ALLOWED[package] - {package}
        if bad:
            offenders.append(f"{path.relative_to(ROOT)} imports {sorted(bad)}")
    assert not offenders, "; ".join(offenders)


def test_agents_use_only_batch_types_from_buffer():
    for path in sorted((ROOT / "agents").rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.ImportFrom) and node.module and node.module.startswith("buffer"):
                assert node.module in ("buffer.batch", "buffer.errors"), f"{path}: {node.module}"


def test_lerobot_is_imported_only_by_robot_and_the_twin():
    users = []
    for package in PROJECT:
        for path in sorted((ROOT / package).rglob("*.py")):
            if "lerobot" in {
                n.split(".")[0]
                for node in ast.walk(ast.parse(path.read_text()))
                if isinstance(node, ast.Import | ast.ImportFrom)
                for n in (
                    [a.name for a in node.names] if isinstance(node, ast.Import) else [node.module or ""]
                )
            }:
                users.append(str(path.relative_to(ROOT)))
    assert all(
        u.startswith("robot/") or u == "sim/lerobot_twin.py" or u.startswith("buffer/") for u in users
    ), users


def house_modules() -> dict[str, Path]:
    """Every module of the project packages by dotted name (packages' ``__init__`` included)."""
    modules = {}
    for package in sorted(PROJECT):
        for path in sorted((ROOT / package).rglob("*.py")):
            parts = path.relative_to(ROOT).with_suffix("").parts
            modules[".".join(parts[:-1] if parts[-1] == "__init__" else parts)] = path
    return modules


def imported_modules(path: Path, name: str, modules: dict[str, Path] | set[str]) -> dict[str, int]:
    """The project modules a file imports anywhere in it (function-level imports included), each with the
    line of its first import: ``from pkg import mod`` counts as ``pkg.mod`` when that is a module, else as
    ``pkg``; a relative import is resolved against the file's package."""
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    found: dict[str, int] = {}
    for node in ast.walk(ast.parse(path.read_text(), filename=str(path))):
        if isinstance(node, ast.Import):
            targets = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = package.split(".")[: len(package.split(".")) - node.level + 1]
                base = ".".join([*anchor, base] if base else anchor)
            targets = [f"{base}.{a.name}" if f"{base}.{a.name}" in modules else base for a in node.names]
        else:
            continue
        for target in targets:
            while target and target not in modules:  # ``import a.b.c`` of a package: its deepest module
                target = target.rpartition(".")[0]
            if target and target != name:
                found.setdefault(target, node.lineno)
    return found


def find_circles(graph: dict[str, set[str]]) -> list[str]:
    """Every import circle of ``graph`` (module -> modules it imports), each as ``a -> b -> a``."""
    circles: list[str] = []
    done: set[str] = set()

    def visit(name: str, trail: list[str]) -> None:
        if name in trail:
            circles.append(" -> ".join([*trail[trail.index(name) :], name]))
            return
        if name in done:
            return
        for nxt in sorted(graph.get(name, ())):
            visit(nxt, [*trail, name])
        done.add(name)

    for name in sorted(graph):
        visit(name, [])
    return sorted(set(circles))


def test_the_house_has_no_import_circle():
    """No module of any project package reaches itself through imports, function-level ones included (the
    buffer's jpeg_codec <-> shard_format and vlm's factory <-> scorer_pool were two): a circle makes import
    order matter and hides a missing layer. ``vlmrl/__init__.py``'s lazy API names are no imports."""
    modules = house_modules()
    graph = {name: set(imported_modules(path, name, modules)) for name, path in modules.items()}
    circles = find_circles(graph)
    assert not circles, "import circles (move what both sides need into a module both import): " + "; ".join(
        circles
    )


ROOMS = (
    "floor",
    "vlmrl.loop",
    "vlmrl.scorers",
    "vlmrl.view",
    "vlmrl.deployment",
    "vlmrl.evaluation",
    "vlmrl.actors",
    "vlmrl.offline",
    "vlmrl.online",
    "vlmrl.arm",
    "vlmrl.pipelines",
    "front",
)
"""The app layer's rooms, bottom to top (docs/ARCHITECTURE.md, "The app layer"): a module imports modules of
its own room and of rooms below it, never above."""
FLOOR = {"vlmrl.errors", "vlmrl.results", "vlmrl.config_ranges", "vlmrl.run_dir"}
FRONT = {"vlmrl", "vlmrl.__main__", "vlmrl.cli", "vlmrl.api"}


def room_of(module: str) -> str:
    """The room of a vlmrl module (a one-line failure for a module in no room)."""
    if module in FLOOR:
        return "floor"
    if module in FRONT:
        return "front"
    rooms = [room for room in ROOMS if module == room or module.startswith(room + ".")]
    assert rooms, (
        f"{module} is in no room: put it in a sub-package of ROOMS (or FLOOR/FRONT, tests/test_layering.py)"
    )
    return rooms[0]


def upward_imports(modules: dict[str, Path]) -> list[str]:
    """Each import of a vlmrl module by a module of a lower room, as ``file:line: a (room) imports b (room)``."""
    offenders = []
    for name, path in modules.items():
        if not (name == "vlmrl" or name.startswith("vlmrl.")):
            continue
        rank = ROOMS.index(room_of(name))
        for target, line in sorted(imported_modules(path, name, modules).items()):
            if target.startswith("vlmrl") and ROOMS.index(room_of(target)) > rank:
                offenders.append(
                    f"{path.relative_to(ROOT)}:{line}: {name} ({room_of(name)}) imports {target} ({room_of(target)})"
                )
    return offenders


def test_every_app_module_lives_in_a_room():
    for name in house_modules():
        if name == "vlmrl" or name.startswith("vlmrl."):
            room_of(name)


def test_nothing_in_the_app_layer_imports_upward():
    """A room imports only itself and the rooms below it, function-level imports included: what a lower room
    needs from a higher one belongs in the lower one (as ``policy_run_info`` went from pipelines/common.py
    to vlmrl/deployment/policy_episodes.py, and ``takes_td_errors`` to vlmrl/loop/replays.py)."""
    offenders = upward_imports(house_modules())
    assert not offenders, "upward imports: " + "; ".join(offenders)


def test_pipelines_do_not_import_each_other():
    """A verb module (vlmrl/pipelines/<verb>.py) imports shared pieces from the rooms below it, never from
    another verb's module."""
    modules = house_modules()
    pipelines = {name for name in modules if name.startswith("vlmrl.pipelines.")}
    offenders = []
    for name in sorted(pipelines):
        bad = set(imported_modules(modules[name], name, modules)) & (pipelines - {name})
        if bad:
            offenders.append(f"{name} imports {sorted(bad)}")
    assert not offenders, (
        "pipelines import each other (move the shared piece into a room below the verbs): "
        + "; ".join(offenders)
    )
