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


def names_imported_by(node: ast.AST) -> list[str]:
    """The absolute module names an ``import``/``from ... import`` node names; [] for any other node."""
    if isinstance(node, ast.Import):
        return [alias.name for alias in node.names]
    if isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
        return [node.module]
    return []


def project_imports(path: Path) -> set[str]:
    found = set()
    for node in ast.walk(ast.parse(path.read_text(), filename=str(path))):
        found |= {name.split(".")[0] for name in names_imported_by(node)} & PROJECT
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


KEPT_INSIDE_FUNCTIONS: dict[str, dict[str, str]] = {
    "agents/encoders.py": {
        "agents.kernels": "keeps numba kernels out of `import agents.encoders`",
    },
    "buffer/factory.py": {
        "buffer.storage.zarr_store": "keeps zarr out of `import buffer.factory`",
    },
    "buffer/storage/metadata_schema.py": {
        "buffer.storage.jpeg_codec": "keeps zarr out of `import buffer.storage.metadata_schema`",
    },
    "buffer/storage/shard_format.py": {
        "buffer.storage.jpeg_codec": "keeps zarr out of `import buffer.storage.shard_format`",
    },
    "robot/frames.py": {
        "calibration.store": "keeps OpenCV, scipy out of `import robot.frames`",
    },
    "sim/factory.py": {
        "sim.so101.env": "keeps MuJoCo out of `import sim.factory`",
    },
    "vlmrl/actors/env_actor.py": {
        "agents.sac": "keeps torch out of `import vlmrl.actors.env_actor`",
    },
    "vlmrl/actors/robot_actor.py": {
        "agents.sac": "keeps torch out of `import vlmrl.actors.robot_actor`",
    },
    "vlmrl/api.py": {
        "sim.so101.tasks": "keeps MuJoCo out of `import vlmrl.api`",
        "vlmrl.deployment.robot_env": "keeps MuJoCo out of `import vlmrl.api`",
        "vlmrl.online.config": "keeps OpenCV, gymnasium, scipy out of `import vlmrl.api`",
        "vlmrl.pipelines": "keeps OpenCV, gymnasium, scipy out of `import vlmrl.api`",
    },
    "vlmrl/arm/finetune_report.py": {
        "vlmrl.deployment.policy_episodes": "keeps MuJoCo out of `import vlmrl.arm.finetune_report`",
    },
    "vlmrl/arm/robot_arms.py": {
        "vlmrl.actors.ray_source": "keeps Ray (optional: scale extra) out of `import vlmrl.arm.robot_arms`",
    },
    "vlmrl/cli.py": {
        "vlmrl.errors": "keeps OpenCV, gymnasium, scipy out of `import vlmrl.cli`",
    },
    "vlmrl/deployment/robot_env.py": {
        "sim.lerobot_twin": "keeps lerobot (optional: robot extra) out of `import vlmrl.deployment.robot_env`",
    },
    "vlmrl/evaluation/perturbation_grid.py": {
        "agents.export": "keeps torch out of `import vlmrl.evaluation.perturbation_grid`",
        "sim.so101.arm": "keeps MuJoCo out of `import vlmrl.evaluation.perturbation_grid`",
    },
    "vlmrl/evaluation/units.py": {
        "sim.units": "keeps MuJoCo out of `import vlmrl.evaluation.units`",
        "vlmrl.deployment.policy_episodes": "keeps MuJoCo out of `import vlmrl.evaluation.units`",
        "vlmrl.deployment.robot_env": "keeps MuJoCo out of `import vlmrl.evaluation.units`",
    },
    "vlmrl/offline/datasets.py": {
        "buffer.io": "keeps zarr out of `import vlmrl.offline.datasets`",
        "buffer.io.lerobot_format": "keeps zarr out of `import vlmrl.offline.datasets`",
    },
    "vlmrl/offline/run.py": {
        "buffer.io": "keeps zarr out of `import vlmrl.offline.run`",
        "vlmrl.deployment.robot_env": "keeps MuJoCo out of `import vlmrl.offline.run`",
    },
    "vlmrl/online/resume_check.py": {
        "vlmrl.loop.checkpoint": "keeps torch out of `import vlmrl.online.resume_check`",
        "vlmrl.offline": "keeps torch out of `import vlmrl.online.resume_check`",
    },
    "vlmrl/online/trainer.py": {
        "vlmrl.actors.ray_source": "keeps Ray (optional: scale extra) out of `import vlmrl.online.trainer`",
    },
    "vlmrl/pipelines/calibrate.py": {
        "sim.camera_match": "keeps MuJoCo out of `import vlmrl.pipelines.calibrate`",
    },
    "vlmrl/pipelines/deploy.py": {
        "agents.export": "keeps torch out of `import vlmrl.pipelines.deploy`",
    },
    "vlmrl/pipelines/evaluate.py": {
        "agents.export": "keeps torch out of `import vlmrl.pipelines.evaluate`",
        "vlmrl.deployment.robot_env": "keeps MuJoCo out of `import vlmrl.pipelines.evaluate`",
    },
    "vlmrl/pipelines/pretrain.py": {
        "agents.encoders": "keeps torch out of `import vlmrl.pipelines.pretrain`",
        "agents.pretrain": "keeps torch out of `import vlmrl.pipelines.pretrain`",
        "sim.so101.env": "keeps MuJoCo out of `import vlmrl.pipelines.pretrain`",
    },
    "vlmrl/pipelines/reward_program.py": {
        "sim.so101.tasks": "keeps MuJoCo out of `import vlmrl.pipelines.reward_program`",
        "vlmrl.scorers.car_reward": "keeps MuJoCo out of `import vlmrl.pipelines.reward_program`",
    },
    "vlmrl/pipelines/score.py": {
        "buffer.io": "keeps zarr out of `import vlmrl.pipelines.score`",
        "buffer.io.lerobot_format": "keeps zarr out of `import vlmrl.pipelines.score`",
    },
    "vlmrl/pipelines/serve.py": {
        "vlm.server": "keeps the web server out of `import vlmrl.pipelines.serve`",
    },
    "vlmrl/pipelines/train.py": {
        "vlmrl.loop.checkpoint": "keeps torch out of `import vlmrl.pipelines.train`",
        "vlmrl.offline": "keeps torch out of `import vlmrl.pipelines.train`",
        "vlmrl.online.offline_handover": "keeps torch out of `import vlmrl.pipelines.train`",
        "vlmrl.online.trainer": "keeps MuJoCo, torch, zarr out of `import vlmrl.pipelines.train`",
    },
    "vlmrl/scorers/evaluation.py": {
        "buffer.io": "keeps zarr out of `import vlmrl.scorers.evaluation`",
        "buffer.io.lerobot_format": "keeps zarr out of `import vlmrl.scorers.evaluation`",
    },
    "vlmrl/view/source.py": {
        "buffer.io": "keeps zarr out of `import vlmrl.view.source`",
        "buffer.storage.zarr_store": "keeps zarr out of `import vlmrl.view.source`",
    },
}
"""Project imports that stay inside functions, by file and imported module, with why: each would make its
module load, at import, a heavy package that the module does not load otherwise (measured on the module-level
import graph when the imports went to the top, issue 37), so ``vlmrl --help``, ``vlmrl <verb> --help`` and
``import vlmrl``/``import buffer`` stay light and Ray and lerobot stay optional. Every other project import
sits at the top of its module."""


