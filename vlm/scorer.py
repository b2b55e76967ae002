"""The Scorer protocol every backend implements, and the scorer-id rules shared by them."""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Protocol, runtime_checkable

import numpy as np

from vlm.clip import Clip


@runtime_checkable
class Scorer(Protocol):
    """Judges clips against a yes/no prompt.

    ``score`` blocks until the whole batch is scored and is safe to call from several threads (backends
    serialise access to their model). It raises ``VLMError`` for malformed clips, an unreachable or
    misbehaving server, or a model that cannot answer yes/no.

    Attributes:
        scorer_id: short, path-safe label stored with every score (``"oracle-noise0.2"``,
            ``"hf-SmolVLM-256M-Instruct"``); scores from different scorers never mix in storage.
        model_id: the model behind it (hub id, local path, or served model name).
    """

    scorer_id: str
    model_id: str

    def score(self, clips: Sequence[Clip | np.ndarray], prompt: str) -> np.ndarray:
        """Returns float32 [N] scores in [0, 1], one per clip: the probability the answer is "yes"."""
        ...

    def close(self) -> None:
        """Releases the model, threads and connections; the scorer is unusable afterwards."""
        ...


_UNSAFE = re.compile(r"[^A-Za-z0-9._-]+")


def make_scorer_id(kind: str, model: str = "") -> str:
    """Builds a path-safe scorer id: ``kind`` plus the last path component of ``model``."""
    name = model.rstrip("/").rsplit("/", 1)[-1] if model else ""
    name = _UNSAFE.sub("_", name).strip("_")
    return f"{kind}-{name}" if name else kind
