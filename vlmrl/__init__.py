"""vlmrl application layer: the CLI, the verbs (``vlmrl.pipelines``), and the rooms they assemble (``loop``,
``scorers``, ``view``, ``deployment``, ``evaluation``, ``actors``, ``offline``, ``online``, ``arm``; in that
order bottom to top, docs/ARCHITECTURE.md), and the Python API.

``import vlmrl`` gives the pipelines as functions (``vlmrl.train``, ``finetune``, ``score``, ``record``,
``deploy``; see ``vlmrl.api``) and the config dataclasses they take (``vlmrl.TrainConfig``,
``FinetuneConfig``, ``ScoreConfig``, ``RecordConfig``, ``DeployConfig``). They load on first use, so
importing the package stays cheap (the CLI reads ``__version__``).
"""

from __future__ import annotations

import importlib
from typing import Any

__version__ = "0.1.0"

_LAZY: dict[str, tuple[str, str]] = {
    "train": ("vlmrl.api", "train"),
    "finetune": ("vlmrl.api", "finetune"),
    "score": ("vlmrl.api", "score"),
    "record": ("vlmrl.api", "record"),
    "deploy": ("vlmrl.api", "deploy"),
    "RunResult": ("vlmrl.results", "RunResult"),
    "TrainConfig": ("vlmrl.online.config", "TrainConfig"),
    "FinetuneConfig": ("vlmrl.pipelines.finetune", "Config"),
    "ScoreConfig": ("vlmrl.pipelines.score", "Config"),
    "RecordConfig": ("vlmrl.pipelines.record", "Config"),
    "DeployConfig": ("vlmrl.pipelines.deploy", "Config"),
}

__all__ = ["__version__", *_LAZY]


def __getattr__(name: str) -> Any:
    """The API names of ``_LAZY``, imported on first use (PEP 562)."""
    if name not in _LAZY:
        raise AttributeError(f"module 'vlmrl' has no attribute {name!r}")
    module, attr = _LAZY[name]
    return getattr(importlib.import_module(module), attr)
