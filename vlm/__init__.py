"""Clip scoring by vision-language models: backends, server, client, async worker, aux reward.

Public names: ``Clip``, the ``Scorer`` protocol, the backend configs, ``make_scorer`` and
``check_reachable``, the prompts helpers, the ``ScoringWorker`` with its ``ClipRequest``,
``aux_rewards``, ``fit_calibration``/``ScoreCalibration`` and ``apply_calibration``/``CalibratedScorer``.
Backends load torch/transformers/httpx only when built.
"""

from vlm.aux_reward import aux_rewards
from vlm.calibrated_scorer import CalibratedScorer, apply_calibration
from vlm.clip import Clip, as_clip, as_clips, subsample_indices
from vlm.config import (
    AuxRewardConfig,
    CLIPConfig,
    HFConfig,
    LearnedConfig,
    OpenAIConfig,
    OracleConfig,
    ScorerConfig,
    ServerConfig,
    WorkerConfig,
)
from vlm.errors import VLMError
from vlm.factory import make_scorer
from vlm.local_scorer import check_reachable
from vlm.prompts import make_prompt, prompt_hash, scorer_prompt
from vlm.score_calibration import ScoreCalibration, fit_calibration
from vlm.scorer import Scorer
from vlm.worker import ClipRequest, ScoringWorker

__all__ = [
    "AuxRewardConfig",
    "CLIPConfig",
    "CalibratedScorer",
    "Clip",
    "ClipRequest",
    "HFConfig",
    "LearnedConfig",
    "OpenAIConfig",
    "OracleConfig",
    "ScoreCalibration",
    "Scorer",
    "ScorerConfig",
    "ScoringWorker",
    "ServerConfig",
    "VLMError",
    "WorkerConfig",
    "apply_calibration",
    "as_clip",
    "as_clips",
    "aux_rewards",
    "check_reachable",
    "fit_calibration",
    "make_prompt",
    "make_scorer",
    "prompt_hash",
    "scorer_prompt",
    "subsample_indices",
]
