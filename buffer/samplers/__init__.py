"""Samplers by strategy: uniform, prioritised (PER, VLM x |TD|), VLM-guided mixture."""

from buffer.samplers.prioritized import PrioritizedSampler
from buffer.samplers.protocol import Sampler
from buffer.samplers.uniform import UniformSampler
from buffer.samplers.vlm_mix import VLMMixSampler

__all__ = ["PrioritizedSampler", "Sampler", "UniformSampler", "VLMMixSampler"]
