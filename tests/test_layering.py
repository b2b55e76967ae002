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


def vlmrl_module_imports(path: Path) -> set[str]:
    """The ``vlmrl.*`` modules a file imports anywhere in it (function-level imports included), by name."""
    found = set()
    for node in ast.walk(ast.parse(path.read_text(), filename=str(path))):
        if isinstance(node, ast.Import):
            found |= {alias.name for alias in node.names if alias.name.startswith("vlmrl.")}
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            if node.module == "vlmrl" or node.module == "vlmrl.pipelines":
                found |= {f"{node.module}.{alias.name}" for alias in node.names}
            elif node.module.startswith("vlmrl."):
                found.add(node.module)
    return found


def app_modules() -> dict[str, Path]:
    """vlmrl's own modules by dotted name (packages' __init__ included)."""
    modules = {}
    for path in sorted((ROOT / "vlmrl").rglob("*.py")):
        parts = path.relative_to(ROOT).with_suffix("").parts
        name = ".".join(parts[:-1] if parts[-1] == "__init__" else parts)
        modules[name] = path
    return modules


def test_the_app_layer_has_no_import_circle():
    """trainer <-> pipelines/train was one; a circle makes import order matter and hides a missing layer."""
    modules = app_modules()
    graph = {
        name: {m for m in vlmrl_module_imports(path) if m in modules and m != name}
        for name, path in modules.items()
    }
    graph["vlmrl"] = set()  # the package's lazy API names (``vlmrl.train`` ...) import on first use only
    circles = []

    def visit(name: str, trail: list[str]) -> None:
        if name in trail:
            circles.append(" -> ".join([*trail[trail.index(name) :], name]))
            return
        if name in done:
            return
        for nxt in sorted(graph[name]):
            visit(nxt, [*trail, name])
        done.add(name)

    done: set[str] = set()
    for name in sorted(graph):
        visit(name, [])
    assert not circles, (
        "import circles in vlmrl/ (move what both sides need into a module both import, as TrainConfig went "
        "to vlmrl/online/config.py): " + "; ".join(sorted(set(circles)))
    )


def test_pipelines_do_not_import_each_other():
    """A verb module (vlmrl/pipelines/<verb>.py) imports shared pieces from vlmrl/deployment/policy_episodes.py or
    from vlmrl/ modules, never from another verb's module."""
    pipelines = {name for name in app_modules() if name.startswith("vlmrl.pipelines.")}
    shared = {"vlmrl.deployment.policy_episodes"}
    offenders = []
    for name in sorted(pipelines - shared):
        bad = {m for m in vlmrl_module_imports(app_modules()[name]) if m in pipelines - shared - {name}}
        if bad:
            offenders.append(f"{name} imports {sorted(bad)}")
    assert not offenders, (
        "pipelines import each other (move the shared piece to vlmrl/deployment/policy_episodes.py or a vlmrl/ "
        "module): " + "; ".join(offenders)
    )
