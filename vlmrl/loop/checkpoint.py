"""Training checkpoints: one torch file with every state needed for an exact resume, written atomically.

One format and one loader for every pipeline that learns (`vlmrl train`, `vlmrl finetune`): a resume
and a fine-tuning run starting from a sim run both read through ``load_checkpoint``.

Layout inside a run directory::

    checkpoint/state.pt      agent, buffer sampler/RNG, loop counters and RNG, history, resolved config
    checkpoint/buffer/       the in-RAM buffer's episodes (MemoryStorage.save); zarr buffers persist
                             themselves in the run directory and are reopened instead
"""

from __future__ import annotations

import dataclasses
import os
import pickle
import shutil
import types
from pathlib import Path
from typing import Any

import torch

from buffer import ReplayBuffer
from vlmrl.errors import ConfigError
from vlmrl.loop.learner import LoopState

CHECKPOINT_DIR = "checkpoint"
STATE_FILE = "state.pt"
BUFFER_DIR = "buffer"
LEGACY_FINETUNE_FILE = "checkpoint.pt"
"""The single-file fine-tuning checkpoint of versions before the shared format (still resumable)."""

MOVED_MODULES = {
    "vlmrl.scoring": "vlmrl.loop.scoring",
    "vlmrl.learner": "vlmrl.loop.learner",
    "vlmrl.sources": "vlmrl.loop.sources",
    "vlmrl.checkpoint": "vlmrl.loop.checkpoint",
    "vlmrl.assembly": "vlmrl.loop.assembly",
    "vlmrl.scorer_choice": "vlmrl.scorers.choice",
    "vlmrl.scorer_eval": "vlmrl.scorers.evaluation",
    "vlmrl.labels": "vlmrl.scorers.labels",
    "vlmrl.car_reward": "vlmrl.scorers.car_reward",
    "vlmrl.robot_env": "vlmrl.deployment.robot_env",
    "vlmrl.pipelines.common": "vlmrl.deployment.policy_episodes",
    "vlmrl.evaluation": "vlmrl.evaluation.episodes",
    "vlmrl.perturbation_grid": "vlmrl.evaluation.perturbation_grid",
    "vlmrl.unit_evaluation": "vlmrl.evaluation.units",
    "vlmrl.env_actor": "vlmrl.actors.env_actor",
    "vlmrl.actor_source": "vlmrl.actors.ray_source",
    "vlmrl.robot_actor": "vlmrl.actors.robot_actor",
    "vlmrl.datasets": "vlmrl.offline.datasets",
    "vlmrl.offline": "vlmrl.offline.run",
    "vlmrl.train_config": "vlmrl.online.config",
    "vlmrl.recipes": "vlmrl.online.recipes",
    "vlmrl.report": "vlmrl.online.report",
    "vlmrl.progress": "vlmrl.online.progress",
    "vlmrl.resume_check": "vlmrl.online.resume_check",
    "vlmrl.offline_handover": "vlmrl.online.offline_handover",
    "vlmrl.trainer": "vlmrl.online.trainer",
    "vlmrl.trained_run": "vlmrl.arm.trained_run",
    "vlmrl.robot_arms": "vlmrl.arm.robot_arms",
    "vlmrl.finetune_report": "vlmrl.arm.finetune_report",
}
"""Where the app layer's modules went when it moved into rooms (issue 37): a checkpoint pickles its config
and loop classes by module path, so files written before the move name the old paths."""


class MovedModulesUnpickler(pickle.Unpickler):
    """Unpickles classes pickled under a module path of ``MOVED_MODULES`` from where they live now."""

    def find_class(self, module: str, name: str) -> Any:
        return super().find_class(MOVED_MODULES.get(module, module), name)


def _load(file: Any, **kwargs: Any) -> Any:
    return MovedModulesUnpickler(file, **kwargs).load()


PICKLE_MODULE = types.SimpleNamespace(
    __name__="vlmrl_moved_modules", Unpickler=MovedModulesUnpickler, load=_load
)
"""``torch.load``'s ``pickle_module`` for our own files: pickle, reading old module paths too."""


def load_torch_file(path: Path) -> Any:
    """A torch file this project wrote (a checkpoint: numpy RNG states, config dataclasses), fully unpickled,
    with classes of the modules that moved (``MOVED_MODULES``) found at their new paths."""
    return torch.load(path, map_location="cpu", weights_only=False, pickle_module=PICKLE_MODULE)


def checkpoint_dir(run_dir: Path) -> Path:
    """Where a run's checkpoint lives."""
    return run_dir / CHECKPOINT_DIR


def save_checkpoint(run_dir: Path, state: dict[str, Any], buffer: ReplayBuffer) -> Path:
    """Write ``state`` (and the buffer contents when they live in RAM); returns the state file.

    The state file is replaced atomically (write, fsync, rename), so a crash while saving leaves the
    previous checkpoint intact.
    """
    directory = checkpoint_dir(run_dir)
    directory.mkdir(parents=True, exist_ok=True)
    save = getattr(buffer.storage, "save", None)
    if callable(save):
        tmp_buffer = directory / (BUFFER_DIR + ".tmp")
        shutil.rmtree(tmp_buffer, ignore_errors=True)
        save(tmp_buffer)
        old = directory / (BUFFER_DIR + ".old")
        shutil.rmtree(old, ignore_errors=True)
        if (directory / BUFFER_DIR).exists():
            os.replace(directory / BUFFER_DIR, old)
        os.replace(tmp_buffer, directory / BUFFER_DIR)
        shutil.rmtree(old, ignore_errors=True)
    path = directory / STATE_FILE
    tmp = directory / (STATE_FILE + ".tmp")
    with open(tmp, "wb") as f:
        torch.save(state, f)
        f.flush()
        os.fsync(f.fileno())
    os.replace(tmp, path)
    return path


