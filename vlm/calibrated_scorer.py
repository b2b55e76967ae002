"""A scorer whose scores go through a fitted score calibration (temperature scaling of the logit).

Every pipeline that scores clips (``vlmrl score``, ``vlmrl train``) wraps its scorer here when given
``--score-calibration PATH``; a file written by ``vlmrl score --fit-score-calibration`` for another
scorer or prompt is refused, since its temperature says nothing about these scores.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from pathlib import Path

import numpy as np

from vlm.clip import Clip
from vlm.errors import VLMError
from vlm.prompts import prompt_hash
from vlm.score_calibration import ScoreCalibration
from vlm.scorer import Scorer

_UNSAFE = re.compile(r"[^A-Za-z0-9._-]+")


class CalibratedScorer:
    """Scores of ``scorer`` mapped through ``calibration.apply`` (the calibrated P(success)).

    Its ``scorer_id`` is the raw scorer's id plus ``-cal<temperature>``, so calibrated scores are stored
    beside, never over, the raw ones. Asked about a prompt other than the calibration's, ``score``
    raises ``VLMError``.
    """

    def __init__(self, scorer: Scorer, calibration: ScoreCalibration) -> None:
        self.scorer = scorer
        self.calibration = calibration
        self.scorer_id = _UNSAFE.sub("_", f"{scorer.scorer_id}-cal{calibration.temperature:.4g}")
        self.model_id = scorer.model_id

    def score(self, clips: Sequence[Clip | np.ndarray], prompt: str) -> np.ndarray:
        """float32 [N] calibrated scores in [0, 1]."""
        if prompt_hash(prompt) != self.calibration.prompt_hash:
            raise VLMError(
                f"the score calibration of {self.scorer.scorer_id} was fitted for prompt hash "
                f"{self.calibration.prompt_hash}, not {prompt_hash(prompt)}"
            )
        return self.calibration.apply(self.scorer.score(clips, prompt))

    def close(self) -> None:
        """Closes the wrapped scorer."""
        self.scorer.close()


def apply_calibration(scorer: Scorer, path: str | Path, prompt: str) -> CalibratedScorer:
    """Wraps ``scorer`` in the calibration stored at ``path`` for questions asked with ``prompt``.

    Raises:
        VLMError: one line naming ``path`` when the file is missing or malformed (a temperature that is
            not positive included), or was fitted for another scorer id or another prompt (its
            ``scorer_id`` / ``prompt_hash``).
    """
    calibration = ScoreCalibration.load(path)
    if not (np.isfinite(calibration.temperature) and calibration.temperature > 0):
        raise VLMError(f"{path}: temperature must be a positive number, got {calibration.temperature}")
    if calibration.scorer_id != scorer.scorer_id:
        raise VLMError(
            f"{path} calibrates scorer {calibration.scorer_id!r}, not {scorer.scorer_id!r}; fit one for "
            "this scorer with vlmrl score --fit-score-calibration"
        )
    if calibration.prompt_hash != prompt_hash(prompt):
        raise VLMError(
            f"{path} was fitted for another prompt (hash {calibration.prompt_hash}, this prompt's is "
            f"{prompt_hash(prompt)}); fit one for this prompt with vlmrl score --fit-score-calibration"
        )
    return CalibratedScorer(scorer, calibration)
