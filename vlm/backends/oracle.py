"""The oracle scorer: the simulator's privileged progress/success signal, optionally with label noise.

It is an upper bound for experiments and a stand-in for a VLM in demos; its scorer id always starts with
``oracle`` so its scores are never mistaken for a VLM's.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from vlm.clip import Clip, as_clips
from vlm.config import OracleConfig
from vlm.errors import VLMError

_REDUCERS: dict[str, Callable[[np.ndarray], Any]] = {"last": lambda v: v[-1], "max": np.max, "mean": np.mean}


def oracle_scorer_id(cfg: OracleConfig) -> str:
    """``"oracle"``, or ``"oracle-noise0.2"`` with label noise, plus the signal when it is not progress."""
    parts = ["oracle"]
    if cfg.signal != "progress":
        parts.append(cfg.signal)
    if cfg.noise > 0:
        parts.append(f"noise{cfg.noise:g}")
    return "-".join(parts)


class OracleScorer:
    """Scores a clip by reducing its ``info[signal]`` array (see ``OracleConfig``); ignores the prompt."""

    def __init__(self, cfg: OracleConfig) -> None:
        if not 0.0 <= cfg.noise <= 1.0:
            raise VLMError(f"oracle noise must be a rate in [0, 1], got {cfg.noise}")
        if cfg.latency_s < 0:
            raise VLMError(f"oracle latency_s must be >= 0, got {cfg.latency_s}")
        self.cfg = cfg
        self.scorer_id = oracle_scorer_id(cfg)
        self.model_id = self.scorer_id
        self._rng = np.random.default_rng(cfg.seed)
        self._lock = threading.Lock()

    def score(self, clips: Sequence[Clip | np.ndarray], prompt: str) -> np.ndarray:
        """Returns float32 [N] in [0, 1]; raises VLMError for a clip without the privileged signal."""
        batch = as_clips(clips)
        reduce = _REDUCERS[self.cfg.reduce]
        scores = np.empty(len(batch), np.float32)
        for i, clip in enumerate(batch):
            if self.cfg.signal not in clip.info:
                raise VLMError(
                    f"the oracle scorer needs clip info[{self.cfg.signal!r}] (a privileged sim signal); "
                    f"clip {i} has {sorted(clip.info) or 'no info'}: score sim episodes, or use a VLM backend"
                )
            values = np.asarray(clip.info[self.cfg.signal], np.float64).reshape(clip.length, -1)[:, 0]
            scores[i] = float(np.clip(reduce(values), 0.0, 1.0))
        with self._lock:
            flips = self._rng.random(len(batch)) < self.cfg.noise
        scores[flips] = 1.0 - scores[flips]
        if self.cfg.latency_s:
            time.sleep(self.cfg.latency_s)
        return scores

    def close(self) -> None:
        """Nothing to release."""
