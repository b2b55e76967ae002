"""Replay storage and sampling: zarr or in-RAM episodes, uniform/PER/VLM-guided samplers.

    buf = make_buffer(BufferConfig(storage="zarr", sampler=PERSamplerConfig()), obs_spec, action_dim,
                      path="runs/x/buffer.zarr")          # reopens the store if it exists
    buf.add_step(obs, action, reward, terminated, truncated, info, next_obs)   # commits at episode end
    batch = buf.sample(256, keys=("state",))                # buffer.batch.Batch
    buf.update_priorities(batch.indices, td_errors)
    for ref in buf.new_clips(): frames, info = buf.read_clip(ref)    # for the scorer
    buf.set_scores(clip_ids, scores, scorer_id)

Roles: `storage/` (where rows live: memory.py, zarr_store.py and its fast frame I/O), `samplers/` (uniform,
prioritized incl. VLM x |TD|, vlm_mix), `replay_buffer.py` (composition, clips, batches), `io/`
(LeRobotDataset import/export). Layout and commit protocol: `buffer/storage/zarr_store.py`.
"""

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
