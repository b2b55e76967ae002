"""Replay storage and sampling: zarr or in-RAM episodes, uniform/PER/VLM-guided samplers."""
