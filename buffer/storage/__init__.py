"""Storages by strategy: in-RAM numpy rings, zarr v3 stores (local or fsspec)."""

from buffer.storage.memory import MemoryStorage
from buffer.storage.protocol import Storage

__all__ = ["MemoryStorage", "Storage"]
