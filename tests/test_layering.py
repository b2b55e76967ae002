"""The package boundaries of ARCHITECTURE.md, checked on the source: the arrows only point one way."""

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
