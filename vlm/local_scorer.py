"""Builds a scorer in this process from its config (the backend table), after checking that the model behind
it can be reached. ``vlm.factory.make_scorer`` uses it directly or, with ``ray.actors``, through the actors of
``vlm.scorer_pool``, which build theirs with it too."""

from __future__ import annotations

import importlib
from collections.abc import Callable

from vlm.backends.learned import check_learned_file
from vlm.backends.loading import check_model_source
from vlm.backends.openai_compat import check_server
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


def backend_of(cfg: ScorerConfig) -> Callable[[ScorerConfig], Scorer]:
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
    Cheap compared with loading the model; ``make_local_scorer`` calls it first. A scorer in Ray actors
    (``cfg.ray.actors``) is checked by its actors where they run (the model may live on those machines only).
    """
    if cfg.ray.actors:
        return
    if isinstance(cfg, HFConfig | CLIPConfig):
        check_model_source(cfg.model, getattr(cfg, "revision", ""), kind=cfg.kind)
    elif isinstance(cfg, OpenAIConfig):
        check_server(cfg)
    elif isinstance(cfg, LearnedConfig):
        check_learned_file(cfg)


def make_local_scorer(cfg: ScorerConfig) -> Scorer:
    """The backend chosen by the config's type, built here; a VLMError first if its model is unreachable."""
    backend = backend_of(cfg)
    check_reachable(cfg)
    return backend(cfg)
