"""Clip scoring by vision-language models: backends, server, client, async worker, aux reward.

Public names: ``Clip``, the ``Scorer`` protocol, the backend configs, ``make_scorer`` and
``check_reachable``, the prompts helpers, the ``ScoringWorker`` with its ``ClipRequest``,
``aux_rewards`` and ``fit_calibration``/``ScoreCalibration``.
Backends load torch/transformers/httpx only when built.
"""

from vlm.aux_reward import aux_rewards
from vlm.clip import Clip, as_clip, as_clips, subsample_indices
from vlm.config import (
    AuxRewardConfig,
    CLIPConfig,
    HFConfig,
    OpenAIConfig,
    OracleConfig,
    ScorerConfig,
    ServerConfig,
    WorkerConfig,
)
from vlm.errors import VLMError
from vlm.factory import check_reachable, make_scorer
from vlm.prompts import make_prompt, prompt_hash, task_prompt
from vlm.score_calibration import ScoreCalibration, fit_calibration
from vlm.scorer import Scorer
from vlm.worker import ClipRequest, ScoringWorker

__all__ = [
    "AuxRewardConfig",
    "CLIPConfig",
    "Clip",
    "ClipRequest",
    "HFConfig",
    "OpenAIConfig",
    "OracleConfig",
    "ScoreCalibration",
    "Scorer",
    "ScorerConfig",
    "ScoringWorker",
    "ServerConfig",
    "VLMError",
    "WorkerConfig",
    "as_clip",
    "as_clips",
    "aux_rewards",
    "check_reachable",
    "fit_calibration",
    "make_prompt",
    "make_scorer",
    "prompt_hash",
    "subsample_indices",
    "task_prompt",
]
