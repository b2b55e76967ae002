"""Builds a scorer from its config: in this process (``vlm.local_scorer``) or in Ray actors (``vlm.scorer_pool``)."""

from __future__ import annotations

from vlm.config import ScorerConfig
from vlm.local_scorer import backend_of, make_local_scorer
from vlm.scorer import Scorer
from vlm.scorer_pool import ScorerPool


def make_scorer(cfg: ScorerConfig) -> Scorer:
    """Builds the backend chosen by the config's type; fails fast with a VLMError if it is unreachable.

    With ``cfg.ray.actors > 0`` the backend runs in that many Ray actors (``vlm.scorer_pool``), which
    check reachability where they run.
    """
    backend_of(cfg)  # an unknown config type fails here, before any actor starts
    if cfg.ray.actors:
        return ScorerPool(cfg)
    return make_local_scorer(cfg)
