"""Replay storage and sampling: zarr or in-RAM episodes, uniform/PER/VLM-guided samplers."""

from buffer.batch import Batch
from buffer.clips import ClipRef
from buffer.config import (
    BufferConfig,
    PERSamplerConfig,
    SamplerConfig,
    UniformSamplerConfig,
    VLMMixSamplerConfig,
    VLMTDSamplerConfig,
)
from buffer.errors import BufferError
from buffer.factory import make_buffer, make_sampler, make_storage
from buffer.replay_buffer import ReplayBuffer

__all__ = [
    "Batch",
    "BufferConfig",
    "BufferError",
    "ClipRef",
    "PERSamplerConfig",
    "ReplayBuffer",
    "SamplerConfig",
    "UniformSamplerConfig",
    "VLMMixSamplerConfig",
    "VLMTDSamplerConfig",
    "make_buffer",
    "make_sampler",
    "make_storage",
]
