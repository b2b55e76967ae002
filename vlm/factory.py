"""Builds a scorer from its config, and checks beforehand that the model behind it can be reached."""

from __future__ import annotations

import importlib
from collections.abc import Callable

from vlm.config import CLIPConfig, HFConfig, LearnedConfig, OpenAIConfig, OracleConfig, ScorerConfig
from vlm.errors import VLMError
from vlm.scorer import Scorer

# Backend modules import torch/transformers/httpx; they load only when their backend is asked for.
_BACKENDS: dict[type, tuple[str, str]] = {
    HFConfig: ("vlm.backends.hf", "HFScorer"),
    OpenAIConfig: ("vlm.backends.openai_compat", "OpenAIScorer"),
    CLIPConfig: ("vlm.backends.contrastive", "CLIPScorer"),
    OracleConfig: ("vlm.backends.oracle", "OracleScorer"),
    LearnedConfig: ("vlm.backends.learned", "LearnedScorer"),
}


def _backend(cfg: ScorerConfig) -> Callable[[ScorerConfig], Scorer]:
    try:
        module_name, class_name = _BACKENDS[type(cfg)]
    except KeyError:
        raise VLMError(
            f"no scorer backend for config type {type(cfg).__name__}; use one of "
            f"{', '.join(c.__name__ for c in _BACKENDS)}"
        ) from None
    return getattr(importlib.import_module(module_name), class_name)


def check_reachable(cfg: ScorerConfig) -> None:
    """Raises a one-line VLMError saying how to fix it if the model or server cannot be reached.

    Local models: the path or hub id must resolve offline or online; servers: /v1/models must answer;
    a learned scorer: its file must exist and be one.
    Cheap compared with loading the model; ``make_scorer`` calls it first. A scorer in Ray actors
    (``cfg.ray.actors``) is checked by its actors where they run (the model may live on those machines only).
    """
    if cfg.ray.actors:
        return
    if isinstance(cfg, HFConfig | CLIPConfig):
        from vlm.backends.loading import check_model_source

        check_model_source(cfg.model, getattr(cfg, "revision", ""), kind=cfg.kind)
    elif isinstance(cfg, OpenAIConfig):
        from vlm.backends.openai_compat import check_server

        check_server(cfg)
    elif isinstance(cfg, LearnedConfig):
        from vlm.backends.learned import check_learned_file

        check_learned_file(cfg)


def make_scorer(cfg: ScorerConfig) -> Scorer:
    """Builds the backend chosen by the config's type; fails fast with a VLMError if it is unreachable.

    With ``cfg.ray.actors > 0`` the backend runs in that many Ray actors (``vlm.scorer_pool``), which
    check reachability where they run.
    """
    backend = _backend(cfg)
    if cfg.ray.actors:
        from vlm.scorer_pool import ScorerPool

        return ScorerPool(cfg)
    check_reachable(cfg)
    return backend(cfg)
