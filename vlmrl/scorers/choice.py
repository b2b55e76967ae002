"""Scorer choice and assembly: the backends every verb offers, and the one function that makes a ready scorer.

`vlmrl train`, `score`, `serve`, `evaluate`, `finetune`, `scorer fit` (its teacher) and `score --compare`
all parse a scorer from ``ScorerChoice`` (or ``parse_scorer``'s words) and open it with ``ready_scorer``:
the scorer built from its config, checked against the clips' camera and frame size, with the prompt from
the task's description, through a score calibration when the run has one. A new backend is added here
once (plus its config in ``vlm.config`` and ``vlm.factory``).
"""

from __future__ import annotations

import shlex
from collections.abc import Callable, Sequence
from dataclasses import make_dataclass
from pathlib import Path
from typing import Annotated, Any

import tyro

from vlm import Scorer, apply_calibration, make_scorer, scorer_prompt
from vlm.config import CLIPConfig, HFConfig, LearnedConfig, OpenAIConfig, OracleConfig
from vlmrl.errors import ConfigError

ScorerChoice = (
    Annotated[OracleConfig, tyro.conf.subcommand("oracle")]
    | Annotated[HFConfig, tyro.conf.subcommand("hf")]
    | Annotated[OpenAIConfig, tyro.conf.subcommand("openai")]
    | Annotated[CLIPConfig, tyro.conf.subcommand("clip")]
    | Annotated[LearnedConfig, tyro.conf.subcommand("learned")]
)
"""What tyro parses for a ``scorer`` field; ``ready_scorer`` builds the scorer from the parsed config."""


def parse_scorer(spec: str, flag: str = "--compare") -> Any:
    """A scorer config from the words that would follow ``vlmrl score EPISODES`` (``"scorer:oracle
    --scorer.noise 0.2"``); one-line ConfigError naming ``flag`` when they do not parse."""
    only = make_dataclass("Scorer", [("scorer", ScorerChoice)], frozen=True, kw_only=True)
    try:
        parsed = tyro.cli(
            tyro.conf.configure(tyro.conf.CascadeSubcommandArgs)(only),
            args=shlex.split(spec),
            console_outputs=False,
        )
    except SystemExit:
        raise ConfigError(
            f"{flag} {spec!r}: not a scorer (write it as after `vlmrl score EPISODES`, e.g. "
            "'scorer:oracle --scorer.noise 0.2' or 'scorer:learned --scorer.path student.pt')"
        ) from None
    return parsed.scorer


Source = tuple[str, Sequence[int]]
"""The clips' camera name (without ``pixels/``) and frame (height, width)."""
SourceOf = Source | Callable[[], Source]


def ready_scorer(
    config: Any,
    task_description: str = "",
    *,
    scorer: Scorer | None = None,
    prompt: str | None = None,
    source: SourceOf | None = None,
    calibration: str | Path | None = None,
) -> tuple[Scorer, str]:
    """A scorer ready to judge clips, and the prompt to ask it with.

    Args:
        config: the scorer's config (a ``ScorerChoice``); ignored when ``scorer`` is given.
        task_description: the task's sentence, the one source of prompts (``vlm.scorer_prompt``); empty for a
            scorer whose callers send their own prompts (``vlmrl serve``): the prompt is then "".
        scorer: an already built scorer to use instead (the Python API's custom scorer).
        prompt: the prompt to use instead of the one the task's description gives (``--prompt``).
        source: the clips' camera name and frame (height, width), or a function reading them (called only for
            a scorer that declares what it was fitted on: ``check_source``, ``scorer:learned``), which
            refuses another camera or frame size in one line.
        calibration: a score calibration file (``vlmrl score --fit-score-calibration``) the scores go
            through; it must be fitted for this scorer and prompt.

    Raises:
        VLMError: the model cannot be reached, the source or the calibration is refused (the scorer is
            closed first; it is this function's until it returns).
    """
    if scorer is None:
        scorer = make_scorer(config)  # fails fast, one line, if the model cannot be reached
        kind = config.kind
    else:
        kind = getattr(scorer, "kind", "custom")
    try:
        check_source = getattr(scorer, "check_source", None)
        if check_source is not None and source is not None:
            check_source(*(source() if callable(source) else source))
        prompt = prompt or (scorer_prompt(task_description, kind) if task_description else "")
        if calibration:
            scorer = apply_calibration(scorer, calibration, prompt)
    except BaseException:
        scorer.close()
        raise
    return scorer, prompt
