"""Run directories that failed commands leave as they were.

A command checks its inputs before it writes its run directory (``config.json`` last among the
checks). Some checks need the robot env, which already opens ``safety.jsonl`` in the directory, or an
episode store that opening creates; ``NewPaths`` removes what such a block created when a check
fails, so the previous run's files stay untouched and a new directory does not stay behind empty.
"""

from __future__ import annotations

import contextlib
import json
import shutil
from collections.abc import Iterator
from dataclasses import asdict
from pathlib import Path
from typing import Any


class NewPaths:
    """Paths in ``out_dir`` a command may create before its inputs are checked (``safety.jsonl``, an
    episode store, the directory itself), noted before it starts so a failure can remove them again.

        new = NewPaths(out_dir, ["safety.jsonl", "episodes.zarr"])
        with new.removed_on_failure():
            env = make_robot_env(cfg, out_dir)
        with env, new.removed_on_failure():
            ...checks that need the env...
        write_config(cfg, out_dir)
    """

    def __init__(self, out_dir: Path, names: list[str]):
        self.out_dir = out_dir
        self.names = list(names)
        self.dir_existed = out_dir.exists()
        self.existed = {n for n in names if (out_dir / n).exists()}

    @contextlib.contextmanager
    def removed_on_failure(self) -> Iterator[None]:
        """On an exception in the block, `remove` and re-raise."""
        try:
            yield
        except BaseException:
            self.remove()
            raise

    def remove(self) -> None:
        """Remove each noted path that did not exist before: a file only while empty, a store only while
        it holds no episode; then ``out_dir`` if it is new and left empty. Nothing else is touched."""
        for name in self.names:
            path = self.out_dir / name
            if name in self.existed or not path.exists():
                continue
            if path.is_file() and path.stat().st_size == 0:
                path.unlink()
            elif path.is_dir() and _holds_no_episode(path):
                shutil.rmtree(path)
        if not self.dir_existed and self.out_dir.is_dir() and not any(self.out_dir.iterdir()):
            self.out_dir.rmdir()


def _holds_no_episode(store: Path) -> bool:
    try:
        meta = json.loads((store / "zarr.json").read_text())
        return int(meta["attributes"]["commit"]["num_episodes"]) == 0
    except (OSError, ValueError, KeyError, TypeError):
        return not any(p.is_file() for p in store.rglob("*"))


def write_config(cfg: Any, out_dir: Path) -> None:
    """Write the resolved config as ``out_dir/config.json``."""
    out_dir.mkdir(parents=True, exist_ok=True)
    (out_dir / "config.json").write_text(json.dumps(asdict(cfg), indent=2, default=str) + "\n")
