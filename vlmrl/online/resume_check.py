"""What `vlmrl train --resume RUN` accepts besides the run directory (issue #36, item 3).

A resumed run goes on with the config stored in its checkpoint. Options that would change what the run is
(``--sim.task lift`` on a reach run, ``--prior-data``, ``--buffer.gamma``) used to be ignored without a word;
they are now refused in one line naming them. Only `RESUME_OPTIONS` say how this invocation runs and may be
given. A run that has reached its ``total_steps`` is finished: the resume says so and writes nothing (no
checkpoint, TensorBoard file, report or policy).

Given options are found two ways: on the command line (`vlmrl train`: every option named in the arguments,
``check_args``) and, for the Python API, every field that differs from `TrainConfig`'s default.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

from vlmrl.config_ranges import check_ranges, option_name
from vlmrl.errors import ConfigError
from vlmrl.online.config import TrainConfig
from vlmrl.results import RunResult

RESUME_OPTIONS = frozenset({"resume", "progress", "stop_after_steps", "torch_threads", "actors", "ray"})
"""Fields a resume may set: how this invocation runs, not what the run learns (``actors`` and ``ray`` are
checked by ``vlmrl.pipelines.train.actors_on_resume``)."""


def given_paths(args: Sequence[str]) -> set[str]:
    """The dotted config fields named on a command line: ``--sim.task`` -> ``sim.task``, ``--agent.no-layer-norm``
    -> ``agent.layer_norm``, ``scorer:hf`` -> ``scorer``."""
    paths = set()
    for arg in args:
        if arg.startswith("--"):
            *parents, name = arg[2:].split("=", 1)[0].split(".")
            name = name.removeprefix("no-")
            paths.add(".".join([*parents, name]).replace("-", "_"))
        elif ":" in arg and not arg.startswith("-"):
            paths.add(arg.split(":", 1)[0].replace("-", "_"))
    return paths


def conflicts(given: TrainConfig, saved: TrainConfig, paths: Iterable[str] = ()) -> list[str]:
    """The options of ``given`` that a resume of the run ``saved`` cannot take: those differing from the stored
    run and either named in ``paths`` (the command line) or not at `TrainConfig`'s default (the Python API)."""
    found: list[str] = []
    _compare(given, saved, TrainConfig(), "", set(paths), found)
    return found


def _compare(given: Any, saved: Any, default: Any, prefix: str, paths: set[str], found: list[str]) -> None:
    for f in dataclasses.fields(given):
        path = prefix + f.name
        if not prefix and f.name in RESUME_OPTIONS:
            continue
        mine, theirs = getattr(given, f.name), getattr(saved, f.name, None)
        base = getattr(default, f.name, None)
        if (
            dataclasses.is_dataclass(mine)
            and type(mine) is type(theirs)
            and type(mine) is type(base)
            and path not in paths
        ):
            _compare(mine, theirs, base, path + ".", paths, found)
            continue
        if _same(mine, theirs) or not (path in paths or not _same(mine, base)):
            continue
        found.append(f"{_option(path, mine)} {_shown(mine)} (the run has {_shown(theirs)})")


def _same(a: Any, b: Any) -> bool:
    if isinstance(a, Path | str) and isinstance(b, Path | str):
        return str(a) == str(b)
    return bool(a == b)


def _option(path: str, value: Any) -> str:
    kind = getattr(value, "kind", None)
    if path == "scorer" and kind:
        return f"scorer:{kind}"
    return option_name(path)


def _shown(value: Any) -> str:
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return type(value).__name__
    if isinstance(value, tuple):
        return " ".join(str(v) for v in value) or "()"
    return str(value)


def check_args(cfg: TrainConfig, args: Sequence[str]) -> None:
    """`vlmrl train`'s command line: with ``--resume RUN``, ConfigError in one line naming every option given
    that conflicts with the stored run (an offline run's resume is checked by ``vlmrl.offline.run``)."""
    from vlmrl.loop.checkpoint import load_checkpoint
    from vlmrl.offline import run as offline

    check_ranges(cfg)  # a value no run can take is named as such first
    if cfg.resume and not offline.is_offline_run(Path(cfg.resume)) and cfg.offline is None:
        refuse_conflicts(cfg, load_checkpoint(Path(cfg.resume))["config"], given_paths(args))


def refuse_conflicts(cfg: TrainConfig, saved: TrainConfig, paths: Iterable[str] = ()) -> None:
    """ConfigError in one line naming the options of ``cfg`` that conflict with the stored run ``saved``."""
    found = conflicts(cfg, saved, paths)
    if found:
        raise ConfigError(
            f"--resume {cfg.resume}: a resumed run keeps its stored config; these options conflict with it: "
            f"{'; '.join(found)}. Resume without them, or start a new run"
        )


def resume_or_finished(cfg: TrainConfig) -> RunResult | None:
    """Before a resume writes anything: ConfigError for conflicting options; for a run that has reached its
    ``total_steps``, a line saying it is finished and the run's existing outputs (nothing is written);
    None when the run goes on."""
    from vlmrl.loop.checkpoint import load_checkpoint

    run_dir = Path(cfg.resume)
    state = load_checkpoint(run_dir, required=("config", "loop"))
    saved, loop = state["config"], state["loop"]
    refuse_conflicts(cfg, saved)
    if loop.step < saved.total_steps:
        return None
    print(
        f"vlmrl train: {run_dir} is finished ({loop.step:,} of {saved.total_steps:,} steps); nothing to resume, "
        "nothing written (start a new run to train longer)"
    )
    names = ("policy.pt", "best_policy.pt", "report.md", "checkpoint/state.pt")
    outputs = {Path(n).stem: run_dir / n for n in names if (run_dir / n).exists()}
    policy = run_dir / "policy.pt"
    return RunResult(
        run_dir,
        {"steps": loop.step, "episodes": loop.episode},
        policy if policy.exists() else None,
        outputs,
    )
