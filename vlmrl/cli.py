"""`vlmrl <verb> [options]`: one verb per pipeline, each a dataclass config parsed by tyro.

Every pipeline module under ``vlmrl.pipelines`` exposes ``Config`` (a dataclass, or a union of them for
verbs with sub-modes) and ``main(cfg) -> int | None``; tests call ``main(cfg)`` directly. A module may also
expose ``check_args(cfg, args)``, which sees the options as given (`vlmrl train --resume` refuses those that
conflict with the stored run, even when they equal a default).
"""

from __future__ import annotations

import importlib
import sys
from collections.abc import Sequence
from typing import NoReturn

from vlmrl import __version__

VERBS: dict[str, tuple[str, str]] = {
    "train": ("vlmrl.pipelines.train", "train a SAC policy in simulation with VLM-guided replay"),
    "pretrain": (
        "vlmrl.pipelines.pretrain",
        "pretrain the pixel encoder on the twin's (randomised) frames to read the state",
    ),
    "finetune": ("vlmrl.pipelines.finetune", "fine-tune a sim-trained policy on a robot (or its twin)"),
    "deploy": ("vlmrl.pipelines.deploy", "run an exported policy at a fixed rate through the safety layer"),
    "evaluate": (
        "vlmrl.pipelines.evaluate",
        "success of an exported policy in the twin under held-out perturbations (per factor)",
    ),
    "record": (
        "vlmrl.pipelines.record",
        "record episodes (teleoperation or a policy) to zarr / LeRobotDataset",
    ),
    "score": ("vlmrl.pipelines.score", "score recorded episodes with a VLM and write a report"),
    "view": (
        "vlmrl.pipelines.view",
        "replay episodes, frames and scores in a browser; label them for scorer fit",
    ),
    "scorer": ("vlmrl.pipelines.scorer", "fit a learned clip scorer on recorded episodes (scorer fit)"),
    "serve": ("vlmrl.pipelines.serve", "serve a local VLM behind an OpenAI-compatible API plus /v1/score"),
    "calibrate": ("vlmrl.pipelines.calibrate", "calibrate cameras, hand-eye, and match the sim camera"),
    "bench": ("vlmrl.pipelines.bench", "run the benchmarks and print their ratios"),
    "reward-program": (
        "vlmrl.pipelines.reward_program",
        "generate (with a VLM) and verify Code-as-Reward programs for the twin",
    ),
}


def usage() -> str:
    width = max(len(v) for v in VERBS)
    lines = [
        "usage: vlmrl <verb> [options]    (vlmrl <verb> --help for a verb's options)",
        "",
        "Robot-arm RL where a vision-language model judges what the robot did.",
        "",
        "verbs:",
    ]
    lines += [f"  {verb:<{width}}  {summary}" for verb, (_, summary) in VERBS.items()]
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> int:
    """Run one verb; returns the process exit code (2: usage or not built, 1: a user error)."""
    import tyro

    from vlmrl.errors import USER_ERRORS

    args = list(sys.argv[1:] if argv is None else argv)
    if not args or args[0] in ("-h", "--help", "help"):
        print(usage())
        return 0 if args else 2
    if args[0] == "--version":
        print(f"vlmrl {__version__}")
        return 0
    verb, rest = args[0], args[1:]
    if verb not in VERBS:
        print(f"vlmrl: unknown verb {verb!r}; choose one of: {', '.join(VERBS)}", file=sys.stderr)
        return 2
    module_name, summary = VERBS[verb]
    try:
        module = importlib.import_module(module_name)
    except ModuleNotFoundError as exc:
        if exc.name != module_name:
            raise
        print(f"vlmrl {verb}: not built yet ({summary}).", file=sys.stderr)
        return 2
    # A verb may parse against other defaults (``cli_default``: `vlmrl train --recipe` makes a recipe's
    # settings the defaults, so options given beside it win).
    try:
        wants_help = "--help" in rest or "-h" in rest
        default = module.cli_default(rest) if hasattr(module, "cli_default") and not wants_help else None
        given = {"default": default} if default is not None else {}
        cfg = tyro.cli(module.Config, args=rest, prog=f"vlmrl {verb}", description=module.__doc__, **given)
    except USER_ERRORS as exc:
        print(f"vlmrl {verb}: error: {exc}", file=sys.stderr)
        return 1
    check_args = getattr(module, "check_args", None)  # the command line against stored state (train --resume)
    try:
        if check_args is not None:
            check_args(cfg, rest)
        code = module.main(cfg)
    except USER_ERRORS as exc:
        print(f"vlmrl {verb}: error: {exc}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        print(f"vlmrl {verb}: interrupted", file=sys.stderr)
        return 130
    return int(code or 0)


def entrypoint() -> NoReturn:
    sys.exit(main())