def holds_checkpoint(run_dir: Path) -> bool:
    """Whether ``run_dir`` holds a checkpoint (of the shared format or a legacy fine-tuning one)."""
    return checkpoint_dir(run_dir).exists() or (run_dir / LEGACY_FINETUNE_FILE).exists()


def checkpoint_to_resume(
    run_dir: Path, resume: bool, flag: str, required: tuple[str, ...] = ()
) -> dict[str, Any] | None:
    """The checkpoint a run continues from (``resume``; a legacy fine-tuning file too), or None for a new
    run, which must not mix into a directory holding one (one-line ConfigError naming ``flag``)."""
    if not resume:
        if holds_checkpoint(run_dir):
            raise ConfigError(f"{flag} {run_dir} holds a run; continue it with --resume or choose another")
        return None
    return load_checkpoint(run_dir, flag="--resume", required=required, legacy=True)


def load_checkpoint(
    run_dir: Path, flag: str = "--resume", required: tuple[str, ...] = (), legacy: bool = False
) -> dict[str, Any]:
    """Read a run's checkpoint state (`vlmrl train` and `vlmrl finetune` write the same format), filling
    config fields added since it was written with their defaults (``fill_new_fields``).

    Args:
        run_dir: the run directory holding ``checkpoint/state.pt``.
        flag: the option that named ``run_dir``, for the error message.
        required: entries the caller needs (one-line ConfigError naming the first one missing).
        legacy: also read a fine-tuning run of the single-file format (``LEGACY_FINETUNE_FILE``) as the
            entries of the shared one (agent, buffer, loop, num_episodes_committed).

    Raises:
        ConfigError: naming the missing, unreadable or incomplete file.
    """
    path = checkpoint_dir(run_dir) / STATE_FILE
    old = run_dir / LEGACY_FINETUNE_FILE
    if legacy and old.is_file() and not checkpoint_dir(run_dir).exists():
        return from_legacy_finetune(read_state(old, run_dir, flag))
    if not path.is_file():
        raise ConfigError(
            f"{flag} {run_dir}: no checkpoint at {path} (is this a `vlmrl train` run directory?)"
        )
    state = read_state(path, run_dir, flag)
    for key in required:
        if key not in state:
            raise ConfigError(f"{flag} {run_dir}: {path} has no {key!r} entry")
    for value in state.values():  # config, train_config, loop
        fill_new_fields(value)
    return state


def read_state(path: Path, run_dir: Path, flag: str) -> dict[str, Any]:
    """The dict a checkpoint file holds; one-line ConfigError for an unreadable or foreign file."""
    try:
        # Our own file (it holds numpy RNG states and the config dataclass), so full unpickling is fine.
        state = load_torch_file(path)
    except Exception as exc:  # a truncated or foreign file: one line, not a traceback
        raise ConfigError(f"{flag} {run_dir}: cannot read {path}: {exc}") from None
    if not isinstance(state, dict):
        raise ConfigError(f"{flag} {run_dir}: {path} is not a checkpoint (no dict of entries)")
    return state


def from_legacy_finetune(old: dict[str, Any]) -> dict[str, Any]:
    """The entries of the shared format a legacy fine-tuning checkpoint gives (its loop resumes at the
    episode after its last)."""
    return {
        "agent": old["agent"],
        "buffer": old["buffer"],
        "loop": LoopState(episode=int(old["episode"]) + 1),
        "num_episodes_committed": old["num_episodes"],
    }


def fill_new_fields(obj: Any) -> None:
    """Give dataclasses unpickled from an older checkpoint the fields added since, at their defaults.

    Unpickling restores an instance's ``__dict__`` as saved, so a field added to a config later is simply
    missing (an AttributeError at first use). Fills them in place, recursively, frozen or not. A class
    whose new field's default would change behaviour names the old behaviour's value in its
    ``LEGACY_DEFAULTS`` class attribute, which wins here (e.g. ``TrainConfig.prior_share``: 0).
    """
    if not dataclasses.is_dataclass(obj) or isinstance(obj, type):
        return
    legacy = getattr(type(obj), "LEGACY_DEFAULTS", {})
    for f in dataclasses.fields(obj):
        if f.name not in vars(obj):
            if f.name in legacy:
                object.__setattr__(obj, f.name, legacy[f.name])
            elif f.default is not dataclasses.MISSING:
                object.__setattr__(obj, f.name, f.default)
            elif f.default_factory is not dataclasses.MISSING:
                object.__setattr__(obj, f.name, f.default_factory())
            else:
                continue  # a required field cannot be invented: leave the AttributeError to name it
        fill_new_fields(getattr(obj, f.name))


def memory_buffer_path(run_dir: Path) -> Path | None:
    """The saved in-RAM buffer of a checkpoint, if there is one."""
    path = checkpoint_dir(run_dir) / BUFFER_DIR
    return path if (path / "meta.json").exists() else None
