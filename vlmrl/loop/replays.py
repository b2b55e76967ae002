"""The replay modes of ``--replay`` (uniform, per, vlm, vlm_td), resolved in this one place: each mode's
sampler config, its settings field in the run's config, and whether its sampler takes TD errors or reads
clip scores. The learner's assembly reads ``takes_td_errors``; the run's config checks and resolves modes.
"""

from __future__ import annotations

from dataclasses import dataclass

from buffer.config import (
    PERSamplerConfig,
    PriorMixSamplerConfig,
    UniformSamplerConfig,
    VLMMixSamplerConfig,
    VLMTDSamplerConfig,
)


@dataclass(frozen=True)
class Replay:
    """What a replay mode means for the run."""

    sampler: type
    """The buffer sampler config class of the mode."""
    settings_field: str
    """The TrainConfig field holding the mode's sampler settings ("" when it has none)."""
    td_priorities: bool
    """The sampler takes the learner's TD errors (``ReplayBuffer.update_priorities`` after each update)."""
    needs_scores: bool
    """The sampler reads clip scores, so the run needs a camera to cut clips from."""


REPLAYS: dict[str, Replay] = {
    "uniform": Replay(UniformSamplerConfig, "", td_priorities=False, needs_scores=False),
    "per": Replay(PERSamplerConfig, "per_sampler", td_priorities=True, needs_scores=False),
    "vlm": Replay(VLMMixSamplerConfig, "vlm_sampler", td_priorities=False, needs_scores=True),
    "vlm_td": Replay(VLMTDSamplerConfig, "vlm_td_sampler", td_priorities=True, needs_scores=True),
}
"""The replay modes of ``--replay``, resolved in this one place."""


def takes_td_errors(sampler: object) -> bool:
    """Whether a buffer sampler config is one that takes the learner's TD errors (a prior mix: its online part)."""
    sampler = sampler.online if isinstance(sampler, PriorMixSamplerConfig) else sampler
    return any(isinstance(sampler, r.sampler) and r.td_priorities for r in REPLAYS.values())
