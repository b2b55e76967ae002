"""The scorer backends every verb offers as ``scorer:<name>`` subcommands, in one union.

`vlmrl train`, `score`, `serve`, `scorer fit` (its teacher) and `score --compare` all parse a scorer from
these, so a new backend is added here once (plus its config in ``vlm.config`` and ``vlm.factory``).
"""

from __future__ import annotations

from typing import Annotated

import tyro

from vlm.config import CLIPConfig, HFConfig, LearnedConfig, OpenAIConfig, OracleConfig

ScorerChoice = (
    Annotated[OracleConfig, tyro.conf.subcommand("oracle")]
    | Annotated[HFConfig, tyro.conf.subcommand("hf")]
    | Annotated[OpenAIConfig, tyro.conf.subcommand("openai")]
    | Annotated[CLIPConfig, tyro.conf.subcommand("clip")]
    | Annotated[LearnedConfig, tyro.conf.subcommand("learned")]
)
"""What tyro parses for a ``scorer`` field; ``make_scorer`` builds the scorer from the parsed config."""
