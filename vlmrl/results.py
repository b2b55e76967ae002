"""What the Python API's pipelines return (``vlmrl.train``, ``vlmrl.finetune``, ...)."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any


@dataclass(frozen=True)
class RunResult:
    """The outcome of one pipeline run.

    Attributes:
        run_dir: the directory the run wrote (run dir, out dir, or report dir).
        metrics: the run's headline figures (train: final evaluation and counters; finetune: the last
            episode's; deploy: per-episode results and loop metrics; score: the summary table).
        policy: the exported ``policy.pt`` when the run wrote or used one, else None.
        outputs: the files the run wrote, by name (report, curves, video, checkpoint, ...).
    """

    run_dir: Path
    metrics: dict[str, Any] = field(default_factory=dict)
    policy: Path | None = None
    outputs: dict[str, Path] = field(default_factory=dict)