def function_level_project_imports() -> dict[str, set[str]]:
    """Per file, the project modules it imports inside a function (as written: ``from M import x`` counts
    as M, ``import M`` as M)."""
    found: dict[str, set[str]] = {}
    for package in sorted(PROJECT):
        for path in sorted((ROOT / package).rglob("*.py")):
            functions = [
                node
                for node in ast.walk(ast.parse(path.read_text(), filename=str(path)))
                if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef)
            ]
            for function in functions:
                for node in ast.walk(function):
                    for name in names_imported_by(node):
                        if name.split(".")[0] in PROJECT:
                            found.setdefault(str(path.relative_to(ROOT)), set()).add(name)
    return found


def test_project_imports_sit_at_the_top_of_modules():
    """An import inside a function hides an arrow of the graph; only the ones of KEPT_INSIDE_FUNCTIONS may."""
    found = function_level_project_imports()
    hidden = sorted(
        f"{path} imports {name} inside a function"
        for path, names in found.items()
        for name in sorted(names - set(KEPT_INSIDE_FUNCTIONS.get(path, {})))
    )
    assert not hidden, (
        "move these imports to the top of the module, or, when that would load a heavy package (Ray, lerobot, "
        "MuJoCo, torch, zarr) the module does not load otherwise, list them with the reason in "
        "KEPT_INSIDE_FUNCTIONS: " + "; ".join(hidden)
    )
    stale = sorted(
        f"{path}: {name}"
        for path, names in KEPT_INSIDE_FUNCTIONS.items()
        for name in names
        if name not in found.get(path, set())
    )
    assert not stale, (
        "KEPT_INSIDE_FUNCTIONS lists imports that are no longer inside a function: " + "; ".join(stale)
    )
